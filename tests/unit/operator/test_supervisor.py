"""The reconciler and the turn supervisor against an in-memory host: the real worker, the real
supervisor, the real cache and decisions, with the task's objects kept in dicts instead of an
API server. Each race is driven by the order of events (a turn that waits on a gate, a message
put in the cache at a chosen point of the turn), so it happens the same way every run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.unit.operator.memory import NAME, NS, UID, Harness, Objects, in_memory
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.tools import TurnTools
from tiny_harness.core.turn import TurnInput, TurnOutcome
from tiny_harness.kube.journal import record_name
from tiny_harness.operator.ports import OperatorHost


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    async with in_memory() as made:
        yield made


def said(objects: Objects) -> list[str]:
    return [
        getattr(e, "text", "") or ",".join(m.content for m in getattr(e, "messages", ()))
        for r in objects.records.values()
        for e in r.entries
    ]


async def test_a_cancel_while_the_model_call_is_in_flight_cuts_the_turn_and_cancels(
    harness: Harness,
) -> None:
    loop, objects, worker = harness.loop, harness.objects, harness.worker
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    working = asyncio.create_task(worker.run())
    await asyncio.wait_for(loop.in_flight.wait(), 5)

    objects.send("c1", "alice", control="cancel")
    worker.poke()
    await asyncio.wait_for(working, 5)

    status = objects.task["status"]
    assert (status["state"], status["message"]) == ("TASK_STATE_CANCELED", "cancelled by alice")
    assert "runner" not in status
    assert loop.turns == 1  # cut, not resumed: the gate was never opened
    record = objects.records[record_name(NAME, UID, 1)]
    assert record.history is not None  # the cut turn was closed from its journal


async def test_a_watchers_cancel_does_not_cut_the_turn_and_is_refused_after_it(
    harness: Harness,
) -> None:
    loop, objects, worker = harness.loop, harness.objects, harness.worker
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    working = asyncio.create_task(worker.run())
    await asyncio.wait_for(loop.in_flight.wait(), 5)

    objects.send("c1", "bob", control="cancel")
    worker.poke()
    await asyncio.sleep(0)  # the watcher looks, and the turn goes on
    loop.gate.set()
    await asyncio.wait_for(working, 5)

    status = objects.task["status"]
    assert status["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert loop.turns == 1
    assert "Shipped." in said(objects) or status.get("message")
    refusals = [e for r in objects.records.values() for e in r.entries if e.id == "refused-c1"]
    assert [getattr(e, "text", "") for e in refusals] == [
        "refused: bob is a watcher and may not cancel the task"
    ]


async def test_a_cancel_after_the_turn_has_ended_is_applied_by_the_next_pass(
    harness: Harness,
) -> None:
    loop, objects, worker = harness.loop, harness.objects, harness.worker
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    loop.gate.set()
    real_end = loop.run_turn

    async def then_cancel(
        host: OperatorHost, turn: TurnInput, tools: TurnTools | None = None
    ) -> TurnOutcome:
        outcome = await real_end(host, turn, tools)
        objects.send("c1", "alice", control="cancel")  # lands once the turn has closed
        worker.poke()
        return outcome

    loop.run_turn = then_cancel  # type: ignore[method-assign]
    await asyncio.wait_for(worker.run(), 5)

    status = objects.task["status"]
    assert (status["state"], status["message"]) == ("TASK_STATE_CANCELED", "cancelled by alice")
    record = objects.records[record_name(NAME, UID, 1)]
    journaled = record.history.messages if record.history else ()
    reply = [m for m in journaled if isinstance(m, ChatMessage) and m.role == "assistant"]
    assert reply, "the turn's answer is kept in its journal"
    assert loop.turns == 1


async def test_a_command_during_the_turn_runs_once_beside_it_and_not_again_after(
    harness: Harness,
) -> None:
    loop, objects, worker = harness.loop, harness.objects, harness.worker
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    working = asyncio.create_task(worker.run())
    await asyncio.wait_for(loop.in_flight.wait(), 5)

    objects.send("s1", "bob", parts=[{"text": "/status"}])
    worker.poke()
    for _ in range(1000):  # yield until the watcher has run it, the model call still in flight
        if any(e.id == "cmd-s1" for r in objects.records.values() for e in r.entries):
            break
        await asyncio.sleep(0)
    replies_mid_turn = [e for r in objects.records.values() for e in r.entries if "s1" in e.id]
    loop.gate.set()
    await asyncio.wait_for(working, 5)

    entries = [e for r in objects.records.values() for e in r.entries]
    assert [e.id for e in replies_mid_turn] == ["ack-s1", "cmd-s1"]
    assert [e.id for e in entries if "s1" in e.id] == ["ack-s1", "cmd-s1"]
    assert loop.turns == 1
    assert objects.task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_a_completion_that_will_be_refused_leaves_the_turn_to_answer_first(
    harness: Harness,
) -> None:
    """Judged before it cuts: a sub-task is still open, so alice's complete would be refused;
    the turn's answer is kept, and the refusal comes after it."""
    loop, objects, worker = harness.loop, harness.objects, harness.worker
    child = {
        "metadata": {
            "name": "release-docs",
            "namespace": NS,
            "uid": "uid-docs",
            "resourceVersion": "5",
            "ownerReferences": [{"kind": "HarnessTask", "name": NAME, "uid": UID}],
        },
        "spec": {"goal": "Write the docs.", "parent": {"taskId": NAME}},
        "status": {"state": "TASK_STATE_WORKING", "turn": 1},
    }
    objects.cache.saw(objects.feed, "tasks", child)
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    working = asyncio.create_task(worker.run())
    await asyncio.wait_for(loop.in_flight.wait(), 5)

    objects.send("k1", "alice", control="complete")
    worker.poke()
    for _ in range(200):  # the watcher looks, and leaves the turn alone
        await asyncio.sleep(0)
    assert not working.done()
    assert loop.turns == 1
    loop.gate.set()
    await asyncio.wait_for(working, 5)

    record = objects.records[record_name(NAME, UID, 1)]
    assert record.history is not None
    said = [m.content for m in record.history.messages if isinstance(m, ChatMessage)]
    assert said[-1] == "Shipped."
    status = objects.task["status"]
    assert status["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert status["message"].startswith(
        "completion requested by alice refused: the task cannot complete while sub-task(s) "
        "are unresolved: release-docs"
    )
