"""What the model reads of a message: every part, text as it is and data as labelled JSON,
the same bytes every time for the same message."""

from __future__ import annotations

import json
from typing import Any

from tiny_harness.core.inbox import MessagePart, MessageSpec, model_text

ORDER = {"id": "A-1", "items": [{"sku": "x", "qty": 2}], "note": "für Ana"}


def spec(*parts: MessagePart) -> MessageSpec:
    return MessageSpec(task="t", message_id="m1", sender="alice", parts=parts)


def data(value: dict[str, Any], media_type: str | None = None) -> MessagePart:
    return MessagePart(data=value, media_type=media_type)


def test_text_parts_are_read_as_they_are_one_to_a_line() -> None:
    message = spec(MessagePart(text="Hello."), MessagePart(text="  Two lines\nof text. "))

    assert message.text == "Hello.\n  Two lines\nof text. "


def test_a_data_part_is_a_line_naming_its_media_type_then_its_json() -> None:
    message = spec(data({"answer": 42}, "application/vnd.acme.form+json"))

    assert message.text == 'Data (application/vnd.acme.form+json):\n{"answer": 42}'


def test_a_data_part_without_a_media_type_is_labelled_as_json() -> None:
    assert model_text([data({"ok": True})]) == 'Data (application/json):\n{"ok": true}'


def test_text_and_data_parts_are_read_in_their_order() -> None:
    message = spec(
        MessagePart(text="Please file this order."),
        data({"id": "A-1"}, "application/vnd.acme.order+json"),
        MessagePart(text="Thanks."),
    )

    assert message.text.splitlines() == [
        "Please file this order.",
        "Data (application/vnd.acme.order+json):",
        '{"id": "A-1"}',
        "Thanks.",
    ]


def test_nested_data_is_the_whole_json_on_one_line_with_sorted_keys_and_unicode_kept() -> None:
    rendered = model_text([data(ORDER, "application/vnd.acme.order+json")])
    label, body = rendered.split("\n")

    assert label == "Data (application/vnd.acme.order+json):"
    assert body == '{"id": "A-1", "items": [{"qty": 2, "sku": "x"}], "note": "für Ana"}'
    assert json.loads(body) == ORDER


def test_the_same_data_reads_the_same_whatever_order_its_keys_were_given_in() -> None:
    shuffled = {"note": "für Ana", "items": [{"qty": 2, "sku": "x"}], "id": "A-1"}
    expected = 'Data (application/json):\n{"id": "A-1", "items": [{"qty": 2, "sku": "x"}], '
    expected += '"note": "für Ana"}'

    assert model_text([data(ORDER)]) == expected
    assert model_text([data(shuffled)]) == expected
