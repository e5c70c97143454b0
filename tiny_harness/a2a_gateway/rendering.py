"""How a stored task looks to an A2A client: ``HarnessTask`` objects rendered as A2A protocol
objects, and inbound A2A messages read as ``HarnessMessage`` specs.

The gateway keeps nothing, so every ``Task`` and ``TaskStatusUpdateEvent`` it sends is cut from
an object the API server returned, through :func:`~tiny_harness.core.a2a_task.task_to_a2a`.
Versions are ``resourceVersion`` values (:class:`ResourceVersion`); a task's context id is an
annotation written when the gateway created it (the task name otherwise); its last-update time
is the latest write the API server recorded in ``managedFields``.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from a2a.helpers.proto_helpers import get_data_parts
from a2a.server.cluster import TaskVersion, VersionedEvent
from a2a.types import Artifact, Message, Part, Role, Task, TaskStatusUpdateEvent
from a2a.utils.errors import InvalidParamsError
from pydantic import ValidationError

from tiny_harness.a2a_gateway.waiting import Note
from tiny_harness.core.a2a_task import state_to_a2a, status_to_a2a, task_to_a2a
from tiny_harness.core.artifact_index import ArtifactRow
from tiny_harness.core.attachments import OPAQUE_TYPE, Attachment, media_type_of, refuse_file
from tiny_harness.core.control_envelope import control_part
from tiny_harness.core.extensions import STATUS_EXT_KEY, TASK_EXT_KEY
from tiny_harness.core.history import TranscriptMessage
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.reason_codes import REASON_KEY, ReasonCode, coded
from tiny_harness.core.sizes import FILE_BYTES, MESSAGE_BYTES
from tiny_harness.core.states import TaskState
from tiny_harness.core.status_ext import metadata_dict, status_metadata, sub_state_of
from tiny_harness.core.task import TaskSpec, invalid_task_error
from tiny_harness.kube.client import Obj
from tiny_harness.kube.participant_view import ParticipantView

TERMINAL_STATES: Final = frozenset(state_to_a2a(s) for s in TaskState if s.is_terminal)
INTERRUPTED_STATES: Final = frozenset(
    state_to_a2a(s) for s in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED)
)


class ResourceVersion(TaskVersion):
    """A task version that is a Kubernetes ``resourceVersion``.

    The API conventions call it opaque, but every etcd-backed API server hands out etcd's
    revision, a global counter; the SDK orders versions, so they are compared as integers.
    """

    __slots__ = ()

    def __init__(self, resource_version: str | int) -> None:
        super().__init__(int(resource_version))

    @property
    def resource_version(self) -> str:
        return str(self._value)


def task_version(obj: Obj) -> ResourceVersion:
    """The version an object last changed at: its resourceVersion."""
    return ResourceVersion(obj["metadata"]["resourceVersion"])


def viewed(task: ParticipantView | Obj) -> ParticipantView:
    """``task`` as the typed view every renderer reads (a stored object is read here once)."""
    return task if isinstance(task, ParticipantView) else ParticipantView(task)


def spec_of(task: ParticipantView | Obj) -> TaskSpec:
    """The spec as every front end reads it (:attr:`.participant_view.ParticipantView.spec`); a spec
    that does not read at all is a ValidationError here, since a task cannot be rendered
    without."""
    view = viewed(task)
    if view.spec is None:
        return TaskSpec.model_validate(view.obj.get("spec") or {})  # raises, naming the field
    return view.spec


def updated_at(obj: Obj) -> dt.datetime | None:
    """When the API server last recorded a write to the task (second resolution)."""
    meta = obj["metadata"]
    times = [e["time"] for e in meta.get("managedFields") or () if e.get("time")]
    stamp = max(times, default=meta.get("creationTimestamp"))
    if not stamp:
        return None
    return dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))


def render_task(
    task: ParticipantView | Obj, history: Iterable[Message] = (), artifacts: Iterable[Artifact] = ()
) -> Task:
    """The A2A ``Task`` a stored task is, with the given history and artifacts, carrying the
    version it was read at (``version`` in the task extension)."""
    view = viewed(task)
    return task_to_a2a(
        view.name,
        view.context_id,
        spec_of(view),
        view.status,
        history=history,
        artifacts=artifacts,
        timestamp=updated_at(view.obj),
        version=view.resource_version,
    )


@dataclass(frozen=True)
class TaskChange(VersionedEvent):
    """A change as a subscriber sees it, and where the task's turns stood at it: whether the
    turn that took a message had ended *as of this change* is a question about the change,
    not about the task as it is by the time the subscriber asks
    (:func:`tiny_harness.core.reply_ids.turn_has_ended`).

    ``key`` and ``progress`` are the event's :func:`status_key` and :func:`progress_key`,
    read from the stored status as the event is cut (:func:`change_of`), once for every
    subscriber of the task; :meth:`of` reads them from an event."""

    turn: int = 0
    running: bool = False
    key: StatusKey = field(kw_only=True)
    progress: ProgressKey = field(kw_only=True)
    #: The task's artifact index at the change: a stream tells the chunks it adds
    #: (:class:`.artifacts.ArtifactFollower`).
    artifacts: tuple[ArtifactRow, ...] = field(default=(), kw_only=True)

    @classmethod
    def of(
        cls, event: TaskStatusUpdateEvent, version: TaskVersion, *, turn: int, running: bool
    ) -> TaskChange:
        """The change ``event`` is, its keys read from it."""
        return cls(
            event,
            version,
            turn=turn,
            running=running,
            key=status_key(event),
            progress=progress_key(event),
        )

    @property
    def revision(self) -> int:
        """The change's resourceVersion, as a number to order by."""
        version = self.version
        assert isinstance(version, ResourceVersion)
        return int(version.resource_version)


