"""Where ``kubectl harness`` runs, who runs it, and what it may do to a task.

kubectl's plugins get no help from kubectl: this module reads the kubeconfig as kubectl does
(``--kubeconfig``, ``--context``, the context's namespace), asks the API server who the user is
(SelfSubjectReview), and makes the gateway's checks before anything is written:

- a task the participant is not on is reported as not found, exactly as a missing one;
- a watcher may not complete or cancel a task;
- a decision on a call that waits for approval is one its sender may give
  (:func:`~tiny_harness.core.approval.refuse_decision`: the call waits, the policy admits the
  sender, an edit is allowed, the call is not decided otherwise already);
- nothing is sent to a task that has ended.

The operator makes the same checks again when it takes a message; these ones only let the user
hear a refusal at once, as an error, instead of as a note in the transcript. Waiting for the
operator's answer (a reply, a command's reply, its record of a decision, the outcome of a
control) is polling: messages and turn records are separate objects, and a command's reply
changes no task status.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, TypeVar, cast

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import ValidationError

from tiny_harness.core.approval import (
    DecisionRequest,
    PendingApproval,
    Verdict,
    refuse_decision,
    undecided,
)
from tiny_harness.core.errors import (
    HarnessError,
    NotPermittedError,
    TaskNotFoundError,
    TerminalTaskError,
)
from tiny_harness.core.history import (
    TranscriptMessage,
    transcript,
)
from tiny_harness.core.inbox import Control, MessagePart, MessageSpec, refuse_parts
from tiny_harness.core.reply_ids import (
    answer_outside_turn,
    command_reply_id,
    refusal_id,
    refusal_of,
    turn_has_ended,
    turn_that_took,
)
from tiny_harness.core.sizes import FILE_BYTES, refuse_size
from tiny_harness.core.speakers import refuse_ending
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import (
    invalid_task_error,
)
from tiny_harness.core.turn import AwaitEntry, DrainEntry
from tiny_harness.kube.client import HarnessTasks, KubeError, Obj, connect, translate
from tiny_harness.kube.journal import TurnRecord, TurnRecords
from tiny_harness.kube.messages import HarnessMessages, StoredMessage
from tiny_harness.kube.names import GROUP, PLURAL, VERSION
from tiny_harness.kube.participant_view import (
    Said,
    conversation,
    ended_for_good,
    lifecycle_of,
    role_of,
    spec_of,
    state_of,
    status_of,
)

#: Where a pod finds its own namespace, as kubectl reads it in a cluster.
SERVICE_ACCOUNT_NAMESPACE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
#: How often a wait re-reads the task and its records.
POLL_SECONDS: Final = 0.25

T = TypeVar("T")


class KubeconfigError(HarnessError):
    """The kubeconfig cannot be used (missing, unknown context); kubectl says ``error: ...``."""


class TimedOutError(HarnessError):
    """The operator did not answer within the deadline; what was sent stays sent."""


class AmbiguousCallError(HarnessError):
    """A tool name given for a call names several calls that wait; the call id tells them
    apart."""


# -- where and who ---------------------------------------------------------------------------


def _in_cluster(kubeconfig: Path | None) -> bool:
    return (
        kubeconfig is None
        and "KUBERNETES_SERVICE_HOST" in os.environ
        and "KUBECONFIG" not in os.environ
    )


def current_namespace(kubeconfig: Path | None, context: str | None) -> str:
    """The namespace kubectl would use without ``-n``: the context's, else ``default``."""
    if kubeconfig is not None and not kubeconfig.is_file():
        raise KubeconfigError(f"stat {kubeconfig}: no such file")
    if _in_cluster(kubeconfig):
        try:
            return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
        except OSError:
            return "default"
    try:
        contexts, current = config.list_kube_config_contexts(
            str(kubeconfig) if kubeconfig is not None else None
        )
    except (config.ConfigException, OSError) as exc:
        raise KubeconfigError(str(exc)) from None
    if context is not None:
        chosen = next((c for c in contexts or () if c.get("name") == context), None)
        if chosen is None:
            raise KubeconfigError(f'context "{context}" does not exist')
    else:
        chosen = current
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace or "default")


async def open_api(kubeconfig: Path | None, context: str | None) -> client.ApiClient:
    """An API client for the kubeconfig and context kubectl would use."""
    try:
        return await connect(kubeconfig, context)
    except (config.ConfigException, OSError) as exc:
        raise KubeconfigError(str(exc)) from None


