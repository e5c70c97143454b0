"""``SendMessage`` and ``SendStreamingMessage`` (``a2a_gateway/send.py``) as a client sees them:
the task as written, each change, and the end of the wait; every refusal with its code, and
nothing written. The handler runs over a namespace held in memory (``fakes.py``); the test is
the operator."""

from __future__ import annotations

import asyncio

import pytest
from a2a.types import SendMessageConfiguration, SendMessageRequest, Task, TaskStatusUpdateEvent
from a2a.types import TaskState as A2AState
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from tests.unit.a2a_gateway.fakes import RUNNER, as_, collect, gateway, spec, text, texts
from tiny_harness.core.control_envelope import control_message
from tiny_harness.core.extensions import TASK_EXT_KEY
from tiny_harness.core.reason_codes import reason_of
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.status_ext import metadata_dict
from tiny_harness.kube import participant_view

ALICE_AND_BOB = spec(("alice", "assignee"), ("bob", "watcher"))
PARKED = {"state": "TASK_STATE_INPUT_REQUIRED", "subState": "awaiting-next-message", "turn": 1}


def code(refused: pytest.ExceptionInfo[A2AError]) -> str | None:
    found = reason_of(refused.value)
    return None if found is None else found.value


async def test_a_first_message_creates_its_task_and_the_stream_follows_it_to_the_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        stream = gw.handler.on_message_send_stream(text("Plan the release."), as_("alice"))
        first = await anext(stream)
        assert isinstance(first, Task)
        name = first.id
        # The operator takes the message in turn 1, and answers it.
        gw.namespace.change(name, state="TASK_STATE_WORKING", turn=1, runner=RUNNER)
        gw.journal.drained(1, "m-1")
        gw.namespace.change(name, **PARKED, message="Planned.", messageId=f"{name}/turn-1/model-0")
        rest = await collect(stream)

    assert first.status.state == A2AState.TASK_STATE_SUBMITTED
    assert [e.status.state for e in rest] == [
        A2AState.TASK_STATE_WORKING,
        A2AState.TASK_STATE_INPUT_REQUIRED,
    ]
    assert texts(rest)[-1] == "Planned."
    (sent,) = gw.messages.to(name)
    assert (sent.sender, sent.message_id) == ("alice", "m-1")


async def test_a_unary_send_answers_with_the_reply_and_the_history(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", ALICE_AND_BOB, **PARKED, message="Hello.")

        async def operator() -> None:
            taken = await gw.messages.arrivals.get()
            gw.namespace.change("t", state="TASK_STATE_WORKING", turn=2, runner=RUNNER)
            gw.journal.drained(2, taken.message_id)
            gw.namespace.change("t", **{**PARKED, "turn": 2}, message="Done.", messageId="t/2")

        async with asyncio.timeout(5), asyncio.TaskGroup() as group:
            group.create_task(operator())
            answer = await gw.handler.on_message_send(text("Ship it.", task_id="t"), as_("alice"))

    assert isinstance(answer, Task)
    assert answer.status.message.message_id == "t/2"
    assert [p.text for m in answer.history for p in m.parts] == ["Ship it."]


async def test_a_stranger_is_told_the_task_does_not_exist_and_nothing_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", ALICE_AND_BOB, **PARKED)
        with pytest.raises(TaskNotFoundError) as refused:
            await gw.handler.on_message_send(text("Hi.", task_id="t"), as_("mallory"))
        with pytest.raises(TaskNotFoundError) as nowhere:
            await gw.handler.on_message_send(text("Hi.", task_id="nope"), as_("alice"))

    assert code(refused) == code(nowhere) == "task_not_found"
    assert gw.messages.stored == {}


@pytest.mark.parametrize(
    ("state", "lifecycle", "taken"),
    [
        ("TASK_STATE_COMPLETED", "conversation", False),
        ("TASK_STATE_CANCELED", "delegated", False),
        # A failed conversation has not ended for good: the next message resumes it.
        ("TASK_STATE_FAILED", "conversation", True),
    ],
)
async def test_a_message_to_a_task_that_ended_for_good_is_refused_with_its_code(
    monkeypatch: pytest.MonkeyPatch, state: str, lifecycle: str, taken: bool
) -> None:
    request = text("More?", task_id="t")
    request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", ALICE_AND_BOB, state=state, lifecycle=lifecycle)
        if taken:
            answer = await gw.handler.on_message_send(request, as_("alice"))
            assert isinstance(answer, Task)
        else:
            with pytest.raises(UnsupportedOperationError) as refused:
                await gw.handler.on_message_send(request, as_("alice"))
            assert code(refused) == "task_ended"
            assert refused.value.message == f"the task is in a terminal state ({state})"

    assert len(gw.messages.stored) == (1 if taken else 0)


async def test_a_watcher_may_not_complete_the_task_and_nothing_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", ALICE_AND_BOB, **PARKED)
        complete = SendMessageRequest(message=control_message("t", "complete"))
        with pytest.raises(UnsupportedOperationError) as refused:
            await gw.handler.on_message_send(complete, as_("bob"))

    assert code(refused) == "role_refused"
    assert refused.value.message == (
        "refused: bob is a watcher and may not complete the task; ask its assignee or reporter"
    )
    assert gw.messages.stored == {}


async def test_an_envelope_on_a_later_message_is_refused_as_an_invalid_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = text("Re-plan.", task_id="t")
    request.message.metadata.update({TASK_EXT_KEY: {"goal": "something else"}})
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", ALICE_AND_BOB, **PARKED)
        with pytest.raises(InvalidParamsError) as refused:
            await gw.handler.on_message_send(request, as_("alice"))

    assert code(refused) == "invalid_message"
    assert gw.messages.stored == {}


async def test_a_message_no_operator_takes_ends_the_stream_with_a_note_and_its_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", ALICE_AND_BOB, **PARKED)
        events = await collect(
            gw.handler.on_message_send_stream(text("Anyone?", task_id="t"), as_("alice"))
        )

    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent)
    assert last.status.message.message_id == "waiting-m-1"
    assert "no operator has taken it" in texts([last])[0]
    assert metadata_dict(last.metadata)[TASK_EXT_KEY]["reason"] == "not_taken"


