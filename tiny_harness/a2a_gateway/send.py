"""``SendMessage`` and ``SendStreamingMessage``: write a message, then follow the task until the
message is answered.

The message is read once, at the edge (:func:`.inbound.inbound`), and the task it goes to once
(:meth:`.store.KubeTaskStore.read`, a typed view); the checks and the write take those values.
A first message creates its task, named from its sender and message id (UUID v5), so a retried
first message finds the task it created instead of creating another.

The wait follows the task (:func:`.follow.follow`) and ends, besides the task ending, as
:mod:`.waiting` says (:class:`SendWait`): the message's answer outside a turn arrives, the turn
that took it has ended (as of each change), or a quiet tick finds an answer with no status
event, or a bound passed (then the last event is the gateway's note, with its code).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, replace
from typing import Final, Protocol

from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types import Message, Role, SendMessageRequest, Task, TaskStatusUpdateEvent
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from a2a.utils.task import apply_history_length, validate_history_length

from tiny_harness.a2a_gateway.artifacts import ArtifactFollower
from tiny_harness.a2a_gateway.fanout import Subscription
from tiny_harness.a2a_gateway.follow import Followed, Start, follow, number
from tiny_harness.a2a_gateway.inbound import Inbound, inbound
from tiny_harness.a2a_gateway.policy import (
    caller,
    first_task_spec,
    refuse_if_ended,
    require_ending_role,
)
from tiny_harness.a2a_gateway.rendering import (
    TaskChange,
    as_of,
    change_of,
    is_interrupted,
    noted,
    render_task,
    status_event,
    task_version,
)
from tiny_harness.a2a_gateway.store import KubeTaskStore
from tiny_harness.a2a_gateway.stream import TaskStreams, VisibleChange
from tiny_harness.a2a_gateway.waiting import Note, Waits, at_quiet_tick
from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.core.reply_ids import Fate, command_reply_id, refusal_id
from tiny_harness.core.task import TaskStatus

#: Tasks the gateway creates are named from their sender and first message id (UUID v5), so a
#: retried first message finds the task it created instead of creating another.
TASK_NAMESPACE: Final = uuid.UUID("6b1c8f6e-2a4e-5d0b-9a57-0f6c3e3c1a10")


@dataclass(frozen=True)
class Sent:
    """A message written to a task: the task as it was when the message was written (and as a
    change: its status event and the keys the wait compares the next ones with), whether it
    had ended for good then (``closed``), and the subscription to its changes, opened before
    that read (closed by whoever follows it)."""

    task: Task
    version: TaskVersion
    message_id: str
    existed: bool
    subscription: Subscription[TaskChange]
    opening: TaskChange
    closed: bool = False


class JournalAnswers(Protocol):
    """What a send's wait asks the journal (:class:`.answers.Answers`)."""

    async def answered(
        self, task_id: str, message_id: str, *, turn: int, running: bool, since: int | None
    ) -> bool: ...

    async def fate(self, task_id: str, message_id: str, *, since: int | None) -> Fate: ...

    async def turn_stand(self, task_id: str) -> tuple[int, bool] | None: ...


