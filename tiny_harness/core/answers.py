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
from typing import Protocol

from tiny_harness.core.history import AckEntry, RecordEntry
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


def turn_has_ended(taken: int, *, turn: int, running: bool) -> bool:
    """Has turn ``taken`` ended, as of a status that shows turn ``turn`` with a runner
    (``running``) or without?

    Asked of each status a reader sees, never of the task as it is now: records only grow, so
    the turn that took a message can be read at any time, but whether that turn had ended is a
    property of the status being looked at (an older INPUT_REQUIRED, still in a stream, is from
    before the turn that took the message).
    """
    return turn > taken or (turn == taken and not running)
