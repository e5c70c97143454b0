"""The only writes a participant makes through the gateway: a new task, a message, a cancel.

The task's state belongs to the operator (status subresource, RBAC); a participant owns what
they say. :meth:`TaskWrites.save` is the SDK's ``save`` of a versioned task store read that
way, comparing the task with the one it was derived from:

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

A task is created as every kind of task is (:meth:`~tiny_harness.kube.client.HarnessTasks.
create`, which also makes a sub-task its parent's child). Before anything is written, a write
that would take the caller or the namespace past a quota is refused (429), as the tally counts
what is stored (:mod:`.quotas`, :mod:`.tally`); a task the gateway creates is labelled with its
sender, so it counts towards that participant's live tasks.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence

from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion
from a2a.types import Role, Task
from a2a.types import TaskState as A2AState
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError

from tiny_harness.a2a_gateway.inbound import message_spec
from tiny_harness.a2a_gateway.parents import ParentCheck
from tiny_harness.a2a_gateway.quotas import Demand
from tiny_harness.a2a_gateway.rendering import ResourceVersion, task_version
from tiny_harness.a2a_gateway.tally import Hold, QuotaTally
from tiny_harness.core.a2a_task import extension_from_a2a
from tiny_harness.core.errors import InvalidTaskError, ServerControlledFieldError, TaskNotFoundError
from tiny_harness.core.inbox import MessageSpec, message_name
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.core.sizes import message_bytes
from tiny_harness.core.task import SERVER_CONTROLLED_FIELDS, TaskSpec
from tiny_harness.kube.client import ConflictError, HarnessTasks
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import CONTEXT_ID_ANNOTATION, FIRST_MESSAGE_ANNOTATION, SENDER_LABEL
from tiny_harness.kube.participant_view import ParticipantView


class TaskWrites:
    """A participant's writes to the tasks of one namespace: created through ``tasks``, their
    messages through ``messages``, admitted by ``tally``; ``lookup`` finds a task by name."""

    def __init__(
        self,
        tasks: HarnessTasks,
        messages: HarnessMessages,
        tally: QuotaTally,
        parents: ParentCheck,
        lookup: Callable[[str], Awaitable[ParticipantView | None]],
    ) -> None:
        self._tasks = tasks
        self._messages = messages
        self._tally = tally
        self._parents = parents
        self._lookup = lookup

    async def save(
        self, task: Task, *, prev: Task | None, prev_version: TaskVersion, sender: str
    ) -> TaskVersion:
        """Write what ``sender`` owns of ``task``, derived from ``prev`` (the module's table)."""
        if prev is None or prev_version.is_missing:
            return await self._create_from(task, sender)
        if task.status.state == A2AState.TASK_STATE_CANCELED != prev.status.state:
            return await self.request_cancel(task.id, sender)
        if task.status.state != prev.status.state or task.metadata != prev.metadata:
            raise coded(
                UnsupportedOperationError,
                ReasonCode.NOT_OFFERED,
                "a task's state is written by the operator only; send a message, a control "
                "message or CancelTask instead",
            )
        known = {m.message_id for m in prev.history}
        added = [m for m in task.history if m.message_id not in known]
        if not added:
            return prev_version
        found = await self._lookup(task.id)
        if found is None:
            raise TaskNotFoundError(task.id)
        return await self.append(found, [message_spec(task.id, m, sender) for m in added], sender)

    async def _create_from(self, task: Task, sender: str) -> TaskVersion:
        """:meth:`create` of an A2A task as the SDK hands one to ``save``: its task extension
        read as a spec (server-controlled fields refused), its user messages as its first."""
        try:
            extension = extension_from_a2a(task)
        except InvalidTaskError as exc:
            raise coded(InvalidParamsError, ReasonCode.INVALID_MESSAGE, str(exc)) from None
        controlled = [f for f in SERVER_CONTROLLED_FIELDS if getattr(extension, f) is not None]
        if controlled:
            raise coded(
                UnsupportedOperationError,
                ReasonCode.SERVER_CONTROLLED_FIELD,
                str(ServerControlledFieldError(controlled)),
            )
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
        parent = (
            await self._parents.parent_for(spec.local_parent, sender) if spec.local_parent else None
        )
        await self._tally.ready()
        # The same first message again finds the task it made (a conflict, below), and the
        # message goes to that task, asked about the quotas there: here it adds nothing.
        retried = self._tally.knows("task", task_id)
        fresh = [] if retried else [m for m in messages if m.control is None]
        demand = Demand(tuple(message_bytes(m) for m in fresh), tasks=0 if retried else 1)
        with self._tally.admit(sender, demand) as hold:
            annotations = {CONTEXT_ID_ANNOTATION: context_id}
            if messages:
                # Its first message follows at once (it names the task's uid, so it cannot
                # come first): the operator waits for it instead of parking the empty
                # conversation.
                annotations[FIRST_MESSAGE_ANNOTATION] = messages[0].message_id
            try:
                created = await self._tasks.create(
                    task_id,
                    spec.model_dump(mode="json", by_alias=True, exclude_none=True),
                    # Whose first message made it: a participant's live tasks are counted by it.
                    labels={SENDER_LABEL: label_value(sender)},
                    annotations=annotations,
                    owner=parent.obj if parent is not None else None,
                )
            except ConflictError:
                raise ConcurrentTaskModificationError(task_id) from None
            hold.wrote_task(task_id)
            version = task_version(created)
            await self._write(
                messages, ParticipantView(created), hold, {m.message_id for m in fresh}
            )
        return version

    async def append(
        self, task: ParticipantView, specs: Sequence[MessageSpec], sender: str
    ) -> TaskVersion:
        """Write the messages ``specs`` (read at the edge) to ``task`` (read at the edge), once
        the tally admits them: a control (complete, cancel) is never refused, since ending
        tasks is how room is made, and a message already stored (a retry) adds nothing."""
        await self._tally.ready()
        fresh = [
            spec
            for spec in specs
            if spec.control is None
            and not self._tally.knows("message", message_name(spec.task, task.uid, spec.message_id))
        ]
        with self._tally.admit(sender, Demand(tuple(message_bytes(s) for s in fresh))) as hold:
            return await self._write(specs, task, hold, {s.message_id for s in fresh})

    async def _write(
        self, specs: Sequence[MessageSpec], task: ParticipantView, hold: Hold, held: set[str]
    ) -> TaskVersion:
        """Write the messages; each one ``hold`` admitted (by id, in ``held``) is named to it,
        so that it is counted until the watch delivers it."""
        version = TaskVersion.MISSING
        for spec in specs:
            stored = await self._messages.send(spec, task=task.obj)
            if spec.message_id in held:
                hold.wrote_message(stored.name)
            version = ResourceVersion(stored.resource_version)
        return version

    async def request_cancel(self, task_id: str, sender: str) -> TaskVersion:
        """A cancel request from ``sender``; the task gone, or already ended, is a
        :class:`ConcurrentTaskModificationError`, as the SDK specifies."""
        task = await self._lookup(task_id)
        if task is None or task.state.is_terminal:
            raise ConcurrentTaskModificationError(task_id)
        spec = MessageSpec(
            task=task_id,
            message_id=f"cancel-{uuid.uuid4().hex}",
            sender=sender,
            control="cancel",
        )
        return await self.append(task, [spec], sender)

    async def already_sent(self, task: ParticipantView, message_id: str, sender: str) -> bool:
        """Whether ``sender`` already sent this message to ``task`` (a retry); a stored one
        that cannot be read was sent by no one it can tell."""
        try:
            stored = await self._messages.get(message_name(task.name, task.uid, message_id))
        except TaskNotFoundError:
            return False
        return stored is not None and stored.spec.sender == sender and stored.belongs_to(task.obj)