class SendWait:
    """How a send's wait ends besides its task ending (:mod:`.waiting`, rules 2 to 6): the
    :class:`~.follow.Ending` of the follow after a send."""

    def __init__(self, answers: JournalAnswers, sent: Sent, waits: Waits) -> None:
        self._answers = answers
        self._task = sent.task.id
        self._message = sent.message_id
        # The turns that can take the message: from the one the task showed when it was
        # written (their records alone are read); a retried message was written at a turn no
        # one knows.
        self._since = None if sent.existed else sent.opening.turn
        self._replies = {command_reply_id(sent.message_id), refusal_id(sent.message_id)}
        self._waits = waits
        self.first_tick = waits.first_tick
        self.tick_cap = waits.tick_cap
        self._clock = asyncio.get_running_loop().time
        self._written = self._changed = self._clock()
        self._last = sent.opening.event

    async def at_change(self, change: VisibleChange) -> bool:
        self._changed = self._clock()
        self._last = change.event
        if change.progress_only:
            # The turn is at work (its lease was renewed with more calls made): the stream
            # shows it, and it neither ends the wait nor is read as an answer.
            return False
        if change.event.status.message.message_id in self._replies:
            return True  # answered outside a turn: a command's reply, a refusal
        return is_interrupted(change.event) and await self._answers.answered(
            self._task, self._message, turn=change.turn, running=change.running, since=self._since
        )

    async def at_quiet(self) -> TaskStatusUpdateEvent | None:
        fate = await self._answers.fate(self._task, self._message, since=self._since)
        now = self._clock()
        note = at_quiet_tick(
            fate,
            self._message,
            since_written=now - self._written,
            since_change=now - self._changed,
            waits=self._waits,
        )
        return None if note is None else noted(self._last, note)