def change_of(task: ParticipantView | Obj) -> TaskChange:
    """A change of a stored task as every stream shows it: rendered once, whoever follows, with
    its keys, its turn and its artifact index read from the typed status rather than from the
    event cut from it (the spec is not read)."""
    view = viewed(task)
    event, key, progress = _cut(view)
    return TaskChange(
        event,
        task_version(view.obj),
        turn=view.turn,
        running=view.running,
        key=key,
        progress=progress,
        artifacts=view.status.artifacts,
    )


def artifact_rows(raw: object) -> tuple[ArtifactRow, ...]:
    """An artifact index as stored (``status.artifacts``) or carried (the task extension's
    ``artifacts``); one that does not read is no index (the status was checked when written)."""
    if not isinstance(raw, list) or not raw:
        return ()
    try:
        return tuple(ArtifactRow.model_validate(r) for r in raw)
    except ValidationError:
        return ()


def artifacts_of(task: Task) -> tuple[ArtifactRow, ...]:
    """The artifact index a rendered task carries in its task extension."""
    return artifact_rows(_extension(task, "artifacts"))


def status_event(task: Task) -> TaskStatusUpdateEvent:
    """The status update a subscriber sees for ``task``: its status, the sub-state under the
    status extension key of the event's metadata, and under the task extension key: the
    sub-task rows when it has sub-tasks (``sub_tasks``), so a parent's stream shows its
    children's progress; what its ended turns used (``usage``); while a turn runs, what
    that turn has used so far (``turn_usage``, renewed with the turn's lease), so a client can
    show a long turn's progress (:func:`progress_key`); the calls that wait for approval
    (``approvals``), so a stream shows what to decide without reading the task again; and the
    version it was cut from (``version``), which a client resumes a stream from. Only those
    keys of the task's metadata are read (:func:`_extension`), not the whole extension."""
    metadata = status_metadata(_sub_state(task))
    carried: dict[str, Any] = {}
    rows = sub_task_rows(task)
    if rows:
        carried["sub_tasks"] = rows
    for key in ("usage", "turn_usage", "approvals"):
        used = _extension(task, key)
        if isinstance(used, dict) or (isinstance(used, list) and used):
            carried[key] = used
    version = _extension(task, "version")
    if isinstance(version, str):
        carried["version"] = version
    if carried:
        metadata[TASK_EXT_KEY] = carried
    return TaskStatusUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        status=task.status,
        metadata=metadata,
    )


