"""The request handler itself (``a2a_gateway/handler.py``): each call noted for the metrics with
its method and outcome, a refusal for what a request would store given the HTTP status it
deserves, each event's version noted for its SSE id, and a stream's slot given back."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.server.context import ServerCallContext
from a2a.types import GetTaskRequest, SubscribeToTaskRequest
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

from tests.unit.a2a_gateway.fakes import as_, gateway, spec, text
from tiny_harness.a2a_gateway.call_context import REQUEST_STATE
from tiny_harness.a2a_gateway.event_ids import VERSIONS_KEY
from tiny_harness.a2a_gateway.limits import STATUS_KEY
from tiny_harness.a2a_gateway.metrics import METHOD_KEY, OUTCOME_KEY
from tiny_harness.a2a_gateway.stream_limits import StreamLimits
from tiny_harness.core.settings import GatewaySettings

PARKED = {"state": "TASK_STATE_INPUT_REQUIRED", "subState": "awaiting-next-message", "turn": 1}


def observed(who: str) -> tuple[ServerCallContext, dict[str, Any]]:
    """A call context whose request state the test reads afterwards."""
    state: dict[str, Any] = {}
    context = as_(who)
    context.state[REQUEST_STATE] = state
    return context, state


async def test_each_call_is_noted_with_its_method_and_outcome(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", spec(("alice", "assignee")), **PARKED)
        ok, ok_state = observed("alice")
        await gw.handler.on_get_task(GetTaskRequest(id="t"), ok)
        missing, missing_state = observed("alice")
        with pytest.raises(TaskNotFoundError):
            await gw.handler.on_get_task(GetTaskRequest(id="nope"), missing)

    assert ok_state == {METHOD_KEY: "GetTask", OUTCOME_KEY: "ok"}
    assert missing_state == {METHOD_KEY: "GetTask", OUTCOME_KEY: "task_not_found"}


async def test_a_refusal_for_what_a_request_would_store_notes_the_status_it_deserves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = GatewaySettings(namespace="team", max_messages_per_participant=1)
    async with gateway(monkeypatch, settings=settings) as gw:
        gw.namespace.task("t", spec(("alice", "assignee")), **PARKED)
        first = text("Hi.", task_id="t")
        first.configuration.return_immediately = True
        await gw.handler.on_message_send(first, as_("alice"))
        context, state = observed("alice")
        with pytest.raises(UnsupportedOperationError):
            await gw.handler.on_message_send(text("Again.", task_id="t", message_id="m-2"), context)

    assert state[OUTCOME_KEY] == "over_quota"
    assert state[STATUS_KEY] == "429"  # RefusalStatus gives it to an HTTP+JSON answer


async def test_a_streams_events_note_their_versions_and_its_slot_is_given_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch, limits=StreamLimits(per_participant=1)) as gw:
        obj = gw.namespace.task("t", spec(("alice", "assignee")), **PARKED)
        context, state = observed("alice")
        stream = gw.handler.on_subscribe_to_task(SubscribeToTaskRequest(id="t"), context)
        await anext(stream)
        noted = list(state[VERSIONS_KEY])
        await stream.aclose()
        # The slot is free again: the next stream of the same participant is taken.
        again = gw.handler.on_subscribe_to_task(SubscribeToTaskRequest(id="t"), as_("alice"))
        await anext(again)
        await again.aclose()

    assert noted == [int(obj["metadata"]["resourceVersion"])]
    assert state[OUTCOME_KEY] == "cancelled"  # the client left the stream
