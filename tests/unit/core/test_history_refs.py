"""A participant's message is journaled once per turn: the history delta refers to the drain
that holds it (core/history.py: by_reference, resolved)."""

from __future__ import annotations

import json

import pytest

from tiny_harness.core.history import (
    FromDrain,
    HistoryDelta,
    apply_delta,
    by_reference,
    history_delta,
    resolved,
)
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.turn import DrainEntry, InboundMessage

LONG = "Please read the whole release plan. " * 2000
EARLIER = (ChatMessage(role="user", content="Hi."), ChatMessage(role="assistant", content="Hello."))


def drain(entry_id: str, *texts: str) -> DrainEntry:
    return DrainEntry(
        id=entry_id,
        messages=tuple(
            InboundMessage(id=f"{entry_id}-{i}", content=t, sender="alice")
            for i, t in enumerate(texts)
        ),
    )


def test_a_drained_message_is_stored_in_the_delta_as_a_reference_and_read_back_whole() -> None:
    drained = drain("drain-1", LONG)
    after = (
        *EARLIER,
        ChatMessage(role="user", content=LONG),
        ChatMessage(role="assistant", content="Read it."),
    )
    delta = history_delta(EARLIER, after)

    stored = by_reference(delta, [drained])

    assert stored.messages[0] == FromDrain(drain="drain-1", index=0)
    assert LONG not in json.dumps(stored.model_dump(mode="json"))
    assert len(json.dumps(stored.model_dump(mode="json"))) < 200
    back = resolved(
        HistoryDelta.model_validate(stored.model_dump(mode="json")), {"drain-1": drained}
    )
    assert apply_delta(EARLIER, back) == after


def test_the_same_text_twice_refers_to_each_drained_message_once_in_order() -> None:
    first, second = drain("d1", "Again."), drain("d2", "Again.")
    after = (
        ChatMessage(role="user", content="Again."),
        ChatMessage(role="assistant", content="Yes."),
        ChatMessage(role="user", content="Again."),
        ChatMessage(role="user", content="Again."),
    )
    stored = by_reference(history_delta((), after), [first, second])
    assert stored.messages == (
        FromDrain(drain="d1", index=0),
        after[1],
        FromDrain(drain="d2", index=0),
        after[3],  # a third copy the drains do not hold is kept as it is
    )
    assert resolved(stored, {"d1": first, "d2": second}).messages == after


def test_messages_the_drains_do_not_hold_are_kept_as_they_are() -> None:
    after = (ChatMessage(role="user", content="Summary of earlier turns."),)
    stored = by_reference(history_delta((), after), [drain("d1", "something else")])
    assert stored.messages == after


def test_a_reference_to_a_drain_the_turn_does_not_hold_is_an_error_not_a_hole() -> None:
    stored = HistoryDelta(keep=0, messages=(FromDrain(drain="gone", index=0),))
    with pytest.raises(ValueError, match="drain 'gone'"):
        resolved(stored, {})
    with pytest.raises(ValueError, match="resolved before it is applied"):
        apply_delta((), stored)