def status_event_of(task: ParticipantView | Obj) -> TaskStatusUpdateEvent:
    """:func:`status_event` of :func:`render_task` of ``task``, the same event, cut from the
    status alone: a change's event is made for every change of a followed task, and neither
    the spec nor the task's whole metadata is read for it."""
    return _cut(viewed(task))[0]


def _cut(view: ParticipantView) -> tuple[TaskStatusUpdateEvent, StatusKey, ProgressKey]:
    """:func:`status_event_of`, with its :func:`status_key` and :func:`progress_key` read from
    the plain data the event is made of."""
    obj = view.obj
    name = view.name
    context_id = view.context_id
    status = view.status
    metadata = status_metadata(status.sub_state)
    carried: dict[str, Any] = {}
    rows = [row.model_dump(mode="json", exclude_none=True) for row in status.sub_tasks]
    if rows:
        carried["sub_tasks"] = rows
    for part, used in (("usage", status.usage), ("turn_usage", status.turn_usage)):
        if used is not None:
            carried[part] = used.model_dump(mode="json", exclude_none=True)
    if status.approvals:
        carried["approvals"] = [
            a.model_dump(mode="json", exclude_none=True) for a in status.approvals
        ]
    carried["version"] = str(obj["metadata"]["resourceVersion"])
    metadata[TASK_EXT_KEY] = carried
    a2a_status = status_to_a2a(name, context_id, status, updated_at(obj))
    event = TaskStatusUpdateEvent(
        task_id=name, context_id=context_id, status=a2a_status, metadata=metadata
    )
    sub_state = metadata.get(STATUS_EXT_KEY, {}).get("sub_state")
    text = "".join(p.text for p in a2a_status.message.parts)
    key = (a2a_status.state, sub_state, text, a2a_status.message.message_id, _row_keys(rows))
    return event, key, _progress(carried.get("turn_usage") or {})


def as_of(task: Task, event: TaskStatusUpdateEvent) -> Task:
    """``task`` with the status (and sub-state) of ``event``: a unary send answers with the
    status its wait ended on."""
    out = Task()
    out.CopyFrom(task)
    out.status.CopyFrom(event.status)
    if STATUS_EXT_KEY in event.metadata:
        out.metadata[STATUS_EXT_KEY] = event.metadata[STATUS_EXT_KEY]
    return out


def noted(last: TaskStatusUpdateEvent, note: Note) -> TaskStatusUpdateEvent:
    """``last`` (the task's status as last seen) with the gateway's note as its message, and
    the note's code under ``reason`` in its task extension: how a send's wait ends when no
    status event ended it (:mod:`.waiting`)."""
    event = TaskStatusUpdateEvent()
    event.CopyFrom(last)
    event.metadata.get_or_create_struct(TASK_EXT_KEY)[REASON_KEY] = note.reason.value
    event.status.message.CopyFrom(
        Message(
            message_id=note.message_id,
            task_id=last.task_id,
            context_id=last.context_id,
            role=Role.ROLE_AGENT,
            parts=[Part(text=note.text)],
        )
    )
    return event


def _extension(item: Task | TaskStatusUpdateEvent, key: str) -> Any:
    """``key`` of the task extension in ``item``'s metadata, as plain data (None: absent):
    that value alone is read out of the protobuf, not the whole extension."""
    extension = item.metadata.fields.get(TASK_EXT_KEY)
    if extension is None or extension.WhichOneof("kind") != "struct_value":
        return None
    value = extension.struct_value.fields.get(key)
    return None if value is None else _plain(value)


def _plain(value: Any) -> Any:
    """A protobuf ``Value`` as plain data."""
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return metadata_dict(value.struct_value)
    if kind == "list_value":
        return [_plain(v) for v in value.list_value.values]
    if kind == "null_value" or kind is None:
        return None
    return getattr(value, kind)