async def who_am_i(api: client.ApiClient) -> str:
    """The Kubernetes user name the API server sees (``kubectl auth whoami``)."""
    try:
        review = await client.AuthenticationV1Api(api).create_self_subject_review(
            client.V1SelfSubjectReview()
        )
    except ApiException as exc:
        raise HarnessError(
            f"cannot tell who you are: the SelfSubjectReview failed ({exc.status} {exc.reason}); "
            "name yourself with --as-participant ID"
        ) from None
    user = review.status.user_info if review.status is not None else None
    username = str(user.username or "") if user is not None else ""
    if not username:
        raise HarnessError(
            "the API server did not name your user; name yourself with --as-participant ID"
        )
    return username


# -- reading a task --------------------------------------------------------------------------


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def drained(records: Iterable[TurnRecord], message_id: str) -> bool:
    """Whether a turn gave the message to the model (a command is answered without it)."""
    return any(
        isinstance(entry, DrainEntry) and any(m.id == message_id for m in entry.messages)
        for record in records
        for entry in record.entries
    )


def file_part(path: Path) -> MessagePart:
    """A file to attach, read whole; one too large to send is refused before it is read."""
    try:
        size = path.stat().st_size
        if size > FILE_BYTES:
            raise HarnessError(
                f"refused: {path} is {size // 1024} KiB, and a message may carry a file of at "
                f"most {FILE_BYTES // 1024} KiB (this installation has no file store)"
            )
        return MessagePart.of_file(path.name, path.read_bytes())
    except OSError as exc:
        raise HarnessError(f"cannot read {path}: {exc.strerror or exc}") from None


def said_after(messages: Sequence[TranscriptMessage], message_id: str) -> list[TranscriptMessage]:
    """The agent's messages after the user message ``message_id`` in the transcript."""
    for index, message in enumerate(messages):
        if message.role == "user" and message.message_id == message_id:
            return [m for m in messages[index + 1 :] if m.role == "agent"]
    return []


def call_named(approvals: Sequence[PendingApproval], given: str) -> str:
    """The call id that ``given`` names among the task's calls for approval: a call id as it
    is, or a tool's name (as the model called it, ``server__tool``, or the server's own name
    of it, ``tool``) when one waiting call has it. A name no call has is returned as it is,
    for :func:`~tiny_harness.core.approval.refuse_decision` to say which calls wait.

    Raises :class:`AmbiguousCallError` when the tool's name fits several calls."""
    if any(p.call_id == given for p in approvals):
        return given
    named = [p for p in approvals if p.tool == given] or [
        p for p in approvals if p.tool.endswith(f"__{given}")
    ]
    # A decided call stays listed until the next turn runs it; the waiting ones are meant.
    choices = undecided(named) or named
    if len(choices) > 1:
        ids = ", ".join(f"{p.call_id} ({p.tool})" for p in choices)
        raise AmbiguousCallError(
            f"{given} names {len(choices)} calls that wait for approval: {ids}; "
            "name one by its call id"
        )
    return choices[0].call_id if choices else given


def decision_text(decision: DecisionRequest) -> str:
    """A decision as its sender's line of the conversation: ``approve call_w1: why``."""
    edited = " with edited arguments" if decision.arguments is not None else ""
    why = f": {decision.reason}" if decision.reason else ""
    return f"{decision.verdict} {decision.call_id}{edited}{why}"


def with_decisions(said: Iterable[Said], sent: Iterable[StoredMessage]) -> list[Said]:
    """The conversation with each decision's line saying what it decided (:func:`decision_text`):
    a decision has no parts, so the journal's note that took it, and the message while it
    waits, carry no text of their own."""
    decisions = {m.spec.message_id: m.spec.decision for m in sent if m.spec.decision}
    out = []
    for each in said:
        message = each.message
        decision = decisions.get(message.message_id)
        if message.role == "user" and not message.text and decision is not None:
            message = message.model_copy(update={"text": decision_text(decision)})
            each = replace(each, message=message)
        out.append(each)
    return out


# -- the session -----------------------------------------------------------------------------


