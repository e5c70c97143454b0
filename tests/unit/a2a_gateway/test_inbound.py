"""A participant's message read once at the edge of a send (``a2a_gateway/inbound.py``): what
every later step takes from it, and each message refused here with its code, before anything
is read or written."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from a2a.types import Message, Part, Role
from a2a.utils.errors import A2AError, InvalidParamsError, UnsupportedOperationError

from tiny_harness.a2a_gateway.inbound import UNNAMED, inbound, message_spec
from tiny_harness.a2a_gateway.quotas import Refused
from tiny_harness.core.control_envelope import control_message
from tiny_harness.core.extensions import TASK_EXT_KEY
from tiny_harness.core.reason_codes import ReasonCode, reason_of
from tiny_harness.core.sizes import MESSAGE_BYTES
from tiny_harness.core.task import Role as ParticipantRole


def said(
    *parts: Part, role: Role = Role.ROLE_USER, envelope: Mapping[str, object] | None = None
) -> Message:
    """A participant's message; ``envelope`` under the task extension key of its metadata."""
    message = Message(message_id="m-1", role=role, parts=list(parts))
    if envelope is not None:
        message.metadata.update({TASK_EXT_KEY: dict(envelope)})
    return message


def code_of(refused: pytest.ExceptionInfo[A2AError]) -> ReasonCode | None:
    return reason_of(refused.value)


def test_a_first_message_is_read_once_into_its_sender_its_parts_and_its_envelope() -> None:
    envelope = {"goal": "Ship the release.", "participants": [{"id": "bob", "role": "assignee"}]}
    read = inbound(said(Part(text="Please."), envelope=envelope), "alice")

    assert read.sender == "alice"
    assert read.control is None
    assert [p.text for p in read.spec.parts] == ["Please."]
    assert read.spec.task == UNNAMED  # its task is made later, and named then
    assert read.envelope is not None
    assert read.envelope.goal == "Ship the release."
    assert read.envelope.role_of("bob") is ParticipantRole.ASSIGNEE
    addressed = read.to("t-1")
    assert (addressed.task, addressed.message_id, addressed.sender) == ("t-1", "m-1", "alice")


def test_a_control_message_is_read_as_its_control_with_no_parts() -> None:
    read = inbound(control_message("t", "complete", message_id="m-1"), "alice")

    assert read.control == "complete"
    assert read.spec.parts == ()
    assert read.to("t") is read.spec  # already addressed: nothing is copied


def test_an_agents_message_is_not_a_clients_to_send() -> None:
    with pytest.raises(InvalidParamsError) as refused:
        inbound(said(Part(text="I am the agent."), role=Role.ROLE_AGENT), "alice")
    assert code_of(refused) is ReasonCode.INVALID_MESSAGE


def test_an_envelope_that_sets_a_server_controlled_field_is_refused_whole() -> None:
    envelope = {"goal": "x", "model": "gpt-5"}
    with pytest.raises(UnsupportedOperationError) as refused:
        inbound(said(Part(text="x"), envelope=envelope), "alice")
    assert code_of(refused) is ReasonCode.SERVER_CONTROLLED_FIELD
    assert "model" in refused.value.message


@pytest.mark.parametrize(
    "message",
    [
        said(Part(text="x"), envelope={"goal": ""}),  # an envelope that does not read
        said(Part()),  # an empty part
        said(Part(text="x"), Part(url="ftp://example.com/a.txt")),  # a URL it does not fetch
    ],
    ids=["envelope", "empty part", "url"],
)
def test_a_message_that_cannot_be_stored_as_it_is_is_refused_naming_what_to_fix(
    message: Message,
) -> None:
    with pytest.raises(InvalidParamsError) as refused:
        inbound(message, "alice")
    assert code_of(refused) is ReasonCode.INVALID_MESSAGE


def test_a_message_over_the_bound_every_message_is_held_to_is_refused_413() -> None:
    half = "x" * (MESSAGE_BYTES // 2 + 1)  # each part within its bound, not the two
    with pytest.raises(Refused) as refused:
        message_spec("t", said(Part(text=half), Part(text=half)), "alice")

    assert refused.value.status == 413
    assert isinstance(refused.value.error, InvalidParamsError)
    assert reason_of(refused.value.error) is ReasonCode.MESSAGE_TOO_LARGE
    assert refused.value.error.message.startswith("refused: the message carries")