def _sub_state(item: Task | TaskStatusUpdateEvent) -> str | None:
    """The sub-state ``item`` carries (:func:`.status_ext.sub_state_of`), its key alone read."""
    value = item.metadata.fields.get(STATUS_EXT_KEY)
    if value is None:
        return None
    return sub_state_of({STATUS_EXT_KEY: _plain(value)})


def sub_task_rows(item: Task | TaskStatusUpdateEvent) -> list[dict[str, Any]]:
    """The sub-task rows a task or event carries in its task extension metadata."""
    rows = _extension(item, "sub_tasks")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def version_of(item: Task | TaskStatusUpdateEvent) -> int | None:
    """The version a task or event was cut from (``version`` in its task extension)."""
    value = _extension(item, "version")
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _extension_part(item: Task | TaskStatusUpdateEvent, key: str) -> dict[str, Any]:
    value = _extension(item, key)
    return value if isinstance(value, dict) else {}


def turn_usage_of(item: Task | TaskStatusUpdateEvent) -> dict[str, Any]:
    """What the running turn has used so far, as a task or event says (``turn_usage``), or {}
    when no turn runs."""
    return _extension_part(item, "turn_usage")


def is_terminal(item: Task | TaskStatusUpdateEvent) -> bool:
    """Whether the task has ended (completed, cancelled, failed or rejected)."""
    return item.status.state in TERMINAL_STATES


def is_interrupted(item: Task | TaskStatusUpdateEvent) -> bool:
    """Whether the task waits for a participant (input or auth required)."""
    return item.status.state in INTERRUPTED_STATES


StatusKey = tuple[int, str | None, str, str, tuple[tuple[str, str, str], ...]]
ProgressKey = tuple[int, int]


def status_key(item: Task | TaskStatusUpdateEvent) -> StatusKey:
    """What a participant sees change: the state, the sub-state, the status message (its text
    and id: two equal replies are two messages), and each sub-task's state and sub-state.

    A running turn's progress is not part of it (:func:`progress_key`): a wait for an answer
    ends on these, and progress must never end or shape one."""
    message = item.status.message
    text = "".join(p.text for p in message.parts)
    rows = _row_keys(sub_task_rows(item))
    return item.status.state, _sub_state(item), text, message.message_id, rows


def _row_keys(rows: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (str(r.get("task_id")), str(r.get("state")), str(r.get("sub_state"))) for r in rows
    )


def progress_key(item: Task | TaskStatusUpdateEvent) -> ProgressKey:
    """A running turn's progress as a subscriber sees it change: its model calls and tool
    calls so far ((0, 0) when no turn runs)."""
    return _progress(turn_usage_of(item))


def _progress(used: Mapping[str, Any]) -> ProgressKey:
    return int(used.get("model_calls") or 0), int(used.get("tool_calls") or 0)


#: The message metadata key naming who sent a participant's message, so that every reader of
#: a task shared by several people (the TUI, the web UI) can tell whose words each are.
SENDER_KEY = "sender"


def history_message(task_id: str, context_id: str, entry: TranscriptMessage) -> Message:
    """One transcript entry as an A2A message; a participant's names its sender."""
    metadata = dict(entry.metadata)
    if entry.sender:
        metadata[SENDER_KEY] = entry.sender
    return Message(
        message_id=entry.message_id,
        task_id=task_id,
        context_id=context_id,
        role=Role.ROLE_USER if entry.role == "user" else Role.ROLE_AGENT,
        parts=[Part(text=entry.text), *(file_part(f) for f in entry.files)],
        metadata=metadata or None,
    )


