"""How every front end knows a message was answered: the ids of the answers given outside a
turn, and whether the turn that took a message had ended *as of a given status*.

The second question is the one the gateway used to get wrong: it read the records as they are
now and compared them with an event from before, so an old INPUT_REQUIRED still in a stream
ended a send whose message a later turn had only just taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tiny_harness.core.history import AckEntry, NoticeEntry, RecordEntry
from tiny_harness.core.reply_ids import (
    answer_outside_turn,
    command_reply_id,
    refusal_id,
    refusal_of,
    turn_has_ended,
    turn_that_drained,
    turn_that_took,
)
from tiny_harness.core.turn import DrainEntry, InboundMessage


@dataclass
class Record:
    turn: int
    entries: list[RecordEntry] = field(default_factory=list)


def drained(*ids: str) -> DrainEntry:
    return DrainEntry(
        id=f"drain-{ids[0]}",
        messages=tuple(InboundMessage(id=i, sender="alice", content="hi") for i in ids),
    )


RECORDS = [
    Record(1, [drained("m1")]),
    Record(2, [drained("m2", "m3"), NoticeEntry(id="n", text="note")]),
    Record(3, [AckEntry(id="a", message_id="c1", sender="alice", text="/status")]),
]


@pytest.mark.parametrize(
    ("message", "turn"), [("m1", 1), ("m2", 2), ("m3", 2), ("c1", 3), ("unseen", None)]
)
def test_the_turn_that_took_a_message_is_the_one_whose_journal_drained_or_acked_it(
    message: str, turn: int | None
) -> None:
    assert turn_that_took(RECORDS, message) == turn


@pytest.mark.parametrize(
    ("status_turn", "running", "ended"),
    [
        (1, False, False),  # an older turn's end: still in a stream, not ours
        (2, True, False),  # our turn, still running
        (2, False, True),  # our turn, ended
        (3, True, True),  # a later turn runs: ours ended before it
        (3, False, True),
    ],
)
def test_whether_the_turn_had_ended_is_a_question_about_the_status_seen(
    status_turn: int, running: bool, ended: bool
) -> None:
    assert turn_has_ended(2, turn=status_turn, running=running) is ended


def test_answers_given_outside_a_turn_have_ids_made_from_the_message_id() -> None:
    assert command_reply_id("m-7") == "cmd-m-7"
    assert refusal_id("m-7") == "refused-m-7"
    assert command_reply_id("m-7") != command_reply_id("m-8")


@pytest.mark.parametrize(("message", "turn"), [("m1", 1), ("m3", 2), ("c1", None), ("x", None)])
def test_only_a_message_given_to_the_model_has_a_turn_whose_end_answers_it(
    message: str, turn: int | None
) -> None:
    """A command is acknowledged in the journal of a turn that ended before it came: that
    turn's end is not its answer (a stream once ended a /status early on a row change)."""
    assert turn_that_drained(RECORDS, message) == turn


def test_the_answer_outside_a_turn_is_the_command_reply_or_the_refusal_of_that_message() -> None:
    reply = NoticeEntry(id=command_reply_id("c1"), text="effort: high")
    refusal = NoticeEntry(id=refusal_id("c2"), text="refused: bob is a watcher")
    records = [*RECORDS, Record(3, [reply, refusal])]

    assert answer_outside_turn(records, "c1") == reply
    assert answer_outside_turn(records, "c2") == refusal
    assert answer_outside_turn(records, "m1") is None
    assert refusal_of(records, "c2") == "refused: bob is a watcher"
    assert refusal_of(records, "c1") is None  # answered, not refused
