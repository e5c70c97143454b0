"""``CancelTask`` (``a2a_gateway/cancel.py``) as a client sees it: the request recorded, the wait
for the operator to apply it (bounded), and each refusal with its code, nothing written."""

from __future__ import annotations

import asyncio

import pytest
from a2a.types import CancelTaskRequest
from a2a.types import TaskState as A2AState
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError

from tests.unit.a2a_gateway.fakes import RUNNER, Gateway, as_, gateway, spec
from tiny_harness.core.reason_codes import ReasonCode, reason_of

TEAM = spec(("alice", "assignee"), ("bob", "watcher"))
RUNNING = {"state": "TASK_STATE_WORKING", "turn": 1, "runner": RUNNER}
CANCEL = CancelTaskRequest(id="t")


async def operator_ends_it_as(gw: Gateway, state: str, message: str) -> None:
    """The operator takes the cancel request and ends the task."""
    request = await gw.messages.arrivals.get()
    assert request.control == "cancel"
    gw.namespace.change("t", state=state, message=message)


async def test_a_cancel_is_recorded_and_answered_once_the_operator_applied_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", TEAM, **RUNNING)
        async with asyncio.timeout(5), asyncio.TaskGroup() as group:
            group.create_task(operator_ends_it_as(gw, "TASK_STATE_CANCELED", "cancelled by alice"))
            answer = await gw.handler.on_cancel_task(CANCEL, as_("alice"))

    assert answer is not None
    assert answer.status.state == A2AState.TASK_STATE_CANCELED
    (request,) = gw.messages.to("t")
    assert (request.sender, request.control) == ("alice", "cancel")


async def test_a_cancel_the_operator_has_not_applied_in_time_answers_with_the_task_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch, cancel_wait_seconds=0.05) as gw:
        gw.namespace.task("t", TEAM, **RUNNING)
        answer = await gw.handler.on_cancel_task(CANCEL, as_("alice"))

    assert answer is not None
    assert answer.status.state == A2AState.TASK_STATE_WORKING
    assert [m.control for m in gw.messages.to("t")] == ["cancel"]  # it stays recorded


async def test_a_task_that_ends_otherwise_first_is_not_cancelled_and_says_how_it_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", TEAM, **RUNNING)
        operator = asyncio.create_task(operator_ends_it_as(gw, "TASK_STATE_COMPLETED", "Done."))
        with pytest.raises(TaskNotCancelableError) as refused:
            await asyncio.wait_for(gw.handler.on_cancel_task(CANCEL, as_("alice")), 5)
        await operator

    assert reason_of(refused.value) is ReasonCode.TASK_ENDED
    assert refused.value.message == (
        "the task ended as TASK_STATE_COMPLETED before it was cancelled"
    )


async def test_a_cancel_is_refused_with_its_code_and_nothing_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", TEAM, **RUNNING)
        gw.namespace.task("done", TEAM, state="TASK_STATE_COMPLETED")
        with pytest.raises(UnsupportedOperationError) as watcher:
            await gw.handler.on_cancel_task(CANCEL, as_("bob"))
        with pytest.raises(TaskNotFoundError) as stranger:
            await gw.handler.on_cancel_task(CANCEL, as_("mallory"))
        with pytest.raises(TaskNotCancelableError) as ended:
            await gw.handler.on_cancel_task(CancelTaskRequest(id="done"), as_("alice"))

    assert reason_of(watcher.value) is ReasonCode.ROLE_REFUSED
    assert watcher.value.message == (
        "refused: bob is a watcher and may not cancel the task; ask its assignee or reporter"
    )
    assert reason_of(stranger.value) is ReasonCode.TASK_NOT_FOUND
    assert reason_of(ended.value) is ReasonCode.TASK_ENDED
    assert ended.value.message == "the task is in a terminal state (TASK_STATE_COMPLETED)"
    assert gw.messages.stored == {}
