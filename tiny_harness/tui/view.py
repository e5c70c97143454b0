"""What the TUI shows of a task, folded from what the gateway sends: a pure module.

The TUI is an A2A client and nothing more, so everything on its screens comes from A2A
objects: a ``Task`` read with its history (GetTask), then the events of a stream (SendMessage
with streaming, or SubscribeToTask): a new ``Task``, a ``Message``, a status update. The fold
keeps the conversation in the order it arrived, each message once (by its id): a stream that
reconnects replays the task and its history, and none of it shows twice.

Every ``Task`` and status update the gateway streams carries the task's version (its
``resourceVersion``, ``version`` under the task extension key), strictly increasing along a
task's stream. The view keeps the last it applied (:attr:`TaskView.version`), which a resumed
stream names (``Last-Event-ID``): the status of an update not after it is old news and skipped
(a resumed stream's replay, a send's stream behind the followed one), and so is a ``Task``
older than it; of those, only the messages the view lacks are taken.

A participant task (lifecycle ``participant``) is a question an agent put to one person, which
that person's answer completes: :meth:`TaskView.question` says so, and the screens show it as
such (a badge in the tree, the question and what to do about it, the composer as the answer).

A task awaiting approval lists its calls (:meth:`TaskView.calls`, :mod:`.approvals`). They are
in the task extension of a ``Task``, not in a status update, so a view that shows calls (or
learns that the task awaits approval) asks for the task to be read again after each status
update (:meth:`TaskView.wants_read`).

A task's artifacts (:attr:`TaskView.artifacts`) are whole in a ``Task`` read (a send's opening
``Task`` carries none, as it carries no history, and leaves them as they are), and come as chunks
(artifact updates) on a stream, each before the status update of the change that indexed it.
Two streams of the task (the followed one, a send's) send the same chunks, and an appended
chunk taken twice would show twice, so a stream's chunks are held until its next status
update and taken only when that update is news to the view (:meth:`TaskView.take`); the stream
that brought the change first brought its chunks too. A stream that ends among them resumes
from the version before, and is sent the artifacts changed since, whole.
"""

from __future__ import annotations

import base64
import contextlib
from dataclasses import dataclass, field, replace

from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
)

from tiny_harness.core.a2a_task import extension_from_a2a, state_from_a2a
from tiny_harness.core.attachments import Attachment
from tiny_harness.core.errors import InvalidTaskError
from tiny_harness.core.extensions import TASK_EXT_KEY
from tiny_harness.core.reply_ids import command_reply_id, refusal_id
from tiny_harness.core.states import TaskState
from tiny_harness.core.status_ext import metadata_dict, sub_state_of
from tiny_harness.core.task import SubTaskRow, TaskUsage
from tiny_harness.tui.approvals import is_decision_answer
from tiny_harness.tui.artifact_list import fold
from tiny_harness.tui.folded import FoldedTask, Line

#: How the ids of the answers given outside a turn begin (``core.reply_ids``).
REFUSED_PREFIX = refusal_id("")
COMMAND_PREFIX = command_reply_id("")


