"""The ids of the answers a message gets outside any turn, and how a reader tells it was
answered.

A command runs without the model, and a refused message never reaches it, so no turn answers
either. The operator records the answer in the journal under an id made from the message's id
(below): a reader that holds the message's id knows which entry answers it, whichever front
end it is. A command's reply is also written as the task's status message, with the same id,
so whoever waits on the task (``kubectl harness``, an A2A client's stream or call) hears it in
the status event; a refusal is not (a stranger could otherwise write the status text of any
task), and is read from the journal.

The other question every front end asks, "has the turn that took my message ended?", is
answered here once too (:func:`turn_that_took`, :func:`turn_has_ended`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from tiny_harness.core.history import AckEntry, NoticeEntry, RecordEntry
from tiny_harness.core.turn import DrainEntry


def command_reply_id(message_id: str) -> str:
    """The journal entry (and status message) that answers the command sent as ``message_id``."""
    return f"cmd-{message_id}"


def refusal_id(message_id: str) -> str:
    """The journal notice that says why the message sent as ``message_id`` was refused."""
    return f"refused-{message_id}"


class _Record(Protocol):
    """A turn record as the readers hold it (``kube.journal.TurnRecord``)."""

    @property
    def turn(self) -> int: ...

    @property
    def entries(self) -> Sequence[RecordEntry]: ...


def turn_that_took(records: Iterable[_Record], message_id: str) -> int | None:
    """The turn whose journal took the message (drained it for the model, or acknowledged it
    as a command, a control or a refusal), or None while it waits in the inbox."""
    for record in records:
        for entry in record.entries:
            if isinstance(entry, DrainEntry) and any(m.id == message_id for m in entry.messages):
                return record.turn
            if isinstance(entry, AckEntry) and entry.message_id == message_id:
                return record.turn
    return None


def turn_that_drained(records: Iterable[_Record], message_id: str) -> int | None:
    """The turn that gave the message to the model, whose end is therefore its answer; None
    while it waits in the inbox, and for a message taken without the model (a command, a
    control, a refusal), whose answer is a notice (:func:`answer_outside_turn`) or the task's
    end. Such a message is acknowledged in the journal of a turn that may have ended long
    before, so "has that turn ended?" says nothing about whether its answer has come."""
    for record in records:
        for entry in record.entries:
            if isinstance(entry, DrainEntry) and any(m.id == message_id for m in entry.messages):
                return record.turn
    return None


def turn_has_ended(taken: int, *, turn: int, running: bool) -> bool:
    """Has turn ``taken`` ended, as of a status that shows turn ``turn`` with a runner
    (``running``) or without?

    Asked of each status a reader sees, never of the task as it is now: records only grow, so
    the turn that took a message can be read at any time, but whether that turn had ended is a
    property of the status being looked at (an older INPUT_REQUIRED, still in a stream, is from
    before the turn that took the message).
    """
    return turn > taken or (turn == taken and not running)


def answer_outside_turn(records: Iterable[_Record], message_id: str) -> NoticeEntry | None:
    """The notice that answers the message without a turn: its command's reply, or the reason
    it was refused; None when no such notice exists (yet, or because a turn takes it)."""
    ids = (command_reply_id(message_id), refusal_id(message_id))
    for record in records:
        for entry in record.entries:
            if isinstance(entry, NoticeEntry) and entry.id in ids:
                return entry
    return None


def refusal_of(records: Iterable[_Record], message_id: str) -> str | None:
    """The operator's reason for refusing the message, if it refused it."""
    notice = answer_outside_turn(records, message_id)
    return notice.text if notice is not None and notice.id == refusal_id(message_id) else None


@dataclass(frozen=True)
class Fate:
    """What the journal says of a message: the turn that took it (None: no turn yet) and the
    notice that answered it outside any turn (None: no such notice)."""

    taken: int | None
    answer: NoticeEntry | None


def fate_of(records: Sequence[_Record], message_id: str) -> Fate:
    """What the journal ``records`` say of the message now."""
    return Fate(turn_that_took(records, message_id), answer_outside_turn(records, message_id))


def answered_as_of(
    records: Iterable[_Record], message_id: str, *, turn: int, running: bool
) -> bool:
    """Had the turn that gave the message to the model ended, as of a status showing ``turn``
    with a runner (``running``) or without? Never, for a message taken without the model."""
    taken = turn_that_drained(records, message_id)
    return taken is not None and turn_has_ended(taken, turn=turn, running=running)
