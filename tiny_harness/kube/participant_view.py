"""A stored task as its participants see it: the one reading of it that every front end (the
A2A gateway, ``kubectl harness``) uses.

The questions the front ends ask of a task are answered here, or in :mod:`tiny_harness.core`
below it, and nowhere else:

- what the task is (:func:`spec_of`, :func:`status_of`, :func:`state_of`, :func:`lifecycle_of`),
  read leniently: a plan the operator rejected is left out of the spec, and status keys a newer
  operator added are ignored, so an older front end still shows the task;
  :class:`ParticipantView` is the same reading as one typed value, each part parsed at most
  once, which a front end makes at the edge of a request and passes inward instead of reading
  the stored object again;
- who is on it (:func:`role_of`; someone not on it is told it does not exist), and whether it
  has ended for good (:func:`ended_for_good`; a failed conversation has not);
- the conversation as a participant sees it (:func:`conversation`): the transcript of the turn
  journals, refused messages with their reasons, then the messages no turn has taken yet;
  never the words of someone who may not speak to the task;
- "may this participant end the task?" is :func:`tiny_harness.core.speakers.refuse_ending`,
  and "has the turn that took my message ended?" is :mod:`tiny_harness.core.reply_ids`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final

from pydantic import ValidationError

from tiny_harness.core.decide import resumable
from tiny_harness.core.history import (
    AckEntry,
    NoticeEntry,
    RecordEntry,
    TranscriptMessage,
    acknowledged,
    transcript,
)
from tiny_harness.core.inbox import MessageSpec
from tiny_harness.core.speakers import refuse_speaker
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Lifecycle, Role, TaskSpec, TaskStatus
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.kube.names import context_id_of

Obj = dict[str, Any]

#: The status keys this version knows, by field name and by alias.
STATUS_KEYS: Final = frozenset(
    key for name, field in TaskStatus.model_fields.items() for key in (name, field.alias or name)
)


def spec_of(obj: Obj) -> TaskSpec | None:
    """The spec as the task model reads it; a plan the operator rejected is left out. None
    when even that does not read (the API server's schema makes this rare)."""
    raw = dict(obj.get("spec") or {})
    try:
        return TaskSpec.model_validate(raw)
    except ValidationError:
        raw.pop("plan", None)
    try:
        return TaskSpec.model_validate(raw)
    except ValidationError:
        return None


def state_of(obj: Obj) -> TaskState:
    """The task's A2A state; submitted until the operator has written one."""
    raw = (obj.get("status") or {}).get("state")
    try:
        return TaskState(raw) if raw else TaskState.SUBMITTED
    except ValueError:
        return TaskState.SUBMITTED


def status_of(obj: Obj) -> TaskStatus:
    """The status the operator wrote; keys a newer operator added are ignored, a field that
    does not read is left out (the rest still shows: the turn, whether one runs), and a
    status that does not read even so shows as its state alone."""
    raw = obj.get("status") or {}
    known = {k: v for k, v in raw.items() if k in STATUS_KEYS}
    try:
        return TaskStatus.model_validate(known)
    except ValidationError as exc:
        unread = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
    try:
        return TaskStatus.model_validate({k: v for k, v in known.items() if k not in unread})
    except ValidationError:
        return TaskStatus(state=state_of(obj))


def lifecycle_of(obj: Obj) -> Lifecycle:
    """The task's lifecycle as the operator recorded it, or as its spec implies."""
    raw = (obj.get("status") or {}).get("lifecycle")
    if raw in {lifecycle.value for lifecycle in Lifecycle}:
        return Lifecycle(raw)
    parent = (obj.get("spec") or {}).get("parent")
    return Lifecycle.DELEGATED if parent else Lifecycle.CONVERSATION


def role_of(obj: Obj, participant: str | None) -> Role | None:
    """The participant's role on the task, or None when they are not on it (or the spec does
    not read, which shows the task to no one rather than to everyone)."""
    if participant is None:
        return None
    spec = spec_of(obj)
    return spec.role_of(participant) if spec is not None else None


def ended_for_good(obj: Obj) -> bool:
    """Has the task ended for good? A failed conversation has not: a participant's next
    message resumes it (the operator's rule, :func:`tiny_harness.core.decide.resumable`)."""
    state = state_of(obj)
    return state.is_terminal and not resumable(state, lifecycle_of(obj))


class ParticipantView:
    """A stored task as its participants see it, read once: what :func:`spec_of`,
    :func:`status_of` and :func:`lifecycle_of` say of ``obj``, each parsed at most once, when
    first asked, however many layers ask. The operator's fields (the turn, whether one runs)
    are read from the typed status, never from the object's raw status."""

    def __init__(self, obj: Obj) -> None:
        self.obj = obj

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"].get("uid") or "")

    @property
    def resource_version(self) -> str:
        return str(self.obj["metadata"]["resourceVersion"])

    @property
    def context_id(self) -> str:
        return context_id_of(self.obj)

    @cached_property
    def spec(self) -> TaskSpec | None:
        """:func:`spec_of`: None when the spec does not read."""
        return spec_of(self.obj)

    @cached_property
    def status(self) -> TaskStatus:
        """:func:`status_of`."""
        return status_of(self.obj)

    @property
    def state(self) -> TaskState:
        return self.status.state

    @property
    def turn(self) -> int:
        """The number of the task's latest turn (0: none yet)."""
        return self.status.turn

    @property
    def running(self) -> bool:
        """Whether a turn runs now (the runner lease is held)."""
        return self.status.runner is not None

    @property
    def lifecycle(self) -> Lifecycle:
        """:func:`lifecycle_of`, from the typed status and spec."""
        if self.status.lifecycle is not None:
            return self.status.lifecycle
        if self.spec is not None:
            return self.spec.default_lifecycle
        return lifecycle_of(self.obj)

    def role_of(self, participant: str | None) -> Role | None:
        """:func:`role_of`: None for someone not on the task, or a spec that does not read."""
        if participant is None or self.spec is None:
            return None
        return self.spec.role_of(participant)

    @property
    def ended_for_good(self) -> bool:
        """:func:`ended_for_good`: a failed conversation has not."""
        state = self.state
        return state.is_terminal and not resumable(state, self.lifecycle)


@dataclass(frozen=True)
class Said:
    """One message of the conversation. ``sent`` is the message as sent, while no turn has
    taken it yet (its parts, for a front end that shows more than text)."""

    message: TranscriptMessage
    sent: MessageSpec | None = None

    @property
    def pending(self) -> bool:
        return self.sent is not None


def pending_text(spec: MessageSpec) -> str:
    return spec.shown


def conversation(
    records: Iterable[TurnRecord], messages: Iterable[StoredMessage], spec: TaskSpec | None
) -> list[Said]:
    """The transcript of the task's turn journals (refusals included, with their reasons), then
    the messages no turn has taken yet, in the order they were sent.

    A message from someone who may not speak to the task (``spec``: not on it, not its parent)
    is left out, refused or waiting, and so is the notice of its refusal: anyone who may write
    messages in the namespace can write one owned by any task, and its words are not the
    participants' to read. ``spec`` None (it does not read) shows no one's."""
    entries = [e for r in records for e in r.entries]
    taken = acknowledged(entries)
    strangers = {
        e.message_id
        for e in entries
        if isinstance(e, AckEntry) and not _speaks(spec, e.sender or "", e.message_id)
    }
    entries = [e for e in entries if not _of_strangers(e, strangers)]
    out = [Said(m) for m in transcript(entries)]
    out += [
        Said(
            TranscriptMessage(
                role="user",
                message_id=m.spec.message_id,
                text=pending_text(m.spec),
                sender=m.spec.sender,
            ),
            sent=m.spec,
        )
        for m in messages
        if m.spec.message_id not in taken and _speaks(spec, m.spec.sender, m.spec.message_id)
    ]
    return out


def _speaks(spec: TaskSpec | None, sender: str, message_id: str) -> bool:
    return spec is not None and refuse_speaker(spec, sender, message_id) is None


def _of_strangers(entry: RecordEntry, strangers: set[str]) -> bool:
    """Is ``entry`` a stranger's refused message, or the notice of its refusal?"""
    if isinstance(entry, AckEntry):
        return entry.message_id in strangers
    return isinstance(entry, NoticeEntry) and entry.metadata.get("refused") in strangers