@dataclass
class TaskView(FoldedTask):
    """One task as the TUI shows it, and the fold that keeps it so (what the screens read of
    it is :class:`~tiny_harness.tui.folded.FoldedTask`'s). ``me`` is the participant the TUI
    acts as."""

    _seen: set[str] = field(default_factory=set)
    #: Each stream's artifact updates not yet followed by a status update, by stream.
    _held: dict[str, list[TaskArtifactUpdateEvent]] = field(default_factory=dict)
    #: Messages being sent from here, not shown yet, by id (:meth:`sending`).
    _sending: dict[str, Message] = field(default_factory=dict)

    # -- the fold ----------------------------------------------------------------------------

    @classmethod
    def of(cls, task: Task, me: str) -> TaskView:
        view = cls(task.id, me)
        view.take_task(task)
        return view

    def take_task(self, task: Task) -> None:
        """A whole task: its status, its extension, and its history (each message once); of a
        task older than the view, only the messages the view lacks."""
        version = version_of(task)
        if version is not None and self.version is not None and version < self.version:
            for message in task.history:
                self.take_message(message)
            return
        self.version = version if version is not None else self.version
        self._status(task.status.state, sub_state_of(task.metadata))
        if task.artifacts:
            # A task's artifacts are never taken away, and a send's opening task comes without
            # them (as without its history): one that carries none leaves the view's.
            self.artifacts = tuple(_copy(a) for a in task.artifacts)
        # A task with no readable extension shows its conversation only.
        with contextlib.suppress(InvalidTaskError):
            self.extension = extension_from_a2a(task)
        if self._asks(task):
            # A question put to a person is the status message its task was created with, in
            # no turn's journal: while it waits, it is the conversation's first line.
            self.take_message(task.status.message)
        for message in task.history:
            self.take_message(message)
        if task.status.HasField("message"):
            self._ended_with(task.status.message)
            self.take_message(task.status.message)

    def sending(self, message: Message) -> None:
        """``message`` is being sent from here. It shows once the gateway has taken it (its
        own stream's first event, when the sender takes it), or just before the harness's
        answer to it (``cmd-<id>``, ``refused-<id>``), which another stream (the followed one)
        can bring first."""
        self._sending[message.message_id] = message

    def take_message(self, message: Message) -> None:
        if not message.message_id or message.message_id in self._seen:
            return
        self._seen.add(message.message_id)
        self._sending.pop(message.message_id, None)
        for prefix in (COMMAND_PREFIX, REFUSED_PREFIX):
            if message.message_id.startswith(prefix):
                asked = self._sending.get(message.message_id.removeprefix(prefix))
                if asked is not None:
                    self.take_message(asked)
        if message.role == Role.ROLE_USER and not text_of(message):
            # A control request (a completion, a decision) as the history holds it: no words,
            # and the harness's answer after it says what it asked.
            return
        self.lines.append(Line(message.message_id, self._who(message), text_of(message)))

    def take_status(self, event: TaskStatusUpdateEvent) -> None:
        """A status update; of one not after the version the view has applied, only its
        message (the task's status is old news, but a send's stream ends with the gateway's
        note on the last change it showed: a refusal, a command's reply)."""
        version = version_of(event)
        if version is not None and self.version is not None and version <= self.version:
            if event.status.HasField("message"):
                self.take_message(event.status.message)
            return
        self.version = version if version is not None else self.version
        metadata = metadata_dict(event.metadata)
        self._status(event.status.state, sub_state_of(event.metadata))
        # A parent's status updates carry its sub-task rows, so its children's progress shows.
        extension = metadata.get(TASK_EXT_KEY)
        rows = extension.get("sub_tasks") if isinstance(extension, dict) else None
        if self.extension is not None and isinstance(rows, list):
            self.extension = self.extension.model_copy(
                update={"sub_tasks": tuple(SubTaskRow.model_validate(r) for r in rows)}
            )
        # ... and what the task has used: its ended turns, and the running turn so far (every
        # status update says both, so one without a running turn's usage clears it).
        if self.extension is not None and isinstance(extension, dict):
            used, running = extension.get("usage"), extension.get("turn_usage")
            update: dict[str, TaskUsage | None] = {
                "turn_usage": TaskUsage.model_validate(running)
                if isinstance(running, dict)
                else None
            }
            if isinstance(used, dict):
                update["usage"] = TaskUsage.model_validate(used)
            self.extension = self.extension.model_copy(update=update)
        if event.status.HasField("message"):
            self._ended_with(event.status.message)
            self.take_message(event.status.message)

    def take(self, event: StreamResponse, stream: str = "") -> None:
        """One event of a stream (``stream`` names it among the task's streams the view
        takes, for its artifact updates)."""
        if event.HasField("task"):
            if event.task.id == self.task_id:
                self._held.pop(stream, None)
                self.take_task(event.task)
        elif event.HasField("message"):
            self.take_message(event.message)
        elif event.HasField("artifact_update"):
            if event.artifact_update.task_id == self.task_id:
                self._held.setdefault(stream, []).append(event.artifact_update)
        elif event.HasField("status_update") and event.status_update.task_id == self.task_id:
            held = self._held.pop(stream, [])
            if self._is_news(event.status_update):
                for update in held:
                    self.artifacts = fold(self.artifacts, update)
            self.take_status(event.status_update)

    def ended(self, stream: str) -> None:
        """``stream`` ended: the chunks it held go (a resumed stream sends the artifacts
        changed since its version whole)."""
        self._held.pop(stream, None)

    def _is_news(self, event: TaskStatusUpdateEvent) -> bool:
        """Whether the update is after the version the view has applied (or either says
        none): its change, and the chunks before it, are new to the view."""
        version = version_of(event)
        return version is None or self.version is None or version > self.version

    def _status(self, state: int, sub_state: str | None) -> None:
        try:
            new = state_from_a2a(state)  # type: ignore[arg-type]
        except InvalidTaskError:
            return
        if new is TaskState.WORKING and self.working_since is None:
            self.working_since = self.clock()
        elif new is not TaskState.WORKING:
            self.working_since = None
        self.state = new
        self.sub_state = sub_state
        if not new.is_terminal:
            self.ending = None

    def _asks(self, task: Task) -> bool:
        """Whether ``task``'s status message is the question it waits to have answered (the
        agent's words there, not a command's reply)."""
        message = task.status.message
        return (
            task.status.HasField("message")
            and self.question() is not None
            and not self.state.is_terminal
            and not message.message_id.startswith(COMMAND_PREFIX)
            and not is_refusal(message)
        )

    def _ended_with(self, message: Message) -> None:
        """The status message of an ended task is how it ended (its answer, for a question)."""
        if self.state.is_terminal:
            self.ending = text_of(message)

    def _who(self, message: Message) -> str:
        if message.role == Role.ROLE_AGENT:
            # A refusal is the harness's own answer (the operator's role check), and so is the
            # answer to a decision on a call: neither is the agent's.
            return "harness" if is_refusal(message) or is_decision_answer(message) else "agent"
        sender = str(metadata_dict(message.metadata).get("sender") or "")
        return sender if sender and sender != self.me else "you"


