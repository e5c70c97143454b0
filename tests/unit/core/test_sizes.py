"""The sizes the harness writes (core/sizes.py): a message over its bound is refused with a
reason that says the limit, a status text is cut with a note saying where the whole text is,
and a journaled text never outgrows a chunk."""

from __future__ import annotations

from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.sizes import (
    CHUNK_BYTES,
    CONDITION_CHARS,
    ENTRY_TEXT_BYTES,
    MESSAGE_BYTES,
    STATUS_TEXT_CHARS,
    condition_text,
    entry_text,
    excerpt,
    message_bytes,
    refuse_size,
    status_text,
)


def message(*parts: MessagePart) -> MessageSpec:
    return MessageSpec(task="t", message_id="m1", sender="alice", parts=parts)


def test_a_message_counts_its_text_in_utf8_and_its_data_as_json() -> None:
    spec = message(MessagePart(text="héllo"), MessagePart(data={"a": [1, 2]}))
    assert message_bytes(spec) == len("héllo".encode()) + len('{"a":[1,2]}')


def test_a_message_within_the_bound_is_taken() -> None:
    spec = message(MessagePart(text="x" * (MESSAGE_BYTES // 2)), MessagePart(text="y" * 10))
    assert refuse_size(spec) is None


def test_a_message_over_the_bound_is_refused_with_the_limit_and_what_to_do() -> None:
    spec = message(*(MessagePart(text="x" * (250 * 1024)) for _ in range(4)))
    why = refuse_size(spec)
    assert why is not None
    assert why.startswith("refused: the message carries 1000 KiB")
    assert "at most 256 KiB" in why
    assert "split it" in why


def test_a_status_text_that_fits_is_kept_whole() -> None:
    text = "a" * STATUS_TEXT_CHARS
    assert status_text(text) == text


def test_a_long_status_text_is_cut_to_the_bound_with_a_note() -> None:
    text = "word " * 14_000  # 70,000 characters
    cut = status_text(text)
    assert len(cut) == STATUS_TEXT_CHARS
    assert cut.startswith("word word")
    assert cut.endswith(
        f"[cut at {STATUS_TEXT_CHARS} characters of 70000: the whole text is in the task's history]"
    )


def test_a_condition_message_is_cut_to_its_bound() -> None:
    assert len(condition_text("e" * 10_000)) == CONDITION_CHARS
    assert condition_text("short") == "short"


def test_a_journaled_text_is_cut_to_fit_an_entry_and_says_so() -> None:
    big = "ü" * ENTRY_TEXT_BYTES  # two bytes each: twice the bound
    kept = entry_text(big, "tool result")
    assert len(kept.encode()) <= ENTRY_TEXT_BYTES < CHUNK_BYTES
    assert kept.endswith("[the tool result was 512 KiB; only its first 256 KiB are kept]")
    assert entry_text("small", "tool result") == "small"


def test_an_excerpt_keeps_the_start_and_says_how_long_the_text_was() -> None:
    cut = excerpt("m" * 1_000_000, limit=100)
    assert len(cut) == 100
    assert cut.endswith("[... cut at 100 of 1000000 characters]")
    assert excerpt("short", limit=100) == "short"
