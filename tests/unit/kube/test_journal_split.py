"""A turn's journal bigger than one chunk (kube/journal.py): its entries are split into
chunks in order, and its history delta into consecutive deltas whose application in order is
the whole delta's, and stays so when a piece is applied again (a turn's end written twice)."""

from __future__ import annotations

import pytest

from tiny_harness.core.history import HistoryDelta, apply_delta, model_history
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.sizes import CHUNK_BYTES
from tiny_harness.kube.journal import EntryTooLargeError, _split_entries, _split_history

BEFORE = tuple(ChatMessage(role="user", content=f"earlier {i}") for i in range(5))


def big(role: str, kib: int, tag: str) -> ChatMessage:
    return ChatMessage(role=role, content=tag + "x" * (kib * 1024))  # type: ignore[arg-type]


def test_a_delta_that_fits_stays_one_piece() -> None:
    delta = HistoryDelta(keep=5, messages=(big("user", 10, "a"),))
    assert _split_history(delta) == [delta]


def test_a_delta_bigger_than_a_chunk_is_consecutive_pieces_that_make_the_same_history() -> None:
    messages = (big("user", 250, "q"), big("assistant", 600, "r"), big("user", 300, "s"))
    delta = HistoryDelta(keep=3, messages=messages)

    pieces = _split_history(delta)

    assert len(pieces) == 3
    assert all(len(p.model_dump_json()) < CHUNK_BYTES for p in pieces)
    assert model_history([HistoryDelta(keep=0, messages=BEFORE), *pieces]) == apply_delta(
        BEFORE, delta
    )


def test_a_piece_applied_again_changes_nothing() -> None:
    delta = HistoryDelta(keep=2, messages=(big("user", 500, "q"), big("assistant", 500, "r")))
    first, second = _split_history(delta)
    whole = apply_delta(BEFORE, delta)
    # The end written twice: the first attempt got one piece in, the second wrote both.
    assert model_history([HistoryDelta(keep=0, messages=BEFORE), first, first, second]) == whole


def test_entries_are_grouped_in_order_each_group_within_a_chunk() -> None:
    entries = [{"type": "tool", "id": f"e{i}", "content": "y" * 200_000} for i in range(9)]
    groups = _split_entries(entries, name="release-uid-t1")
    assert [e for g in groups for e in g] == entries
    assert all(sum(len(str(e)) for e in g) < CHUNK_BYTES for g in groups)
    assert len(groups) == 3


def test_an_entry_bigger_than_a_chunk_is_an_error_not_a_write() -> None:
    with pytest.raises(EntryTooLargeError, match="more than a whole chunk"):
        _split_entries([{"content": "z" * CHUNK_BYTES}], name="release-uid-t1")