async def test_the_same_first_message_again_finds_the_task_it_created(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = text("Plan the release.")
    request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
    async with gateway(monkeypatch) as gw:
        first = await gw.handler.on_message_send(request, as_("alice"))
        again = await gw.handler.on_message_send(request, as_("alice"))

    assert isinstance(first, Task)
    assert isinstance(again, Task)
    assert first.id == again.id
    assert len(gw.tasks.created) == 1
    assert len(gw.messages.stored) == 1


async def test_a_send_past_a_quota_is_refused_with_its_code_and_the_quota_in_its_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = GatewaySettings(namespace="team", max_messages_per_participant=1)
    request = text("One.", task_id="t")
    request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
    async with gateway(monkeypatch, settings=settings) as gw:
        gw.namespace.task("t", ALICE_AND_BOB, **PARKED)
        await gw.handler.on_message_send(request, as_("alice"))
        request.message.message_id = "m-2"
        with pytest.raises(UnsupportedOperationError) as refused:
            await gw.handler.on_message_send(request, as_("alice"))

    assert code(refused) == "over_quota"
    assert refused.value.data is not None
    assert refused.value.data["quota"] == "gateway.max_messages_per_participant"
    assert len(gw.messages.stored) == 1


async def test_a_send_reads_its_task_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks, the rendering and the write share one typed view of the stored task: its
    spec and its status are each parsed once for the send, however many steps read them."""
    parsed = {"spec": 0, "status": 0}
    spec_of, status_of = participant_view.spec_of, participant_view.status_of

    def counting_spec(obj: dict[str, object]) -> object:
        parsed["spec"] += 1
        return spec_of(obj)

    def counting_status(obj: dict[str, object]) -> object:
        parsed["status"] += 1
        return status_of(obj)

    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", ALICE_AND_BOB, **PARKED)
        monkeypatch.setattr(participant_view, "spec_of", counting_spec)
        monkeypatch.setattr(participant_view, "status_of", counting_status)
        complete = control_message("t", "complete")
        stream = gw.handler.on_message_send_stream(
            SendMessageRequest(message=complete), as_("alice")
        )
        first = await anext(stream)  # the message is written: the send's reads are done
        await stream.aclose()

    assert isinstance(first, Task)
    assert parsed == {"spec": 1, "status": 1}
    (sent,) = gw.messages.to("t")
    assert sent.control == "complete"