class Session:
    """One participant's view of the tasks of one namespace."""

    def __init__(self, api: client.ApiClient, namespace: str, participant: str) -> None:
        self.api = api
        self.namespace = namespace
        self.participant = participant
        self.tasks = HarnessTasks(api, namespace)
        self.messages = HarnessMessages(api, namespace, as_participant=True)
        self.records = TurnRecords(api, namespace)

    # -- reads -------------------------------------------------------------------------------

    async def visible(self, name: str) -> Obj:
        """The task, or :class:`TaskNotFoundError` when it is missing or the participant is not
        on it (the two are told apart by no one, as the gateway does)."""
        obj = await self.tasks.get(name)
        if role_of(obj, self.participant) is None:
            raise TaskNotFoundError(name)
        return obj

    async def listed(self, all_namespaces: bool = False) -> list[Obj]:
        """The tasks the participant is on, in this namespace or in all of them."""
        if all_namespaces:
            items = await _list_all_namespaces(self.api)
        else:
            items = await self.tasks.list()
        return [o for o in items if role_of(o, self.participant) is not None]

    async def conversation(self, name: str) -> list[Said]:
        """The conversation as the participant sees it (:func:`.participant_view.conversation`)."""
        obj = await self.tasks.get(name)
        records, sent = await asyncio.gather(
            self.records.for_task(obj), self.messages.for_task(obj)
        )
        return with_decisions(conversation(records, sent, spec_of(obj)), sent)

    # -- writes ------------------------------------------------------------------------------

    async def writable(self, name: str) -> Obj:
        """The task, if the participant may send to it: on it, and the task has not ended."""
        obj = await self.visible(name)
        if ended_for_good(obj):
            raise TerminalTaskError(state_of(obj).value)
        return obj

    async def endable(self, name: str, action: Control) -> Obj:
        """The task, if the participant may ``action`` it (the operator's own rule,
        :func:`~tiny_harness.core.speakers.refuse_ending`) and it has not ended."""
        obj = await self.visible(name)
        spec = spec_of(obj)
        refused = (
            refuse_ending(spec, self.participant, action)
            if spec is not None
            else f"refused: {name} has a spec the operator cannot read"
        )
        if refused is not None:
            raise NotPermittedError(f"{refused}; ask its assignee or reporter")
        if ended_for_good(obj):
            raise TerminalTaskError(state_of(obj).value)
        return obj

    async def decidable(
        self, name: str, call: str, verdict: Verdict, arguments: dict[str, Any] | None
    ) -> tuple[Obj, PendingApproval | None, str]:
        """The task, the call ``call`` names (:func:`call_named`; None when none waits) and
        its id, if the participant may give this decision on it (the operator's own rule,
        :func:`~tiny_harness.core.approval.refuse_decision`, for the park that is open) and
        the task has not ended. The decision names that park: the operator refuses it for
        any other."""
        obj = await self.visible(name)
        if ended_for_good(obj):
            raise TerminalTaskError(state_of(obj).value)
        approvals = status_of(obj).approvals
        call_id = call_named(approvals, call)
        found = next((p for p in approvals if p.call_id == call_id), None)
        spec = spec_of(obj)
        refused = (
            refuse_decision(
                approvals,
                park=approvals[0].park if approvals else None,
                call_id=call_id,
                verdict=verdict,
                sender=self.participant,
                role=spec.role_of(self.participant),
                arguments=arguments,
            )
            if spec is not None
            else f"refused: {name} has a spec the operator cannot read"
        )
        if refused is not None:
            raise NotPermittedError(refused)
        return obj, found, call_id

    async def whole_arguments(self, obj: Obj) -> dict[str, str]:
        """The arguments, whole, of the task's calls that wait with arguments the status
        holds cut (longer than it stores), by call id: from the park's journal entry in the
        turn records. Empty when none is cut (the records are then not read)."""
        approvals = [p for p in status_of(obj).approvals if p.arguments_cut]
        if not approvals:
            return {}
        wanted = {(p.park, p.call_id) for p in approvals}
        out: dict[str, str] = {}
        for record in await self.records.for_task(obj):
            for entry in record.entries:
                if isinstance(entry, AwaitEntry) and (entry.park, entry.call_id) in wanted:
                    out[entry.call_id] = entry.arguments_json
        return out

    async def send_text(
        self, obj: Obj, text: str, files: Sequence[MessagePart] = ()
    ) -> StoredMessage:
        """Send ``text`` (and ``files``, as :meth:`MessagePart.of_file` made them); a message
        the operator would refuse for its size or a malformed file is refused here first, with
        the same reason, and nothing is written."""
        try:
            spec = MessageSpec(
                task=name_of(obj),
                message_id=str(uuid.uuid4()),
                sender=self.participant,
                parts=(MessagePart(text=text), *files),
            )
        except ValidationError as exc:
            raise invalid_task_error(exc, prefix="message") from None
        refused = refuse_size(spec) or refuse_parts(spec.parts)
        if refused is not None:
            raise HarnessError(refused)
        return await self.messages.send(spec, task=obj)

    async def send_control(self, obj: Obj, action: Control) -> StoredMessage:
        spec = MessageSpec(
            task=name_of(obj),
            message_id=f"{action}-{uuid.uuid4().hex}",
            sender=self.participant,
            control=action,
        )
        return await self.messages.send(spec, task=obj)

    async def send_decision(self, obj: Obj, decision: DecisionRequest) -> StoredMessage:
        spec = MessageSpec(
            task=name_of(obj),
            message_id=f"{decision.verdict}-{uuid.uuid4().hex}",
            sender=self.participant,
            decision=decision,
        )
        return await self.messages.send(spec, task=obj)

    # -- waiting for the operator ------------------------------------------------------------

    async def replies(self, name: str, message_id: str, within: float) -> list[TranscriptMessage]:
        """The agent's messages answering ``message_id``, once the turn that took it has ended
        (a command is answered outside any turn, at once); the operator's reason as an error
        when it refused the message."""

        async def probe() -> list[TranscriptMessage] | None:
            # The status first: a turn's journal is complete before the write that ends it.
            obj = await self.tasks.get(name)
            status = status_of(obj)
            records = await self.records.for_task(obj)
            refused = refusal_of(records, message_id)
            if refused is not None:
                raise HarnessError(refused)
            turn = turn_that_took(records, message_id)
            if turn is None:
                return None
            if not turn_has_ended(turn, turn=status.turn, running=status.runner is not None):
                return None
            entries = [e for r in records if r.turn <= turn for e in r.entries]
            return said_after(transcript(entries), message_id)

        return await _poll(probe, within, f"a reply to message {message_id}")

    async def command_reply(
        self, name: str, message_id: str, command: str, within: float
    ) -> TranscriptMessage:
        """The agent's reply to the command sent as ``message_id``."""

        async def probe() -> TranscriptMessage | None:
            records = await self.records.for_task(await self.tasks.get(name))
            refused = refusal_of(records, message_id)
            if refused is not None:
                raise HarnessError(refused)
            if drained(records, message_id):
                raise HarnessError(
                    f"/{command} is not a command the operator runs: it reached the model as an "
                    "ordinary message (kubectl harness commands lists the built-in ones)"
                )
            reply_id = command_reply_id(message_id)
            said = transcript(e for r in records for e in r.entries)
            return next((m for m in said if m.message_id == reply_id), None)

        return await _poll(probe, within, f"the reply to /{command}")

    async def decision_reply(self, name: str, message_id: str, within: float) -> str:
        """What the operator recorded for the decision sent as ``message_id`` (its notice, under
        the id a command's reply has); its reason as an error when it refused the decision."""

        async def probe() -> str | None:
            records = await self.records.for_task(await self.tasks.get(name))
            answer = answer_outside_turn(records, message_id)
            if answer is not None and answer.id == refusal_id(message_id):
                raise NotPermittedError(answer.text)
            return answer.text if answer is not None else None

        return await _poll(probe, within, f"the operator to record decision {message_id}")

    async def outcome(self, name: str, message_id: str, within: float) -> TaskState:
        """The state the task ended in after the control ``message_id``; the operator's reason
        as an error when it refused the request."""

        async def probe() -> TaskState | None:
            obj = await self.tasks.get(name)
            refused = refusal_of(await self.records.for_task(obj), message_id)
            if refused is not None:
                raise NotPermittedError(refused)
            state = state_of(obj)
            return state if state.is_terminal else None

        return await _poll(probe, within, "the operator to act on the request")


async def _poll(probe: Callable[[], Awaitable[T | None]], within: float, what: str) -> T:
    deadline = time.monotonic() + within
    while True:
        found = await probe()
        if found is not None:
            return found
        if time.monotonic() >= deadline:
            raise TimedOutError(
                f"timed out after {within:g}s waiting for {what}; what was sent stays sent and "
                "the operator may still act on it (is it running?)"
            )
        await asyncio.sleep(POLL_SECONDS)


async def _list_all_namespaces(api: client.ApiClient) -> list[Obj]:
    # HarnessTasks is per namespace; -A needs the cluster-wide list of the same resource.
    try:
        result = await client.CustomObjectsApi(api).list_cluster_custom_object(
            GROUP, VERSION, PLURAL
        )
    except ApiException as exc:
        raise translate(exc) from None
    return cast(list[Obj], result["items"])


__all__ = [
    "AmbiguousCallError",
    "KubeError",
    "KubeconfigError",
    "Said",
    "Session",
    "TimedOutError",
    "call_named",
    "current_namespace",
    "decision_text",
    "lifecycle_of",
    "open_api",
    "role_of",
    "spec_of",
    "state_of",
    "status_of",
    "who_am_i",
    "with_decisions",
]