class Sends:
    """The send methods over ``store`` and ``streams``, their waits bounded by ``waits``."""

    def __init__(self, store: KubeTaskStore, streams: TaskStreams, waits: Waits) -> None:
        self._store = store
        self._streams = streams
        self._waits = waits

    async def unary(self, params: SendMessageRequest, context: ServerCallContext) -> Task:
        """Write the message, wait until the task waits for a participant again or ends
        (unless ``return_immediately``), and answer with the task and its history."""
        sent = await self.send(params, context)
        last: TaskStatusUpdateEvent | None = None
        with sent.subscription:
            if not params.configuration.return_immediately:
                async with contextlib.aclosing(self.wait(sent)) as events:
                    async for event in events:
                        if isinstance(event, TaskStatusUpdateEvent):
                            last = event
        stored = await self._store.get(sent.task.id, context)
        if stored is None:
            raise coded(
                TaskNotFoundError, ReasonCode.TASK_NOT_FOUND, f"task {sent.task.id!r} was deleted"
            )
        # The status the wait ended on (the answer, or the gateway's note), with the history
        # as it is now: a later change (a turn a child's news started) must not hide the
        # answer from the caller who waited for it.
        task = stored.task if last is None else as_of(stored.task, last)
        return apply_history_length(task, params.configuration)

    async def streaming(
        self, params: SendMessageRequest, context: ServerCallContext, *, until: float
    ) -> AsyncGenerator[Task | Followed, None]:
        """Write the message, then the task: as written, then each visible change."""
        sent = await self.send(params, context)
        with sent.subscription:
            yield sent.task
            artifacts = ArtifactFollower(
                self._store.contents.artifact_chunks,
                sent.task.id,
                sent.task.context_id,
                sent.opening.artifacts,
            )
            changes = self.wait(sent, until=until, artifacts=artifacts)
            async with contextlib.aclosing(changes):
                async for event in changes:
                    yield event

    async def wait(
        self,
        sent: Sent,
        *,
        until: float | None = None,
        artifacts: ArtifactFollower | None = None,
    ) -> AsyncGenerator[Followed, None]:
        """The visible changes of the task after the send (with ``artifacts``, each change's
        new artifact chunks before it), until the wait ends (the module says how)."""
        if sent.closed:
            return
        answers = self._store.answers
        if sent.existed and is_interrupted(sent.task):
            # A retried message may have been answered long ago: by a notice, or by the end of
            # the turn that gave it to the model, as of the task now?
            fate = await answers.fate(sent.task.id, sent.message_id, since=None)
            if fate.answer is not None:
                answer = fate.answer
                yield noted(sent.opening.event, Note(answer.id, answer.text, ReasonCode.ANSWERED))
                return
            stand = await answers.turn_stand(sent.task.id)
            if stand is not None and await answers.answered(
                sent.task.id, sent.message_id, turn=stand[0], running=stand[1], since=None
            ):
                return
        start = Start(
            sent.subscription, number(sent.version), sent.opening.key, sent.opening.progress
        )
        ending = SendWait(answers, sent, self._waits)
        changes = follow(self._streams, start, until=until, artifacts=artifacts, ending=ending)
        async with contextlib.aclosing(changes):
            async for event in changes:
                yield event

    async def send(self, params: SendMessageRequest, context: ServerCallContext) -> Sent:
        """Read the message once, then write it: to the task it names, or as a new task."""
        participant = caller(context)
        validate_history_length(params.configuration)
        # Read (and refuse) the message once, before anything is read or written.
        said = inbound(params.message, participant)
        message = said.message
        if message.task_id:
            if said.envelope is not None:
                raise coded(
                    InvalidParamsError,
                    ReasonCode.INVALID_MESSAGE,
                    "a task envelope is accepted only on a task's first message; this message "
                    "names an existing task",
                )
            return await self._append(said, context)
        if said.control is not None:
            raise coded(
                InvalidParamsError,
                ReasonCode.INVALID_MESSAGE,
                "a control message must name its task in message.task_id",
            )
        task_id = str(uuid.uuid5(TASK_NAMESPACE, f"{participant}\n{message.message_id}"))
        context_id = message.context_id or task_id
        spec = first_task_spec(said.envelope, participant, message)
        task = task_to_a2a(task_id, context_id, spec, TaskStatus())
        # Before the write: the task's first change is the one its creation made.
        subscription = self._streams.follow(task_id)
        try:
            version = await self._store.writes.create(
                task_id, context_id, spec, [said.to(task_id)], participant
            )
        except ConcurrentTaskModificationError:
            subscription.close()
            # The same first message again: the task it created answers it.
            retry = replace(said, message=_stamped(message, task_id, context_id))
            return await self._append(retry, context)
        except BaseException:
            subscription.close()
            raise
        # Its first event is the task as written: nothing else of it is read back.
        opening = TaskChange.of(status_event(task), version, turn=0, running=False)
        return Sent(task, version, message.message_id, False, subscription, opening)

    async def _append(self, said: Inbound, context: ServerCallContext) -> Sent:
        # Opened before the read the wait starts from, so no change after it is missed.
        subscription = self._streams.follow(said.message.task_id)
        try:
            return await self._append_read(said, context, subscription)
        except BaseException:
            subscription.close()
            raise

    async def _append_read(
        self, said: Inbound, context: ServerCallContext, subscription: Subscription[TaskChange]
    ) -> Sent:
        message, participant = said.message, said.sender
        # The task, read once: every check and the write below take this view.
        found = await self._store.read(message.task_id, context)
        if found is None:
            raise coded(
                TaskNotFoundError,
                ReasonCode.TASK_NOT_FOUND,
                f"task {message.task_id!r} not found",
            )
        task, version, opening = render_task(found), task_version(found.obj), change_of(found)
        if message.context_id and message.context_id != task.context_id:
            raise coded(
                InvalidParamsError,
                ReasonCode.INVALID_MESSAGE,
                f"message.context_id {message.context_id!r} is not the context of task "
                f"{task.id!r} ({task.context_id!r})",
            )
        closed = found.ended_for_good
        if closed and await self._store.writes.already_sent(found, message.message_id, participant):
            # The same message again after it ended the task (a retried completion): the
            # answer is the task as it is, as it was for the first send.
            return Sent(task, version, message.message_id, True, subscription, opening, closed)
        refuse_if_ended(found)
        if said.control is not None:
            require_ending_role(found, participant, said.control)
        written = await self._store.writes.append(found, [said.to(task.id)], participant)
        # A message that was already stored (a retry) may have been taken long ago.
        existed = not written.is_after(version)
        return Sent(task, version, message.message_id, existed, subscription, opening, closed)


def _stamped(message: Message, task_id: str, context_id: str) -> Message:
    out = Message()
    out.CopyFrom(message)
    out.task_id = task_id
    out.context_id = context_id
    out.role = Role.ROLE_USER
    return out
