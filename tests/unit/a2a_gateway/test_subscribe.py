"""``SubscribeToTask`` (``a2a_gateway/subscribe.py``) as a client sees it: the task as it is,
each change a participant can see, and every way the stream ends, each with what a client
needs to decide what to do next (a clean end: follow again; a code: what the code says)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from a2a.server.context import ServerCallContext
from a2a.types import SubscribeToTaskRequest, Task, TaskStatusUpdateEvent
from a2a.types import TaskState as A2AState
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

from tests.unit.a2a_gateway.fakes import RUNNER, as_, collect, gateway, spec, text, texts
from tiny_harness.a2a_gateway.call_context import REQUEST_STATE
from tiny_harness.a2a_gateway.event_ids import LAST_EVENT_ID_KEY
from tiny_harness.a2a_gateway.stream import StreamCut
from tiny_harness.a2a_gateway.stream_limits import StreamLimits
from tiny_harness.core.reason_codes import ReasonCode, reason_of

TEAM = spec(("alice", "assignee"), ("bob", "watcher"))
PARKED = {"state": "TASK_STATE_INPUT_REQUIRED", "subState": "awaiting-next-message", "turn": 1}
RUNNING = {"state": "TASK_STATE_WORKING", "turn": 2, "runner": RUNNER}


def subscribe(task: str = "t") -> SubscribeToTaskRequest:
    return SubscribeToTaskRequest(id=task)


async def read_into(read: list[TaskStatusUpdateEvent], stream: AsyncIterator[object]) -> None:
    """Read ``stream`` to its end, keeping each status event, however it ends."""
    async for event in stream:
        assert isinstance(event, TaskStatusUpdateEvent)
        read.append(event)


async def test_the_task_as_it_is_then_each_visible_change_until_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", TEAM, **PARKED, message="Hello.")
        stream = gw.handler.on_subscribe_to_task(subscribe(), as_("bob"))
        first = await anext(stream)
        gw.namespace.change("t", **RUNNING)
        # A lease renewal that changes nothing a participant sees is no event.
        gw.namespace.change(
            "t", **{**RUNNING, "runner": {**RUNNER, "renewTime": "2026-12-01T00:00:20Z"}}
        )
        gw.namespace.change("t", state="TASK_STATE_COMPLETED", message="Shipped.")
        rest = await collect(stream)

    assert isinstance(first, Task)
    assert texts([first]) == ["Hello."]
    assert [e.status.state for e in rest] == [
        A2AState.TASK_STATE_WORKING,
        A2AState.TASK_STATE_COMPLETED,
    ]
    assert texts(rest)[-1] == "Shipped."


async def test_an_ended_task_is_not_followed_and_says_so_with_its_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", TEAM, state="TASK_STATE_COMPLETED")
        with pytest.raises(UnsupportedOperationError) as refused:
            await anext(gw.handler.on_subscribe_to_task(subscribe(), as_("alice")))

    assert reason_of(refused.value) is ReasonCode.TASK_ENDED


async def test_a_stranger_and_a_missing_task_read_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", TEAM, **PARKED)
        with pytest.raises(TaskNotFoundError) as stranger:
            await anext(gw.handler.on_subscribe_to_task(subscribe(), as_("mallory")))
        with pytest.raises(TaskNotFoundError) as missing:
            await anext(gw.handler.on_subscribe_to_task(subscribe("nope"), as_("alice")))

    assert stranger.value.message == "task 't' not found"
    assert reason_of(stranger.value) is reason_of(missing.value) is ReasonCode.TASK_NOT_FOUND


async def test_a_reader_that_falls_behind_is_cut_with_the_event_id_to_resume_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch, queue_bound=2) as gw:
        gw.namespace.task("t", TEAM, **PARKED)
        stream = gw.handler.on_subscribe_to_task(subscribe(), as_("alice"))
        await anext(stream)
        # Three visible changes while the reader reads none: the queue holds two.
        for n in range(3):
            gw.namespace.change("t", **PARKED, message=f"news {n}")
        read: list[TaskStatusUpdateEvent] = []
        with pytest.raises(StreamCut) as cut:
            await read_into(read, stream)

    assert texts(read) == ["news 0", "news 1"]
    assert reason_of(cut.value) is ReasonCode.STREAM_BEHIND
    last_read = gw.namespace.objects["t"]["metadata"]["resourceVersion"]
    assert cut.value.data is not None
    assert int(cut.value.data["last_event_id"]) == int(last_read) - 1


async def test_a_stream_ends_cleanly_at_its_lifetime_and_when_its_task_is_deleted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch, limits=StreamLimits(lifetime_seconds=0.05)) as gw:
        gw.namespace.task("t", TEAM, **PARKED)
        aged = await collect(gw.handler.on_subscribe_to_task(subscribe(), as_("alice")))
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", TEAM, **PARKED)
        stream = gw.handler.on_subscribe_to_task(subscribe(), as_("alice"))
        await anext(stream)
        gw.namespace.delete("t")
        after_deleted = await collect(stream)

    assert [type(e) for e in aged] == [Task]  # the task, then a clean end: follow again
    assert after_deleted == []


async def test_a_participant_past_the_stream_limit_is_refused_with_its_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch, limits=StreamLimits(per_participant=1)) as gw:
        gw.namespace.task("t", TEAM, **PARKED)
        open_one = gw.handler.on_subscribe_to_task(subscribe(), as_("alice"))
        await anext(open_one)
        with pytest.raises(UnsupportedOperationError) as refused:
            await anext(gw.handler.on_subscribe_to_task(subscribe(), as_("alice")))
        # A send's stream is a stream too: refused so, it writes nothing.
        with pytest.raises(UnsupportedOperationError) as send_refused:
            await anext(gw.handler.on_message_send_stream(text("Hi.", task_id="t"), as_("alice")))
        # Someone else's streams are their own.
        theirs = gw.handler.on_subscribe_to_task(subscribe(), as_("bob"))
        assert isinstance(await anext(theirs), Task)
        await theirs.aclose()
        await open_one.aclose()

    assert reason_of(refused.value) is ReasonCode.TOO_MANY_STREAMS
    assert reason_of(send_refused.value) is ReasonCode.TOO_MANY_STREAMS
    assert "gateway.max_streams_per_participant" in refused.value.message
    assert gw.messages.stored == {}


async def test_a_resume_that_missed_nothing_starts_with_the_task_at_the_clients_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        obj = gw.namespace.task("t", TEAM, **PARKED, message="Hello.")
        held = obj["metadata"]["resourceVersion"]
        resuming = ServerCallContext(
            user=as_("alice").user, state={REQUEST_STATE: {LAST_EVENT_ID_KEY: held}}
        )
        stream = gw.handler.on_subscribe_to_task(subscribe(), resuming)
        first = await anext(stream)
        gw.namespace.change("t", state="TASK_STATE_CANCELED", message="Cancelled.")
        rest = await collect(stream)

    assert isinstance(first, Task)
    assert texts([first]) == ["Hello."]
    assert texts(rest) == ["Cancelled."]