def pending_message(task_id: str, context_id: str, spec: MessageSpec) -> Message:
    """A message sent but not yet taken by a turn, as the sender sent it."""
    if spec.control == "complete":
        parts = [control_part("complete")]
    elif spec.control is not None:
        parts = [Part(text=f"/{spec.control}")]
    else:
        parts = [_a2a_part(p) for p in spec.parts]
    # The sender is the one the API server bound to the message, whatever its metadata says.
    return Message(
        message_id=spec.message_id,
        task_id=task_id,
        context_id=context_id,
        role=Role.ROLE_USER,
        parts=parts,
        metadata={**spec.metadata, SENDER_KEY: spec.sender},
    )


def _a2a_part(part: MessagePart) -> Part:
    if part.text is not None:
        return Part(text=part.text)
    if part.attachment is not None:
        return file_part(part.attachment)
    out = Part(media_type=part.media_type or "")
    out.data.struct_value.update(part.data or {})
    return out


def file_part(file: Attachment) -> Part:
    """A file as an A2A part: its bytes (or URL), media type and name."""
    if file.url is not None:
        return Part(url=file.url, media_type=file.media_type, filename=file.name)
    return Part(
        raw=base64.b64decode(file.data or ""), media_type=file.media_type, filename=file.name
    )


def message_parts(message: Message) -> tuple[MessagePart, ...]:
    """The parts of an inbound A2A message as the inbox stores them: text, a JSON object with
    its media type, or a file (bytes or a URL) with its media type and name. A part that is
    none of these, or malformed, is refused, naming the part."""
    parts: list[MessagePart] = []
    for index, part in enumerate(message.parts):
        kind = part.WhichOneof("content")
        if kind == "text":
            parts.append(MessagePart(text=part.text))
        elif kind == "data":
            value = get_data_parts([part])[0]
            if not isinstance(value, Mapping):
                raise coded(
                    InvalidParamsError,
                    ReasonCode.INVALID_MESSAGE,
                    f"message.parts[{index}]: a data part must hold a JSON object",
                )
            try:
                parts.append(MessagePart(data=dict(value), media_type=part.media_type or None))
            except ValidationError as exc:  # past a bound (core/json_bounds.py)
                problem = invalid_task_error(exc, prefix=f"message.parts[{index}]")
                raise coded(InvalidParamsError, ReasonCode.INVALID_MESSAGE, str(problem)) from None
        elif kind in ("raw", "url"):
            parts.append(_file_part(index, part))
        else:
            raise coded(
                InvalidParamsError,
                ReasonCode.INVALID_MESSAGE,
                f"message.parts[{index}]: an empty part is not taken; send text, JSON data with "
                "its media type, or a file",
            )
    return tuple(parts)


def _file_part(index: int, part: Part) -> MessagePart:
    """An inbound file part as stored: any kind is taken (what a model is given of it is
    decided at the turn, ``core/attachments.py``); a malformed URL or a file past the message's
    bound is refused, naming the part. A part without a media type is given the one its file
    name implies, else ``application/octet-stream``."""
    media_type = part.media_type or (media_type_of(part.filename) if part.filename else OPAQUE_TYPE)
    data = base64.b64encode(part.raw).decode() if part.HasField("raw") else None
    url = part.url if part.HasField("url") else None
    reason = refuse_file(data=data, url=url)
    if reason is not None:
        raise coded(
            InvalidParamsError, ReasonCode.INVALID_MESSAGE, f"message.parts[{index}]: {reason}"
        )
    if data is not None and len(data) > MESSAGE_BYTES:
        named = f"the file {part.filename}" if part.filename else "the file"
        raise coded(
            InvalidParamsError,
            ReasonCode.MESSAGE_TOO_LARGE,
            f"message.parts[{index}]: {named} is {len(part.raw) // 1024} KiB; this installation "
            f"takes files of at most {FILE_BYTES // 1024} KiB in a message and has no file store "
            "for larger ones: send an https URL to it (images and PDFs), or a smaller file",
        )
    return MessagePart(raw=data, url=url, media_type=media_type, filename=part.filename or None)


def plain_metadata(message: Message) -> dict[str, Any]:
    return metadata_dict(message.metadata) if message.HasField("metadata") else {}
