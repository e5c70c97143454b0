"""The races of a running turn, each driven through every point of the turn in order.

A turn against the in-memory host passes a fixed list of points (each read and write of its
objects, before and after, and its model call: ``memory.Timeline``). Each test first runs the
turn once with nothing in its way to learn those points, then once per point with the racing
event put at that point: a control, a command, the deadline, a cancel around a brief's send.
The order is the test's, so every run meets every case; none is aimed with a delay.

The rules these hold the operator to:

- a complete or a cancel sent at any point of a turn is applied, once (worker, supervisor);
- a command sent at any point of a turn is run exactly once: beside the turn by the interrupt
  watcher, or by the next pass, never both (``host.interlude``);
- between a cancel and the deadline, the first cut wins, and the task ends as that one says,
  with the other taken (applied, or acknowledged as too late) and never both;
- a cancel at any point around the send of a brief leaves no remote task at work: either none
  was created, or its id was recorded before the cut went on, and it is cancelled.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from a2a.types import StreamResponse, Task, TaskState, TaskStatus

from tests.unit.operator.memory import Harness, entries, in_memory
from tiny_harness.core.agent import AgentSpec, AgentStatus
from tiny_harness.core.history import AckEntry, NoticeEntry
from tiny_harness.operator.remote import Remotes
from tiny_harness.operator.turn_guards import TurnGuards

#: How long one pass may take in memory before the test calls it stuck.
STUCK = 10.0

ENDS = {
    "cancel": ("TASK_STATE_CANCELED", "cancelled by alice"),
    "complete": ("TASK_STATE_COMPLETED", "completed by alice"),
}


async def settle(harness: Harness) -> None:
    """Run the worker until it has nothing left to do; an event its passes never reached
    (placed after the turn's last point) happens then, and the worker runs again."""
    await asyncio.wait_for(harness.worker.run(), STUCK)
    late = harness.timeline.unreached()
    for event in late:
        event()
    if late:
        await asyncio.wait_for(harness.worker.run(), STUCK)


async def points_of(
    start: Callable[[Harness], Awaitable[None]], until: str | None = None
) -> list[str]:
    """The points a turn passes with nothing in its way."""
    async with in_memory() as harness:
        await start(harness)
        if until is None:
            await settle(harness)
        else:
            working = asyncio.create_task(harness.worker.run())
            await asyncio.wait_for(harness.timeline.reached(until), STUCK)
            working.cancel()
            await asyncio.gather(working, return_exceptions=True)
        return list(harness.timeline.passed)


async def a_turn(harness: Harness) -> None:
    harness.loop.gate.set()
    harness.objects.send("m1", "alice", parts=[{"text": "Ship it."}])


@pytest.mark.parametrize("action", ["cancel", "complete"])
async def test_a_control_sent_at_any_point_of_a_turn_is_applied(action: str) -> None:
    points = await points_of(a_turn)
    assert "model call" in points  # the turn really ran
    for n in range(len(points) + 1):
        async with in_memory() as harness:
            await a_turn(harness)

            def control(h: Harness = harness) -> None:
                h.objects.send("c1", "alice", control=action)

            harness.timeline.at(n, control)
            await settle(harness)

            status = harness.objects.task["status"]
            where = f"{action} at point {n} ({[*points, 'after the turn'][n]})"
            assert (status["state"], status.get("message")) == ENDS[action], where
            assert "runner" not in status, where
            assert harness.loop.turns == 1, where


async def test_a_command_sent_at_any_point_of_a_turn_runs_exactly_once() -> None:
    points = await points_of(a_turn)
    for n in range(len(points) + 1):
        async with in_memory() as harness:
            await a_turn(harness)

            def command(h: Harness = harness) -> None:
                h.objects.send("s1", "bob", parts=[{"text": "/status"}])

            harness.timeline.at(n, command)
            await settle(harness)

            journal = entries(harness.objects)
            acks = [e for e in journal if isinstance(e, AckEntry) and e.message_id == "s1"]
            replies = [e for e in journal if isinstance(e, NoticeEntry) and e.id == "cmd-s1"]
            where = f"/status at point {n} ({[*points, 'after the turn'][n]})"
            assert (len(acks), len(replies)) == (1, 1), f"{where}: {journal}"
            assert "task release" in replies[0].text, where
            status = harness.objects.task["status"]
            assert status["state"] == "TASK_STATE_INPUT_REQUIRED", where
            assert harness.loop.turns == 1, where


# -- a cancel and the deadline ----------------------------------------------------------------


@pytest.fixture
def deadline(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """The task's deadline, reached when the test sets this event (the turn's own
    deadline guard then cuts at once)."""
    reached = asyncio.Event()
    real = TurnGuards.cut_at_deadline

    async def at_the_deadline(self: TurnGuards, left: float) -> None:
        await reached.wait()
        await real(self, 0.0)

    monkeypatch.setattr(TurnGuards, "cut_at_deadline", at_the_deadline)
    return reached


async def a_long_turn(harness: Harness) -> None:
    """A turn whose model call does not answer, on a delegated task with a deadline (a
    failed delegated task is closed: a cancel after its failure is too late)."""
    harness.objects.task["spec"]["activeDeadlineSeconds"] = 60
    harness.objects.task["status"]["lifecycle"] = "delegated"
    harness.objects.index_task()
    harness.objects.send("m1", "alice", parts=[{"text": "Think for a minute."}])


def ended_once(harness: Harness, where: str) -> str:
    """The task's end, checked to be one end: cancelled by alice, or failed past its
    deadline; never working, never both; and the cancel taken either way."""
    status = harness.objects.task["status"]
    state = status["state"]
    reasons = [c.get("reason") for c in status.get("conditions", []) if c["type"] == "Error"]
    if state == "TASK_STATE_CANCELED":
        assert status["message"] == "cancelled by alice", where
        assert "DeadlineExceeded" not in reasons, where
    else:
        assert state == "TASK_STATE_FAILED", f"{where}: {status}"
        assert "DeadlineExceeded" in reasons, where
        assert "activeDeadlineSeconds (60s)" in status["message"], where
    assert "runner" not in status, where
    taken = [e for e in entries(harness.objects) if isinstance(e, AckEntry)]
    assert [e.message_id for e in taken].count("c1") == 1, f"{where}: {taken}"
    return str(state)


async def test_a_cancel_then_the_deadline_at_any_point_ends_the_task_cancelled(
    deadline: asyncio.Event,
) -> None:
    points = await points_of(a_long_turn, until="model call")
    sent = points.index("model call")
    for later in range(sent + 1, sent + 8):
        deadline.clear()
        async with in_memory() as harness:
            await a_long_turn(harness)

            def cancel(h: Harness = harness) -> None:
                h.objects.send("c1", "alice", control="cancel")

            harness.timeline.at(sent, cancel)
            harness.timeline.at(later, deadline.set)
            await settle(harness)
            where = f"cancel at {sent}, deadline at {later}"
            assert ended_once(harness, where) == "TASK_STATE_CANCELED", where


async def test_the_deadline_then_a_cancel_at_any_point_ends_the_task_failed(
    deadline: asyncio.Event,
) -> None:
    async def cut_by_the_deadline(harness: Harness) -> None:
        await a_long_turn(harness)
        harness.timeline.at(cut, deadline.set)

    first = await points_of(a_long_turn, until="model call")
    cut = first.index("model call")
    deadline.clear()
    points = await points_of(cut_by_the_deadline)
    assert points[cut] == "model call"
    for n in range(cut + 1, len(points) + 1):
        deadline.clear()
        async with in_memory() as harness:
            await cut_by_the_deadline(harness)

            def cancel(h: Harness = harness) -> None:
                h.objects.send("c1", "alice", control="cancel")

            harness.timeline.at(n, cancel)
            await settle(harness)
            where = f"deadline at {cut}, cancel at point {n} ({[*points, 'after the turn'][n]})"
            assert ended_once(harness, where) == "TASK_STATE_FAILED", where


async def test_a_cancel_and_the_deadline_at_the_same_point_end_the_task_one_way(
    deadline: asyncio.Event,
) -> None:
    """Both given in one step of the event loop: the first cut given wins, whichever it is,
    and the task ends as that one says."""
    points = await points_of(a_long_turn, until="model call")
    async with in_memory() as harness:
        await a_long_turn(harness)

        def both(h: Harness = harness) -> None:
            h.objects.send("c1", "alice", control="cancel")
            deadline.set()

        harness.timeline.at(points.index("model call"), both)
        await settle(harness)
        ended_once(harness, "cancel and deadline together")


# -- a cancel around the send of a brief ------------------------------------------------------


@dataclass
class RemoteAgent:
    """A remote A2A agent, in memory: the tasks it was asked to create, and their states.
    Each step of its exchange is a point of the harness's timeline."""

    harness: Harness | None = None
    tasks: dict[str, TaskState] = field(default_factory=dict)
    ids: itertools.count[int] = field(default_factory=itertools.count)
    name: str = "scout"
    spec: AgentSpec = field(
        default_factory=lambda: AgentSpec.model_validate({"cardUrl": "http://scout.test/card"})
    )
    status: AgentStatus = field(default_factory=lambda: AgentStatus(streaming=True))
    speaks_harness: bool = True

    async def point(self, name: str) -> None:
        assert self.harness is not None
        await self.harness.timeline.point(name)

    # -- the directory -------------------------------------------------------------------------

    def ready(self, namespace: str, name: str) -> RemoteAgent:
        return self

    async def settled(self, namespace: str, name: str) -> RemoteAgent:
        return self

    def offered(self, namespace: str) -> tuple[Any, ...]:
        return ()

    def approvals(self, namespace: str) -> tuple[Any, ...]:
        return ()

    # -- the client ----------------------------------------------------------------------------

    def client(self) -> RemoteAgent:
        return self

    async def send_message(self, request: Any) -> AsyncIterator[StreamResponse]:
        await self.point("remote: message received")
        task_id = f"remote-{next(self.ids)}"
        self.tasks[task_id] = TaskState.TASK_STATE_WORKING
        await self.point("remote: task created")
        yield StreamResponse(
            task=Task(
                id=task_id,
                context_id="ctx",
                status=TaskStatus(state=TaskState.TASK_STATE_WORKING),
            )
        )

    async def subscribe(self, request: Any) -> AsyncIterator[StreamResponse]:
        await self.point("remote: followed")
        await asyncio.Event().wait()  # at work, for as long as it is left to work
        yield StreamResponse()  # pragma: no cover

    async def cancel_task(self, request: Any) -> None:
        self.tasks[request.id] = TaskState.TASK_STATE_CANCELED


def at_work(agent: RemoteAgent) -> list[str]:
    return [t for t, state in agent.tasks.items() if state is TaskState.TASK_STATE_WORKING]


async def delegated(harness: Harness) -> None:
    """A task done by remote agent ``scout``, given its brief."""
    harness.objects.task["spec"]["agent"] = "scout"
    harness.objects.index_task()
    harness.objects.send("brief", "alice", parts=[{"text": "Find the release notes."}])


async def test_a_cancel_at_any_point_around_the_brief_leaves_no_remote_task_at_work() -> None:
    agent = RemoteAgent()
    async with in_memory(Remotes(agent)) as harness:  # type: ignore[arg-type]
        agent.harness = harness
        await delegated(harness)
        working = asyncio.create_task(harness.worker.run())
        await asyncio.wait_for(harness.timeline.reached("remote: followed"), STUCK)
        points = list(harness.timeline.passed)
        working.cancel()
        await asyncio.gather(working, return_exceptions=True)
    assert "remote: task created" in points

    for n in range(len(points)):
        agent = RemoteAgent()
        async with in_memory(Remotes(agent)) as harness:  # type: ignore[arg-type]
            agent.harness = harness
            await delegated(harness)

            def cancel(h: Harness = harness) -> None:
                h.objects.send("c1", "alice", control="cancel")

            harness.timeline.at(n, cancel)
            await settle(harness)

            where = f"cancel at point {n} ({points[n]}); remote tasks {agent.tasks}"
            status = harness.objects.task["status"]
            assert status["state"] == "TASK_STATE_CANCELED", f"{where}: {status}"
            assert at_work(agent) == [], where
