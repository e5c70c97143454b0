"""The control envelope: a completion request any A2A client can send, refused unless exact."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.helpers.proto_helpers import new_data_part
from a2a.types import Message, Part, Role

from tiny_harness.core.control_envelope import (
    ControlEnvelope,
    control_message,
    control_of,
    control_part,
    parse_control,
)
from tiny_harness.core.errors import InvalidEnvelopeError
from tiny_harness.core.extensions import EVENT_MEDIA_TYPE


def message_with(*parts: Part) -> Message:
    return Message(message_id="m", task_id="t", role=Role.ROLE_USER, parts=list(parts))


def envelope_part(data: Any) -> Part:
    return new_data_part(data, media_type=EVENT_MEDIA_TYPE)


def test_a_completion_envelope_parses() -> None:
    envelope = parse_control({"kind": "control", "action": "complete"})

    assert envelope == ControlEnvelope(action="complete")


def test_an_unknown_action_is_refused_naming_it_and_the_known_ones() -> None:
    with pytest.raises(InvalidEnvelopeError) as refused:
        parse_control({"kind": "control", "action": "delete"})

    assert "unknown action 'delete'" in str(refused.value)
    assert "known actions: complete" in str(refused.value)


def test_an_extra_field_is_refused_naming_it() -> None:
    with pytest.raises(InvalidEnvelopeError, match="unexpected field\\(s\\) model"):
        parse_control({"kind": "control", "action": "complete", "model": "gpt-5"})


def test_a_missing_action_is_refused() -> None:
    with pytest.raises(InvalidEnvelopeError, match="action is missing"):
        parse_control({"kind": "control"})


def test_a_wrong_kind_is_refused() -> None:
    with pytest.raises(InvalidEnvelopeError, match="kind must be 'control'"):
        parse_control({"kind": "task", "action": "complete"})


@pytest.mark.parametrize("data", ["complete", ["complete"], None, 1.0])
def test_an_envelope_that_is_not_an_object_is_refused(data: Any) -> None:
    with pytest.raises(InvalidEnvelopeError, match="expected a JSON object"):
        parse_control(data)


def test_the_refusal_tells_the_sender_what_a_completion_looks_like() -> None:
    with pytest.raises(InvalidEnvelopeError) as refused:
        parse_control({"kind": "control", "action": "finish"})

    assert '{"kind": "control", "action": "complete"}' in str(refused.value)


def test_the_model_itself_forbids_extra_fields_and_unknown_actions() -> None:
    assert ControlEnvelope.model_config.get("extra") == "forbid"
    with pytest.raises(ValueError, match="action"):
        ControlEnvelope.model_validate({"kind": "control", "action": "archive"})


def test_the_control_part_is_a_data_part_of_the_event_media_type() -> None:
    part = control_part()

    assert part.media_type == EVENT_MEDIA_TYPE
    assert part.HasField("data")
    assert control_of(message_with(part)) == ControlEnvelope(action="complete")


def test_a_control_message_is_a_user_message_whose_only_part_is_the_envelope() -> None:
    message = control_message("fix-login", context_id="ctx", message_id="m-1")

    assert message.role == Role.ROLE_USER
    assert (message.task_id, message.context_id, message.message_id) == ("fix-login", "ctx", "m-1")
    assert len(message.parts) == 1
    assert control_of(message) == ControlEnvelope(action="complete")


def test_a_control_message_survives_the_wire_encoding() -> None:
    decoded = Message.FromString(control_message("t").SerializeToString())

    assert control_of(decoded) == ControlEnvelope(action="complete")


def test_control_messages_get_fresh_ids() -> None:
    assert control_message("t").message_id != control_message("t").message_id


def test_an_ordinary_text_message_is_not_a_control_message() -> None:
    assert control_of(message_with(Part(text="please complete this"))) is None


def test_a_data_part_of_another_media_type_is_not_a_control_message() -> None:
    part = new_data_part({"kind": "control", "action": "complete"}, media_type="application/json")

    assert control_of(message_with(part)) is None


def test_an_event_envelope_of_another_known_kind_is_not_a_control_message() -> None:
    assert control_of(message_with(envelope_part({"kind": "status_update"}))) is None


def test_an_event_envelope_of_an_unknown_kind_is_refused() -> None:
    with pytest.raises(InvalidEnvelopeError, match="unknown envelope kind 'shutdown'"):
        control_of(message_with(envelope_part({"kind": "shutdown"})))


def test_a_control_envelope_beside_other_parts_is_refused() -> None:
    with pytest.raises(InvalidEnvelopeError, match="only part, this one has 2 parts"):
        control_of(message_with(control_part(), Part(text="and also do this")))


def test_a_control_message_with_an_unknown_action_is_refused() -> None:
    part = envelope_part({"kind": "control", "action": "self-destruct"})

    with pytest.raises(InvalidEnvelopeError, match="unknown action 'self-destruct'"):
        control_of(message_with(part))


def test_a_control_message_with_an_extra_field_is_refused() -> None:
    part = envelope_part({"kind": "control", "action": "complete", "as": "admin"})

    with pytest.raises(InvalidEnvelopeError, match="unexpected field\\(s\\) as"):
        control_of(message_with(part))
