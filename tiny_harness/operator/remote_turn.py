"""A turn of a sub-task on a remote agent: an exchange with the agent's task.

A ``HarnessTask`` with ``spec.agent`` is done by that remote A2A agent (a ``HarnessAgent``).
Its turns run here instead of the core loop: a turn takes the messages waiting for it (the
parent's brief, a participant's or the parent's answer), sends them to the remote task as one
A2A message (the first one creates the remote task, with a task envelope that names this task
as its parent on another agent, so a tiny-harness agent runs it as a delegated task), then
follows the remote task until it has answered (``core.remote_view``), and ends the turn in the
state the remote task is in, with what the agent said in the history.

**Durable as any turn.** The turn's journal holds, in order: the messages taken (written before
anything is sent, so a resend after a crash is the same A2A message with the same id), the send
and the remote task's id (written as soon as the agent names it, before the remote task is
followed), then the remote task's status as it changes. A turn resumed after a crash or a
takeover replays that journal: once the send is recorded it is never sent again; the remote
task is followed afresh (subscribe, or poll), and its first event, the task as it is, is read
against the status message recorded beside the send, so an answer that came while nobody
followed is taken, and a stale status is not. The one window left is between the send and the
write of its task id: a crash there sends the same message again. A tiny-harness agent takes it
as the same message (it names the task and the message by their ids); another agent may not.

**Bounded.** Each call is tried again as :mod:`tiny_harness.operator.remote_calls` says; a
remote task that shows no visible change for ``spec.answerTimeoutSeconds`` is given up on
(``RemoteNoAnswer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Final

from a2a.client import Client
from a2a.types import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
)
from a2a.utils.errors import UnsupportedOperationError

from tiny_harness.core.approval import PendingApproval
from tiny_harness.core.backoff import Backoff
from tiny_harness.core.extensions import TASK_EXT_KEY
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.remote_view import RemoteView, kept_artifacts
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import TaskLink, TaskSpec
from tiny_harness.core.tools import TurnTools
from tiny_harness.core.turn import (
    DrainEntry,
    InboundMessage,
    OutcomeKind,
    RemoteArtifactEntry,
    RemoteSentEntry,
    RemoteStatusEntry,
    TurnInput,
    TurnOutcome,
    TurnRef,
)
from tiny_harness.operator.agents import Agent, AgentDirectory
from tiny_harness.operator.ports import JournalHost
from tiny_harness.operator.relay import remote_approvals
from tiny_harness.operator.remote_calls import (
    RETRY,
    RemoteCallError,
    classify,
    settled_agent,
    with_retries,
)
from tiny_harness.operator.remote_decisions import send_decisions

log = logging.getLogger(__name__)

#: What this harness calls itself in the parent link of the tasks it creates on other agents.
AGENT_SELF: Final = "tiny-harness"
#: Polling a remote task that cannot be streamed: the first wait, doubling to the cap (no
#: jitter: each poll is one task's, on its own schedule).
POLL: Final = Backoff(first=1.0, cap=10.0, jitter=0.0)


def relayed(drain: DrainEntry) -> list[Part]:
    """The messages a turn took, as the parts of the one A2A message that carries them: one
    message as it is, several each under the name of who said it."""
    if len(drain.messages) == 1:
        return [Part(text=drain.messages[0].content)]
    return [Part(text=f"{m.sender or 'someone'}: {m.content}") for m in drain.messages]


def envelope(task_id: str, task: TaskSpec) -> dict[str, object]:
    """The task envelope of the first message: the goal, description and criteria, and this
    task as the parent, on another agent (so the remote task is delegated, and ends)."""
    spec = TaskSpec(
        goal=task.goal,
        description=task.description,
        acceptance_criteria=task.acceptance_criteria,
        parent=TaskLink(task_id=task_id, agent=AGENT_SELF),
    )
    return spec.model_dump(mode="json", exclude_none=True, exclude_defaults=True)


class RemoteLoop:
    """Runs one turn of a task on a remote agent (see the module docstring)."""

    def __init__(self, directory: AgentDirectory, namespace: str) -> None:
        self.directory = directory
        self.namespace = namespace

    async def run_turn(
        self, host: JournalHost, turn: TurnInput, tools: TurnTools | None = None
    ) -> TurnOutcome:
        """Relay what the turn takes and follow the remote task until it answers (``tools``
        are the model's: the remote agent has its own)."""
        name = turn.task.agent
        if not name:  # pragma: no cover - the worker runs only such tasks here
            raise RemoteCallError("RemoteAgentNotReady", "the task names no agent")
        agent = await settled_agent(self.directory, self.namespace, name)
        ref = turn.ref
        view = RemoteView.of(turn.remote)
        drain: DrainEntry | None = None
        sent: RemoteSentEntry | None = None
        statuses = 0
        kept: list[RemoteArtifactEntry] = []
        for entry in turn.journal:
            if isinstance(entry, DrainEntry):
                drain = entry
            elif isinstance(entry, RemoteSentEntry):
                sent = entry
                view.take_entry(entry)
            elif isinstance(entry, RemoteStatusEntry):
                statuses += 1
                view.take_entry(entry)
            elif isinstance(entry, RemoteArtifactEntry):
                kept.append(entry)
                view.take_entry(entry)
        awaiting: str | frozenset[str]
        if turn.decided and view.task_id:
            # The decisions on the remote task's calls go first (operator/relay.py); messages
            # that came meanwhile wait for the next turn.
            sent, awaiting = await send_decisions(agent, host, turn, view)
            before = sent.before
        else:
            if drain is None:
                inbound = [m for m in await host.drain() if m.sub_task is None]
                if not inbound:
                    return await self.end(host, turn, view, agent=agent, kept=kept)
                drain = DrainEntry(id=ref.drain(0), messages=tuple(inbound))
                await host.checkpoint(drain)
                await host.flush()  # the message is fixed before it is sent: a resend is the same
            before = sent.before if sent is not None else view.message_id
            awaiting = before
        follow = _Following(host, ref, drain, view, before, sent, statuses, kept)
        events = self.exchange(agent, turn, drain, view, sent)
        timeout = agent.spec.answer_timeout_seconds if agent.spec is not None else 600
        async with contextlib.aclosing(events):
            while not view.answered(awaiting):
                step = follow.step(events, timeout, name)
                if follow.sent is None:
                    # Until the send is recorded, a cut waits for the record: a remote task
                    # whose id nobody wrote down could be neither followed nor cancelled.
                    with host.cut_deferred():
                        more = await step
                else:
                    more = await step
                if not more:
                    break
        return await self.end(
            host, turn, view, drain.messages if drain else (), agent=agent, kept=follow.kept
        )

    async def exchange(
        self,
        agent: Agent,
        turn: TurnInput,
        drain: DrainEntry | None,
        view: RemoteView,
        sent: RemoteSentEntry | None,
    ) -> AsyncGenerator[StreamResponse, None]:
        """What the agent sends about the remote task: the send's own stream when the message
        is still to be sent, then, once the remote task has an id, the task followed (its
        stream, or polls where the agent does not stream), for as long as the caller reads."""
        client = agent.client()
        failures = 0
        budget = agent.spec.max_retries if agent.spec is not None else 0
        # Sent once the agent has said anything about it (the caller journals the send then);
        # a send that failed before that is sent again, the same message with the same id.
        delivered = sent is not None
        while True:
            try:
                if not delivered:
                    assert drain is not None  # nothing sent yet: a turn with a drain
                    message = self.message(turn, drain, view)
                    async for event in client.send_message(SendMessageRequest(message=message)):
                        delivered = True
                        yield event
                        failures = 0
                    if view.task_id is None:
                        return  # answered with a message and no task: nothing to follow
                elif agent.status.streaming:
                    assert view.task_id is not None
                    request = SubscribeToTaskRequest(id=view.task_id)
                    try:
                        async for event in client.subscribe(request):
                            yield event
                            failures = 0
                    except UnsupportedOperationError:
                        # An ended task is not streamed: read it as it is.
                        yield StreamResponse(task=await self.get(client, view.task_id))
                        await asyncio.sleep(POLL.first)
                else:
                    async for event in self.poll(client, view):
                        yield event
                        failures = 0
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except Exception as exc:
                failure = classify(agent.name, exc)
                failures += 1
                if not failure.transient or failures > budget:
                    if failure.transient:
                        raise RemoteCallError(
                            failure.reason, f"{failure} ({failures} attempts)"
                        ) from None
                    raise failure from None
                delay = RETRY.delay(failures, retry_after=failure.retry_after)
                log.info("agent %s: %s; again in %.1fs", agent.name, failure, delay)
                await asyncio.sleep(delay)

    async def poll(self, client: Client, view: RemoteView) -> AsyncIterator[StreamResponse]:
        assert view.task_id is not None
        for polled in itertools.count(1):
            yield StreamResponse(task=await self.get(client, view.task_id))
            await asyncio.sleep(POLL.delay(polled))

    async def get(self, client: Client, task_id: str) -> Task:
        return await client.get_task(GetTaskRequest(id=task_id))

    def message(self, turn: TurnInput, drain: DrainEntry, view: RemoteView) -> Message:
        """The A2A message that carries what the turn took (its id is the drain's)."""
        message = Message(
            message_id=drain.id,
            role=Role.ROLE_USER,
            parts=relayed(drain),
        )
        if view.task_id:
            message.task_id = view.task_id
            message.context_id = view.context_id
        else:
            message.metadata.update({TASK_EXT_KEY: envelope(turn.task_id, turn.task)})
        return message

    async def end(
        self,
        host: JournalHost,
        turn: TurnInput,
        view: RemoteView,
        taken: tuple[InboundMessage, ...] = (),
        *,
        agent: Agent,
        kept: Sequence[RemoteArtifactEntry] = (),
    ) -> TurnOutcome:
        """Settle the turn as the remote task is: its state and sub-state, its status text,
        the remote artifacts ``kept`` as its own; a remote task that waits for approval parks
        this one with its calls (relay.py)."""
        history = [
            *turn.history,
            *(m.said() for m in taken),
            *(ChatMessage(role="assistant", content=r.text) for r in view.replies),
        ]
        state = view.state or TaskState.WORKING
        kind = {
            TaskState.COMPLETED: OutcomeKind.COMPLETED,
            TaskState.INPUT_REQUIRED: OutcomeKind.WAITING_FOR_ANSWER,
            TaskState.AUTH_REQUIRED: OutcomeKind.WAITING_FOR_ANSWER,
        }.get(state, OutcomeKind.REMOTE_ENDED)
        if state is TaskState.AUTH_REQUIRED:
            state = TaskState.INPUT_REQUIRED  # what it waits for is the remote agent's to say
        approvals: tuple[PendingApproval, ...] = ()
        if view.mirrored_sub_state is SubState.AWAITING_APPROVAL and view.task_id:
            client = agent.client()
            task_id = view.task_id
            remote = await with_retries(agent, lambda: self.get(client, task_id))
            approvals = remote_approvals(remote, agent=agent.name, turn=turn.turn, gates=turn.gates)
            if approvals:
                kind = OutcomeKind.WAITING_FOR_APPROVAL
        outcome = TurnOutcome(
            kind=kind,
            state=state,
            sub_state=view.mirrored_sub_state,
            text=view.result,
            message_id=view.message_id or f"{turn.ref.prefix}/end",
            history=tuple(history),
            approvals=approvals,
            artifacts=kept_artifacts(turn.task.artifacts, kept, turn.turn) if kept else None,
        )
        await host.end_turn(outcome)
        return outcome


class _Following:
    """One turn's follow of its remote task: each event folded into the view, the send
    recorded as soon as the agent names the remote task, the view journaled as it changes."""

    def __init__(
        self,
        host: JournalHost,
        ref: TurnRef,
        drain: DrainEntry | None,
        view: RemoteView,
        before: str,
        sent: RemoteSentEntry | None,
        statuses: int,
        kept: list[RemoteArtifactEntry],
    ) -> None:
        self.host = host
        self.kept = kept
        self.ref = ref
        self.drain = drain
        self.view = view
        self.before = before
        self.sent = sent
        self.statuses = statuses
        self.journaled = len(view.replies)

    async def step(
        self, events: AsyncGenerator[StreamResponse, None], quiet: float, agent: str
    ) -> bool:
        """Take the next event (waiting at most ``quiet`` seconds); False when there will be
        none."""
        view = self.view
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the event and
            # drops a cut that lands as the event arrives, and the turn runs on, uncut.
            async with asyncio.timeout(quiet):
                event = await anext(events)
        except TimeoutError:
            raise RemoteCallError(
                "RemoteNoAnswer",
                f"the remote task {view.task_id or '(not created)'} on agent {agent} showed no "
                f"change for {quiet:g}s (spec.answerTimeoutSeconds of harnessagent {agent}); it "
                "may still be at work there",
            ) from None
        except StopAsyncIteration:  # pragma: no cover - exchange() follows for ever
            return False
        changed = view.take(event)
        if self.sent is None and (view.task_id or event.HasField("message")):
            assert self.drain is not None  # a turn that sends a drain: a relay is sent already
            self.sent = RemoteSentEntry(
                id=f"{self.ref.prefix}/sent-0",
                message_id=self.drain.id,
                task_id=view.task_id or "",
                context_id=view.context_id,
                before=self.before,
            )
            await self.host.checkpoint(self.sent)
            await self.host.flush()  # the remote task's id, before it is followed
        for chunk, digest in view.chunks:
            kept = RemoteArtifactEntry(
                id=f"{self.ref.prefix}/artifact-{len(self.kept)}", artifact=chunk, digest=digest
            )
            await self.host.checkpoint(kept)
            self.kept.append(kept)
        view.chunks.clear()
        if changed and view.state is not None:
            entry = view.entry(f"{self.ref.prefix}/remote-{self.statuses}", self.journaled)
            await self.host.checkpoint(entry)
            self.statuses += 1
            self.journaled = len(view.replies)
        return True
