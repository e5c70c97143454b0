"""Kubernetes behind the SDK's versioned task store: ``HarnessTask`` objects read as A2A tasks,
and the only writes a participant makes (a new task, a message, a cancel request) as objects.

:class:`KubeTaskStore` implements a2a-sdk's :class:`~a2a.server.cluster.VersionedTaskStore`:

- A version is a ``resourceVersion``: a task read here carries the one it was read at (a list
  of that one task), so a watch from it misses nothing after the read and is never refused as
  too old, however long ago the task last changed. etcd revisions are global, so the version a
  write returns also orders against every later change of the task.
- Reads are scoped to the caller, as the SDK's own stores scope them to an owner: a task the
  caller does not participate in is absent (``get`` returns None, ``list`` leaves it out).
- The history is the turn journals folded into the transcript, followed by the messages sent
  but not yet taken by a turn (see ``docs/design/messages-and-history.md``). A message or a
  record that cannot be parsed is left out of it, and flagged (``kube/unreadable.py``).
- A send's wait asks the journal what became of its message (:meth:`KubeTaskStore.answered`,
  :meth:`KubeTaskStore.fate`) from the records of the turns that can have taken it alone:
  those from the task's turn when it was written (:meth:`KubeTaskStore._records`), so an open
  send costs the same in a conversation of three turns or three thousand.
- :meth:`KubeTaskStore.save` writes only what participants own; the task's state belongs to the
  operator (status subresource, RBAC). It compares the task with the one it was derived from:

  ============================  ============================================================
  the write                     what is created
  ============================  ============================================================
  first write (version MISSING) the ``HarnessTask`` (spec from the task extension, context
                                id annotation) and its first messages; the name already taken
                                is a :class:`ConcurrentTaskModificationError`
  user messages appended        one ``HarnessMessage`` each, named from the message id, so a
                                retried send creates nothing new
  the state moved to CANCELED   a cancel request (a ``HarnessMessage`` with control=cancel);
                                the task already ended, or gone, is a
                                :class:`ConcurrentTaskModificationError`, as the SDK specifies
  anything else                 refused: only the operator changes a task's state
  ============================  ============================================================

  Appending a message does not compare versions: a message is its own object and never
  conflicts with the operator's status writes, which is why messages are not kept on the task.

- Before anything is written, a message over the size every message is held to is refused
  (413), and so is a write that would take the caller or the namespace past a quota (429),
  as the tally counts what is stored (:mod:`.quotas`, :mod:`.tally`). A task the gateway
  creates is labelled with its sender, so it counts towards that participant's live tasks.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Collection, Sequence
from typing import Final, cast

from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    StoredTask,
    TaskVersion,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.types import Artifact, ListTasksRequest, ListTasksResponse, Message, Role, Task
from a2a.types import TaskState as A2AState
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError, InvalidRequestError, UnsupportedOperationError
from a2a.utils.task import ListTasksCursor, decode_list_tasks_cursor, encode_list_tasks_cursor
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import ValidationError

from tiny_harness.a2a_gateway.artifacts import whole
from tiny_harness.a2a_gateway.identity import participant_of
from tiny_harness.a2a_gateway.inbound import message_spec
from tiny_harness.a2a_gateway.namespace_feed import NamespaceFeed
from tiny_harness.a2a_gateway.quotas import Demand
from tiny_harness.a2a_gateway.rendering import (
    ResourceVersion,
    TaskChange,
    change_of,
    history_message,
    is_terminal,
    pending_message,
    render_task,
    task_version,
)
from tiny_harness.a2a_gateway.tally import Hold
from tiny_harness.core.a2a_task import extension_from_a2a, state_from_a2a
from tiny_harness.core.artifact_index import ArtifactChunk, chunks_of, turns_of
from tiny_harness.core.authority import SUB_TASKS, refusal
from tiny_harness.core.errors import (
    InvalidTaskError,
    ServerControlledFieldError,
    TaskNotFoundError,
)
from tiny_harness.core.inbox import MessageSpec, message_name
from tiny_harness.core.reach import DEFAULT_MAX_SUB_TASK_DEPTH, refuse_depth
from tiny_harness.core.reply_ids import Fate, answered_as_of, fate_of
from tiny_harness.core.sizes import message_bytes
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import SERVER_CONTROLLED_FIELDS, TaskSpec
from tiny_harness.kube.client import Obj, child_metadata, translate
from tiny_harness.kube.journal import TurnRecord, TurnRecords
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import (
    API_VERSION,
    CONTEXT_ID_ANNOTATION,
    FIRST_MESSAGE_ANNOTATION,
    GROUP,
    KIND,
    PLURAL,
    SENDER_LABEL,
    VERSION,
    context_id_of,
)
from tiny_harness.kube.ownership import ancestors_of, uid_of
from tiny_harness.kube.participant_view import conversation, role_of, spec_of, status_of
from tiny_harness.kube.unreadable import Skipped, uncounted
from tiny_harness.kube.watching import read_for_watch

log = logging.getLogger(__name__)

SUBMITTED: Final = TaskState.SUBMITTED

OwnerResolver = Callable[[ServerCallContext], str | None]


def _is_member(obj: Obj, participant: str | None) -> bool:
    return role_of(obj, participant) is not None


class KubeTaskStore(VersionedTaskStore):
    """The ``HarnessTask`` objects of one namespace as an a2a-sdk versioned task store: read
    from ``feed``'s index, written through the API server, the writes admitted by the feed's
    tally (the quotas of that namespace)."""

    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        *,
        feed: NamespaceFeed,
        owner_resolver: OwnerResolver = participant_of,
        skipped: Skipped = uncounted,
        max_sub_task_depth: int = DEFAULT_MAX_SUB_TASK_DEPTH,
    ) -> None:
        self.namespace = namespace
        self._max_depth = max_sub_task_depth
        self._feed = feed
        self._tally = feed.tally
        self._api = api
        self._objects = client.CustomObjectsApi(api)
        self._messages = HarnessMessages(api, namespace, skipped=skipped)
        self._turns = TurnRecords(api, namespace, skipped=skipped)
        self._owner = owner_resolver

    # -- reads -------------------------------------------------------------------------------

    async def current(self, task_id: str) -> Obj | None:
        """The task as this replica holds it, or as the API server has it when the index has
        not heard of it yet (a task created a moment ago, here or on another replica): a
        participant reads what they just wrote. None: there is no such task."""
        await self._feed.ready()
        obj = self._feed.index.get(task_id)
        if obj is None:
            obj, _ = await read_for_watch(self._api, self.namespace, PLURAL, task_id)
        return obj

    async def _current(self, task_id: str) -> Obj:
        obj = await self.current(task_id)
        if obj is None:
            raise TaskNotFoundError(task_id)
        return obj

    async def _visible(
        self, task_id: str, context: ServerCallContext
    ) -> tuple[Obj, ResourceVersion] | None:
        obj = await self.current(task_id)
        if obj is None or not _is_member(obj, self._owner(context)):
            return None
        return obj, task_version(obj)

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        """The task with its history, or None when it does not exist or the caller is not on it.

        The version is the task's own: a subscription opened before this read
        (:meth:`.stream.TaskStreams.follow`) shows every change after it.
        """
        found = await self._visible(task_id, context)
        if found is None:
            return None
        obj, version = found
        history, artifacts = await asyncio.gather(self.history(obj), self.artifacts(obj))
        return StoredTask(render_task(obj, history, artifacts), version)

    async def get_without_history(
        self, task_id: str, context: ServerCallContext
    ) -> StoredTask | None:
        """As :meth:`get`, with one read instead of three: for a caller about to write."""
        found = await self._visible(task_id, context)
        if found is None:
            return None
        obj, version = found
        return StoredTask(render_task(obj), version)

    async def get_with_change(
        self, task_id: str, context: ServerCallContext
    ) -> tuple[StoredTask, TaskChange] | None:
        """As :meth:`get_without_history`, and the task as a change (its status event and the
        keys a stream compares, :func:`.rendering.change_of`), cut from the same object: a
        send follows the task from there without reading its rendered metadata back."""
        found = await self._visible(task_id, context)
        if found is None:
            return None
        obj, version = found
        return StoredTask(render_task(obj), version), change_of(obj)

    async def history(self, obj: Obj) -> list[Message]:
        """The conversation as a participant sees it (:func:`.participant_view.conversation`),
        as A2A messages: a pending message keeps every part it was sent with."""
        name = obj["metadata"]["name"]
        context_id = context_id_of(obj)
        records, sent = await asyncio.gather(
            self._turns.for_task(obj), self._messages.for_task(obj)
        )
        return [
            pending_message(name, context_id, said.sent)
            if said.sent is not None
            else history_message(name, context_id, said.message)
            for said in conversation(records, sent, spec_of(obj))
        ]

    async def artifacts(self, obj: Obj) -> list[Artifact]:
        """The task's artifacts, each whole: its index (``status.artifacts``) read with the
        chunks from the records of the turns it names, those alone."""
        rows = status_of(obj).artifacts
        if not rows:
            return []
        return whole(rows, await self._chunks_of(obj, turns_of(rows)))

    async def artifact_chunks(
        self, task_id: str, turns: Collection[int]
    ) -> dict[tuple[int, str], ArtifactChunk]:
        """The artifact chunks journaled in ``turns`` of the task of that name now, by where
        the index says they are (none once the task is gone)."""
        obj = await self.current(task_id)
        return {} if obj is None else await self._chunks_of(obj, turns)

    async def _chunks_of(
        self, obj: Obj, turns: Collection[int]
    ) -> dict[tuple[int, str], ArtifactChunk]:
        found: dict[tuple[int, str], ArtifactChunk] = {}
        for record in await self._turns.for_task(obj, turns=turns):
            found.update(chunks_of(record.entries, record.turn))
        return found

    async def _records(
        self, task_id: str, *, since: int | None = None, upto: int | None = None
    ) -> list[TurnRecord]:
        """The turn records of the task of that name now (none once it is gone): a record
        of an older task of the same name is never read as this one's.

        **Only the turns that can have taken a message** (``since``: the task's
        ``status.turn`` when the message was written; None: every turn). A message written
        while the status showed turn T0 is taken, drained or acknowledged, by turn T0 (still
        running) or a later one, and a notice written outside a turn goes to the latest turn's
        record (the operator's ``append_notices``), which is T0 or later too; a status read
        from the index may lag, never lead, so its turn only widens the read. The records
        read are those of turns ``since`` to ``upto`` (default: the task's latest turn and
        the one after it, whose record may be written before the status shows it), so a send
        reads the few turns since it was written, whatever the length of the conversation
        before."""
        obj = await self.current(task_id)
        if obj is None:
            return []
        if since is None:
            return await self._turns.for_task(obj)
        if upto is None:
            upto = int((obj.get("status") or {}).get("turn") or 0) + 1
        return await self._turns.for_task(obj, turns=range(since, max(since, upto) + 1))

    async def answered(
        self, task_id: str, message_id: str, *, turn: int, running: bool, since: int | None
    ) -> bool:
        """:func:`tiny_harness.core.reply_ids.answered_as_of` a status showing ``turn`` (running
        or not), with the records read now: they only grow, and the answer is as of that
        status. ``since``: the turn the message was written at (None: not known, a retry),
        so only turns ``since`` to ``turn`` are read (:meth:`_records`): a turn after
        ``turn`` has not ended as of that status."""
        if since is not None and turn < since:
            return False  # no turn that can take the message had begun at that status
        records = await self._records(task_id, since=since, upto=turn)
        return answered_as_of(records, message_id, turn=turn, running=running)

    async def already_sent(self, task_id: str, message_id: str, sender: str) -> bool:
        """Whether ``sender`` already sent this message to the task (a retry); a stored one
        that cannot be read was sent by no one it can tell."""
        try:
            obj = await self._current(task_id)
            stored = await self._messages.get(message_name(task_id, uid_of(obj), message_id))
        except TaskNotFoundError:
            return False
        return stored is not None and stored.spec.sender == sender and stored.belongs_to(obj)

    async def fate(self, task_id: str, message_id: str, *, since: int | None) -> Fate:
        """What the journal says of the message now (:func:`.reply_ids.fate_of`), from the
        records of the turns since ``since``, the turn it was written at (None: every turn;
        :meth:`_records`)."""
        return fate_of(await self._records(task_id, since=since), message_id)

    async def turn_stand(self, task_id: str) -> tuple[int, bool] | None:
        """The task's latest turn and whether it runs, read now (None: the task is gone)."""
        obj = await self.current(task_id)
        if obj is None:
            return None
        status = obj.get("status") or {}
        return int(status.get("turn") or 0), status.get("runner") is not None

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The tasks the caller is on, newest change first, filtered and paged as A2A says:
        from the index of the caller's tasks (:mod:`.task_index`), so it costs what the caller
        has, and only the page is rendered."""
        participant = self._owner(context)
        await self._feed.ready()
        index = self._feed.index
        wanted_state = state_from_a2a(params.status) if params.status else None
        after = (
            params.status_timestamp_after.ToNanoseconds()
            if params.HasField("status_timestamp_after")
            else None
        )
        keys: list[tuple[bool, int, str]] = []
        for name, summary in index.summaries_of(participant or ""):
            if params.context_id and summary.context_id != params.context_id:
                continue
            if wanted_state is not None and (summary.state or SUBMITTED) != wanted_state:
                continue
            if after is not None and not (summary.updated_ns and summary.updated_ns >= after):
                continue
            keys.append((summary.updated_ns > 0, summary.updated_ns, name))
        keys.sort(reverse=True)
        start = 0
        if params.page_token:
            cursor = decode_list_tasks_cursor(params.page_token)
            if cursor is None:
                raise InvalidParamsError(message=f"invalid page token {params.page_token!r}")
            start = next((i for i, k in enumerate(keys) if k < cursor.sort_key()), len(keys))
        size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        objects: dict[str, Obj] = {}
        page: list[Task] = []
        for _, _, name in keys[start : start + size]:
            obj = index.get(name)
            if obj is None:
                continue
            try:
                page.append(render_task(obj))
            except ValidationError as exc:
                log.warning("task %s cannot be rendered: %s", name, exc)
                continue
            objects[name] = obj
        next_token = ""
        if start + size < len(keys):
            has, stamp, last = keys[start + size - 1]
            next_token = encode_list_tasks_cursor(ListTasksCursor(stamp if has else None, last))
        if params.HasField("history_length") and params.history_length > 0:
            histories = await asyncio.gather(*(self.history(objects[t.id]) for t in page))
            for task, history in zip(page, histories, strict=True):
                task.history.extend(history)
        if params.include_artifacts:
            found = await asyncio.gather(*(self.artifacts(objects[t.id]) for t in page))
            for task, artifacts in zip(page, found, strict=True):
                task.artifacts.extend(artifacts)
        return ListTasksResponse(
            tasks=page, next_page_token=next_token, page_size=size, total_size=len(keys)
        )

    # -- writes ------------------------------------------------------------------------------

    async def save(
        self,
        task: Task,
        *,
        event: Event | None,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        """Write what a participant owns of ``task`` (see the module docstring)."""
        sender = self._owner(context)
        if sender is None:
            raise InvalidRequestError(message="a write needs a participant identity")
        if prev is None or prev_version.is_missing:
            return await self._create(task, sender)
        if task.status.state == A2AState.TASK_STATE_CANCELED != prev.status.state:
            return await self._request_cancel(task.id, sender)
        if task.status.state != prev.status.state or task.metadata != prev.metadata:
            raise UnsupportedOperationError(
                message="a task's state is written by the operator only; send a message, a "
                "control message or CancelTask instead"
            )
        known = {m.message_id for m in prev.history}
        added = [m for m in task.history if m.message_id not in known]
        if not added:
            return prev_version
        specs = [message_spec(task.id, m, sender) for m in added]
        return await self.append(task.id, specs, sender)

    async def append(self, task_id: str, specs: Sequence[MessageSpec], sender: str) -> TaskVersion:
        """Write the messages ``specs`` (read at the edge) to the task: :meth:`save` of a
        history with them added, without a history to compare."""
        return await self._send(specs, await self._current(task_id), sender)

    async def _create(self, task: Task, sender: str) -> TaskVersion:
        try:
            extension = extension_from_a2a(task)
        except InvalidTaskError as exc:
            raise InvalidParamsError(message=str(exc)) from None
        controlled = [f for f in SERVER_CONTROLLED_FIELDS if getattr(extension, f) is not None]
        if controlled:
            raise UnsupportedOperationError(message=str(ServerControlledFieldError(controlled)))
        spec = TaskSpec.model_validate(extension.model_dump(include=set(TaskSpec.model_fields)))
        messages = [
            message_spec(task.id, m, sender) for m in task.history if m.role == Role.ROLE_USER
        ]
        return await self.create(task.id, task.context_id, spec, messages, sender)

    async def create(
        self,
        task_id: str,
        context_id: str,
        spec: TaskSpec,
        messages: Sequence[MessageSpec],
        sender: str,
    ) -> TaskVersion:
        """Create the task ``spec`` and its first ``messages``, as read at the edge (the
        request handler's :class:`~.inbound.Inbound`): nothing is parsed again here. A name
        already taken is a :class:`ConcurrentTaskModificationError`."""
        parent = await self._parent_for(spec.local_parent, sender) if spec.local_parent else None
        await self._tally.ready()
        # The same first message again finds the task it made (409 below), and the message
        # goes to that task, asked about the quotas there: here it adds nothing.
        retried = self._tally.knows("task", task_id)
        fresh = [] if retried else [m for m in messages if m.control is None]
        demand = Demand(tuple(message_bytes(m) for m in fresh), tasks=0 if retried else 1)
        with self._tally.admit(sender, demand) as hold:
            first = messages[0].message_id if messages else None
            created = await self._create_object(
                task_id, context_id, spec, sender, parent, first_message=first
            )
            hold.wrote_task(task_id)
            version = task_version(created)
            await self._write(messages, created, hold, {m.message_id for m in fresh})
        return version

    async def _parent_for(self, parent: str, sender: str) -> Obj:
        """The task a first message names as its parent, if ``sender`` may start a sub-task
        of it (the authority table's ``sub-tasks`` row, as for ``/sub-task``). Anyone else is
        refused, and nothing is written: a task not found and a task the sender is not on
        read the same, as for every other call."""
        obj = await self.current(parent)
        spec = None
        if obj is not None and _is_member(obj, sender):
            try:
                spec = TaskSpec.model_validate(obj["spec"])
            except ValidationError:
                spec = None
        if obj is None or spec is None:
            raise InvalidParamsError(
                message=f"parent: task {parent!r} not found; a sub-task is attached only to a "
                "task you are on as its assignee, reporter or admin"
            )
        refused = refusal(SUB_TASKS, sender, spec.role_of(sender), parent)
        if refused is not None:
            raise UnsupportedOperationError(message=f"parent: refused: {refused}")
        # The index holds the whole namespace once ready, parents before their children.
        depth = sum(1 for _ in ancestors_of(obj, self._feed.index.get))
        too_deep = refuse_depth(parent, depth, self._max_depth)
        if too_deep is not None:
            raise UnsupportedOperationError(
                message=f"parent: refused: {too_deep}; nothing was created: attach it higher up "
                "the tree, or start a task of its own"
            )
        return obj

    async def _create_object(
        self,
        name: str,
        context_id: str,
        spec: TaskSpec,
        sender: str,
        parent: Obj | None = None,
        *,
        first_message: str | None = None,
    ) -> Obj:
        annotations = {CONTEXT_ID_ANNOTATION: context_id}
        if first_message is not None:
            # Its first message follows at once (it names the task's uid, so it cannot come
            # first): the operator waits for it instead of parking the empty conversation.
            annotations[FIRST_MESSAGE_ANNOTATION] = first_message
        metadata: dict[str, object] = {"name": name, "annotations": annotations}
        # Whose first message made it: the live tasks a participant has are counted by it.
        labels = {SENDER_LABEL: label_value(sender)}
        if parent is not None:
            # The owner reference to the parent's uid is what makes it the parent's child
            # (kube/ownership.py): only the harness writes one.
            child = child_metadata(parent)
            labels |= child.pop("labels", {})
            metadata |= child
        metadata["labels"] = labels
        body = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": metadata,
            "spec": spec.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
        try:
            created = await self._objects.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, body
            )
        except ApiException as exc:
            if exc.status == 409:
                raise ConcurrentTaskModificationError(name) from None
            raise translate(exc, name) from None
        return cast(Obj, created)

    async def _send(self, specs: Sequence[MessageSpec], task: Obj, sender: str) -> TaskVersion:
        """Write the messages to ``task``, once the tally admits them: a control (complete,
        cancel) is never refused, since ending tasks is how room is made, and a message
        already stored (a retry) adds nothing."""
        await self._tally.ready()
        uid = uid_of(task)
        fresh = [
            spec
            for spec in specs
            if spec.control is None
            and not self._tally.knows("message", message_name(spec.task, uid, spec.message_id))
        ]
        with self._tally.admit(sender, Demand(tuple(message_bytes(s) for s in fresh))) as hold:
            return await self._write(specs, task, hold, {s.message_id for s in fresh})

    async def _write(
        self, specs: Sequence[MessageSpec], task: Obj, hold: Hold, held: set[str]
    ) -> TaskVersion:
        """Write the messages; each one ``hold`` admitted (by id, in ``held``) is named to it,
        so that it is counted until the watch delivers it."""
        version = TaskVersion.MISSING
        for spec in specs:
            stored = await self._messages.send(spec, task=task)
            if spec.message_id in held:
                hold.wrote_message(stored.name)
            version = ResourceVersion(stored.resource_version)
        return version

    async def _request_cancel(self, task_id: str, sender: str) -> TaskVersion:
        obj = await self.current(task_id)
        if obj is None:
            raise ConcurrentTaskModificationError(task_id)
        if is_terminal(render_task(obj)):
            raise ConcurrentTaskModificationError(task_id)
        spec = MessageSpec(
            task=task_id,
            message_id=f"cancel-{uuid.uuid4().hex}",
            sender=sender,
            control="cancel",
        )
        return await self._send([spec], obj, sender)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        raise UnsupportedOperationError(
            message="the gateway does not delete tasks; an administrator deletes one with "
            f"kubectl delete {PLURAL} {task_id}"
        )
