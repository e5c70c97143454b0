"""The one bounded JSON parser: a depth and a size for every free-form value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from tiny_harness.core.approval import DecisionRequest, shown_arguments
from tiny_harness.core.control_envelope import parse_control
from tiny_harness.core.errors import InvalidEnvelopeError
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.json_bounds import (
    MAX_CHARS,
    MAX_DEPTH,
    JsonTooDeepError,
    JsonTooLargeError,
    check,
    depth_of,
    dumps,
    loads,
    loads_document,
)
from tiny_harness.core.llm import ToolCall
from tiny_harness.core.tools import InvalidToolCallError, ToolInvoker, ToolRegistry

TOO_DEEP = f"the JSON is nested more than {MAX_DEPTH} levels deep"


def nested(levels: int) -> dict[str, Any]:
    """An object ``levels`` deep: ``{"a": {"a": ... {}}}``."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def nested_text(levels: int) -> str:
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


def test_text_exactly_at_the_depth_bound_is_read_and_one_more_level_is_refused() -> None:
    assert loads(nested_text(MAX_DEPTH)) == nested(MAX_DEPTH)
    with pytest.raises(JsonTooDeepError, match=TOO_DEEP):
        loads(nested_text(MAX_DEPTH + 1))


def test_a_value_exactly_at_the_depth_bound_passes_and_one_more_level_is_refused() -> None:
    check(nested(MAX_DEPTH))
    with pytest.raises(JsonTooDeepError, match=TOO_DEEP):
        check(nested(MAX_DEPTH + 1))
    with pytest.raises(JsonTooDeepError):
        check({"list": [[[[]]]]}, max_depth=4)


def test_thousands_of_levels_are_refused_before_any_decoder_recurses() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(JsonTooDeepError, match="flatten it, or send it as text"):
        loads(deep, max_chars=len(deep))
    value: list[Any] = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(JsonTooDeepError):
        check(value)


def test_arrays_and_objects_count_alike_and_scalars_not_at_all() -> None:
    assert depth_of("3") == 0
    assert depth_of('"x"') == 0
    assert depth_of("{}") == 1
    assert depth_of('[{"a": [1, 2]}, {}]') == 3


def test_brackets_inside_strings_are_not_counted() -> None:
    text = json.dumps({"a": "[[[[[[{{{{{{" * 100, "b": '\\"[[[[', "c": "\\\\"})
    assert depth_of(text) == 1
    assert loads(text, max_depth=1)["a"].startswith("[[[")
    # An escaped quote does not end the string: the brackets after it are still inside.
    assert depth_of(r'{"k": "\"[[[[[[[[[[["}') == 1


def test_an_unclosed_string_is_measured_with_its_brackets() -> None:
    # A malformed text is never measured shallower than a decoder would nest into it.
    assert depth_of('["abc' + "[" * 100, limit=200) == 101


def test_huge_text_is_refused_by_its_size_before_it_is_scanned() -> None:
    text = json.dumps({"a": "x" * MAX_CHARS})
    with pytest.raises(JsonTooLargeError, match=f"at most {MAX_CHARS} characters"):
        loads(text)
    with pytest.raises(JsonTooLargeError):
        check({"a": "x" * MAX_CHARS})


def test_the_stored_text_reads_back_as_the_same_value() -> None:
    value = {"rows": [1, {"ü": "[not a bracket]"}], "ok": True}
    assert loads(dumps(value)) == value


def test_a_message_part_is_stored_as_text_and_read_from_either_form() -> None:
    spec = MessageSpec(
        task="t", message_id="m", sender="alice", parts=(MessagePart(data={"k": [1]}),)
    )
    stored = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert stored["parts"] == [{"data": '{"k":[1]}'}]
    assert stored["metadata"] == "{}"
    assert MessageSpec.model_validate(stored) == spec
    # An object stored before the text form is read as it was.
    older = {**stored, "parts": [{"data": {"k": [1]}}], "metadata": {}}
    assert MessageSpec.model_validate(older) == spec


def test_a_message_too_deep_in_either_form_is_refused_naming_the_field() -> None:
    base = {"task": "t", "messageId": "m", "sender": "alice"}
    for data in (nested_text(5000), nested(5000)):
        with pytest.raises(ValidationError) as caught:
            MessageSpec.model_validate({**base, "parts": [{"data": data}]})
        assert caught.value.errors()[0]["loc"] == ("parts", 0, "data")
        assert TOO_DEEP in str(caught.value)
    with pytest.raises(ValidationError, match=TOO_DEEP):
        MessageSpec.model_validate({**base, "parts": [{"text": "hi"}], "metadata": nested(65)})
    with pytest.raises(ValidationError, match=TOO_DEEP):
        DecisionRequest(call_id="c", verdict="approve", arguments=nested(65))


def test_data_text_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ValidationError, match="must hold a JSON object"):
        MessagePart(data="[1, 2]")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="not JSON text"):
        MessagePart(data="{nope")  # type: ignore[arg-type]


def test_a_decision_envelope_too_deep_is_refused_as_an_envelope() -> None:
    envelope = {"kind": "control", "action": "approve", "call_id": "c", "arguments": nested(65)}
    with pytest.raises(InvalidEnvelopeError, match=f"arguments: {TOO_DEEP}"):
        parse_control(envelope)


def test_a_models_tool_arguments_too_deep_are_its_error_not_a_crash() -> None:
    registry = ToolRegistry()
    registry.tool("echo", "Echo.", {"type": "object"})(lambda args, _ctx: "ok")
    call = ToolCall(id="c1", name="echo", arguments_json=nested_text(5000))
    with pytest.raises(InvalidToolCallError, match=f"cannot be taken: {TOO_DEEP}"):
        ToolInvoker(registry).check(call)


def test_arguments_too_deep_to_show_are_shown_as_their_start() -> None:
    shown, cut = shown_arguments(nested_text(5000))
    assert cut
    assert set(shown) == {"_start"}


def test_a_listing_with_one_object_too_deep_to_decode_reads_the_others_whole() -> None:
    listing = (
        '{"items":[{"name":"before","s":"[[[["},{"name":"deep","spec":{"data":'
        + nested_text(5000)
        + '}},{"name":"after"}]}'
    )

    items = loads_document(listing)["items"]

    assert [i["name"] for i in items] == ["before", "deep", "after"]
    assert items[0]["s"] == "[[[["
    with pytest.raises(ValidationError, match=TOO_DEEP):
        MessagePart(data=items[1]["spec"]["data"])


def test_a_document_the_decoder_takes_is_decoded_as_it_is() -> None:
    document = json.dumps({"items": [nested(300), {"ok": "]]]"}]})
    assert loads_document(document) == {"items": [nested(300), {"ok": "]]]"}]}
    assert loads_document(document.encode()) == loads_document(document)


def test_a_document_too_deep_that_never_closes_is_refused() -> None:
    with pytest.raises(ValueError, match="not whole"):
        loads_document("[" * 5000)


def test_whole_numbers_are_kept_as_integers_as_the_api_server_kept_them() -> None:
    # An A2A data part arrives as protobuf's Struct, whose numbers are all doubles.
    part = MessagePart(data={"qty": 2.0, "rows": [{"price": 2.5, "n": 3.0}]})
    assert part.data == {"qty": 2, "rows": [{"price": 2.5, "n": 3}]}
    assert part.model_dump(mode="json")["data"] == '{"qty":2,"rows":[{"price":2.5,"n":3}]}'