def listed_view(task: Task, me: str, open_view: TaskView | None = None) -> TaskView:
    """A listed task as the tree shows it. The open task is shown as its top bar shows it: its
    state and sub-state come from ``open_view`` (the fold of the stream the top bar reads), not
    from the listing, which was read at another moment. Read from two sources, the two
    disagreed until the open task next changed (a tree saying WORKING beside a top bar saying
    INPUT_REQUIRED, when the listing was answered during the turn and the stream's next state
    repeated the header the listing was asked for)."""
    listed = TaskView.of(task, me)
    if open_view is None or open_view.task_id != task.id:
        return listed
    if open_view.extension is not None:
        return open_view
    # Nothing but its state streamed yet: the listing's goal and question, the stream's state.
    return replace(
        listed, state=open_view.state, sub_state=open_view.sub_state, ending=open_view.ending
    )


def version_of(item: Task | TaskStatusUpdateEvent) -> int | None:
    """The task's version ``item`` was cut from, or None when it carries none."""
    extension = metadata_dict(item.metadata).get(TASK_EXT_KEY)
    value = extension.get("version") if isinstance(extension, dict) else None
    return int(value) if isinstance(value, str) and value.isdigit() else None


def is_refusal(message: Message) -> bool:
    """Whether an agent-side message is a refusal, by the id the operator gives it (a refused
    message's notice, or a command's reply that the role check refused)."""
    if message.message_id.startswith(REFUSED_PREFIX):
        return True
    return message.message_id.startswith(COMMAND_PREFIX) and text_of(message).startswith("refused")


def text_of(message: Message) -> str:
    """A message's text parts; a data part (a control request) shown as what it asks: a
    decision as ``approve call_w1: fine``; a file as the line the harness names it by in a
    message's text (``[file chart.png (image/png, 1.2 KiB)]``), unless the text has it
    already (the history's text does)."""
    out: list[str] = []
    for part in message.parts:
        if part.HasField("text"):
            out.append(part.text)
        elif part.HasField("raw") or part.HasField("url"):
            line = file_line(part)
            if not any(line in said for said in out):
                out.append(line)
        elif part.HasField("data"):
            data = (
                metadata_dict(part.data.struct_value) if part.data.HasField("struct_value") else {}
            )
            action, call_id, reason = data.get("action"), data.get("call_id"), data.get("reason")
            if action in ("approve", "reject") and call_id:
                # As the harness's transcript reads a decision (MessageSpec.shown).
                out.append(f"{action} {call_id}" + (f": {reason}" if reason else ""))
            else:
                out.append(f"({action} requested)" if action else "(data)")
    return "\n".join(out)


def file_line(part: Part) -> str:
    """How a file part is named in text, as the harness names it (``Attachment.line``)."""
    if part.HasField("url"):
        file = Attachment(media_type=part.media_type or "?", name=part.filename, url=part.url)
    else:
        data = base64.b64encode(part.raw).decode()
        file = Attachment(media_type=part.media_type or "?", name=part.filename, data=data)
    return file.line()


def _copy(artifact: Artifact) -> Artifact:
    out = Artifact()
    out.CopyFrom(artifact)
    return out
