"""``GetTask`` and ``ListTasks`` (``a2a_gateway/reads.py``), and what this agent does not offer,
as a client sees them: scoped to the caller, and every refusal with its code."""

from __future__ import annotations

import pytest
from a2a.types import (
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    TaskPushNotificationConfig,
)
from a2a.types import TaskState as A2AState
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from tests.unit.a2a_gateway.fakes import as_, gateway, spec, text
from tiny_harness.a2a_gateway.call_context import QUERY_KEY, REQUEST_STATE
from tiny_harness.core.reason_codes import ReasonCode, reason_of

PARKED = {"state": "TASK_STATE_INPUT_REQUIRED", "subState": "awaiting-next-message", "turn": 1}


async def test_a_participant_reads_the_task_with_its_history_and_a_stranger_reads_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", spec(("alice", "assignee")), **PARKED)
        request = text("Hello?", task_id="t")
        request.configuration.return_immediately = True
        await gw.handler.on_message_send(request, as_("alice"))
        read = await gw.handler.on_get_task(GetTaskRequest(id="t"), as_("alice"))
        with pytest.raises(TaskNotFoundError) as stranger:
            await gw.handler.on_get_task(GetTaskRequest(id="t"), as_("mallory"))

    assert read is not None
    assert read.status.state == A2AState.TASK_STATE_INPUT_REQUIRED
    assert [p.text for m in read.history for p in m.parts] == ["Hello?"]
    assert reason_of(stranger.value) is ReasonCode.TASK_NOT_FOUND


async def test_a_list_holds_the_callers_tasks_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("mine", spec(("alice", "assignee")), **PARKED)
        gw.namespace.task("shared", spec(("bob", "assignee"), ("alice", "watcher")), **PARKED)
        gw.namespace.task("theirs", spec(("bob", "assignee")), **PARKED)
        page = await gw.handler.on_list_tasks(ListTasksRequest(), as_("alice"))

    assert sorted(t.id for t in page.tasks) == ["mine", "shared"]
    assert page.total_size == 2


async def test_a_list_refuses_a_status_that_is_no_state_and_a_token_that_is_not_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The SDK reads an unknown state as "no filter": the gateway checks it as it was sent.
    asked = as_("alice")
    asked.state[REQUEST_STATE] = {QUERY_KEY: {"status": "TASK_STATE_NAPPING"}}
    async with gateway(monkeypatch) as gw:
        with pytest.raises(InvalidParamsError) as status:
            await gw.handler.on_list_tasks(ListTasksRequest(), asked)
        with pytest.raises(InvalidParamsError) as token:
            await gw.handler.on_list_tasks(ListTasksRequest(page_token="forged"), as_("alice"))
        # The SDK's own check, raised inside the method, carries the code its type implies.
        with pytest.raises(InvalidParamsError) as length:
            await gw.handler.on_get_task(GetTaskRequest(id="t", history_length=-1), as_("alice"))

    assert status.value.message.startswith("status: 'TASK_STATE_NAPPING' is not a task state")
    for refused in (status, token, length):
        assert reason_of(refused.value) is ReasonCode.INVALID_PARAMS


async def test_what_this_agent_does_not_offer_is_refused_with_its_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        with pytest.raises(PushNotificationNotSupportedError) as push:
            await gw.handler.on_create_task_push_notification_config(
                TaskPushNotificationConfig(), as_("alice")
            )
        with pytest.raises(UnsupportedOperationError) as card:
            await gw.handler.on_get_extended_agent_card(GetExtendedAgentCardRequest(), as_("alice"))

    assert reason_of(push.value) is reason_of(card.value) is ReasonCode.NOT_OFFERED
