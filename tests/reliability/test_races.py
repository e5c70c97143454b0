"""Races the runtime must win every time, run many times each: a complete or cancel sent at
every moment of a turn is applied, a command sent at every moment of a turn runs exactly once,
and a parent's sub-task rows survive an operator restart that hands the parent to a fresh
process before its children's events arrive."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.conftest import ModelServer, OperatorProcess
from tests.eventually import NotYet, eventually_async
from tests.integration.lifecycle_support import Tasks
from tiny_harness.core.answers import command_reply_id
from tiny_harness.core.history import AckEntry, NoticeEntry
from tiny_harness.kube.names import GROUP, PLURAL, VERSION

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

#: When the control is sent, in seconds after the message: before the turn's first status
#: write, during it, during the model call, during the record write, and after the turn.
MOMENTS = (0.0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3, 0.6)


ENDS = {
    "cancel": ("TASK_STATE_CANCELED", "cancelled by alice"),
    "complete": ("TASK_STATE_COMPLETED", "completed by alice"),
}


async def test_a_control_sent_at_any_moment_of_a_turn_is_always_applied(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    operator()
    runs = [(moment, action) for moment in MOMENTS for action in ("cancel", "complete")]
    names = [f"race-{i}" for i in range(len(runs))]
    for name in names:
        await tasks.create(name)
    for name in names:
        await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED")

    async def race(name: str, moment: float, action: str) -> None:
        await model_server.control.script([{"type": "text", "text": "ok", "delay_seconds": 0.1}])
        await tasks.send(name, "Work on it.")
        await asyncio.sleep(moment)
        await tasks.control(name, action)
        ended, said = ENDS[action]
        status = await tasks.wait(name, ended, within=30)
        assert status["message"] == said

    # Two at a time, so every moment also meets another task's writes.
    for i in range(0, len(runs), 2):
        await asyncio.gather(*(race(names[j], *runs[j]) for j in range(i, min(i + 2, len(runs)))))


async def test_a_command_sent_at_any_moment_of_a_turn_runs_exactly_once(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """A command that arrives as the turn ends is either run by the interrupt watcher before
    the end (which waits for it) or left to the next pass, never both: its acknowledgement and
    its reply are each in the journal once, and the reply is what /status says."""
    operator()
    runs = [moment for moment in MOMENTS for _ in range(3)]
    names = [f"cmd-{i}" for i in range(len(runs))]
    for name in names:
        await tasks.create(name)
    for name in names:
        await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED")

    async def race(name: str, moment: float) -> None:
        await model_server.control.script([{"type": "text", "text": "ok", "delay_seconds": 0.1}])
        await tasks.send(name, "Work on it.")
        await asyncio.sleep(moment)
        command = await tasks.send(name, "/status")
        reply = command_reply_id(command)
        await tasks.wait_agent_message(name, f"task {name}")
        await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED", turn=1)
        entries = [e for r in await tasks.records_of(name) for e in r.entries]
        acks = [e for e in entries if isinstance(e, AckEntry) and e.message_id == command]
        replies = [e for e in entries if isinstance(e, NoticeEntry) and e.id == reply]
        assert (len(acks), len(replies)) == (1, 1), f"{name} at {moment}s: {entries}"

    for i in range(0, len(runs), 2):
        await asyncio.gather(*(race(names[j], runs[j]) for j in range(i, min(i + 2, len(runs)))))


#: When a cancel is sent, in seconds after a delegated task's turn is seen to start, with a
#: one-second activeDeadlineSeconds: before, around and after the deadline cuts the turn.
AROUND_THE_DEADLINE = (0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.3)


async def test_a_cancel_racing_the_deadline_cut_ends_the_task_once_either_way(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """The first reason to cut a turn wins (worker.turn): a delegated task ends cancelled by
    its participant or failed past its deadline, with the status, condition and message of
    that one; never working again, never both; the cancel is taken either way (applied, or
    refused as too late and acknowledged)."""
    await model_server.control.script([{"type": "text", "text": "Slow.", "delay_seconds": 60}] * 80)
    operator()
    await tasks.create("lead")
    runs = [moment for moment in AROUND_THE_DEADLINE for _ in range(3)]

    async def race(name: str, moment: float) -> str:
        await tasks.create_child("lead", name, "Think for a minute.", activeDeadlineSeconds=1)
        await tasks.wait(name, "TASK_STATE_WORKING", within=30, running=True)
        await asyncio.sleep(moment)
        cancel = await tasks.control(name, "cancel")

        async def over() -> dict[str, Any] | NotYet:
            status = await tasks.status(name)
            ended = status.get("state") in ("TASK_STATE_CANCELED", "TASK_STATE_FAILED")
            return status if ended and not status.get("runner") else NotYet(status)

        status = await eventually_async(over, within=60, what=f"{name} to end at {moment}s")
        state = status.get("state")
        reasons = [c.get("reason") for c in status.get("conditions", []) if c["type"] == "Error"]
        if state == "TASK_STATE_CANCELED":
            assert status["message"] == "cancelled by alice", status
            assert "DeadlineExceeded" not in reasons, status
        else:
            assert state == "TASK_STATE_FAILED", f"{name} at {moment}s: {status}"
            assert "DeadlineExceeded" in reasons, status
            assert "activeDeadlineSeconds (1s)" in status["message"]

        async def cancel_taken() -> bool | NotYet:
            entries = [e for r in await tasks.records_of(name) for e in r.entries]
            taken = any(isinstance(e, AckEntry) and e.message_id == cancel for e in entries)
            return True if taken else NotYet(entries)

        await eventually_async(cancel_taken, within=30, what=f"{name}'s cancel to be taken")
        await asyncio.sleep(0.3)  # nothing changes after: it stays as it ended
        assert (await tasks.status(name)).get("state") == state
        return str(state)

    ended: list[str] = []
    for i in range(0, len(runs), 3):
        ended += await asyncio.gather(
            *(race(f"dl-{j}", runs[j]) for j in range(i, min(i + 3, len(runs))))
        )
    # Both outcomes happen across the moments: the race is really run.
    assert {"TASK_STATE_CANCELED", "TASK_STATE_FAILED"} <= set(ended), ended


async def test_a_parent_keeps_its_sub_task_rows_across_an_operator_restart(
    api: Any, namespace: str, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Still here."}])
    first = operator()
    await tasks.create("lead")
    await tasks.wait("lead", "TASK_STATE_INPUT_REQUIRED")
    for goal in ("Draft it.", "Review it."):
        await tasks.send("lead", f"/sub-task {goal}")

    async def both_rows() -> bool | NotYet:
        rows = (await tasks.status("lead")).get("subTasks", [])
        return True if len(rows) == 2 else NotYet(rows)

    await eventually_async(both_rows, within=30, what="lead to show both sub-task rows")

    seen: list[list[Any]] = []
    objects = client.CustomObjectsApi(api)
    listed = await objects.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)

    async def follow() -> None:
        from kubernetes_asyncio import watch

        w = watch.Watch()
        async with w.stream(
            objects.list_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            field_selector="metadata.name=lead",
            resource_version=listed["metadata"]["resourceVersion"],
            timeout_seconds=120,
        ) as stream:
            async for event in stream:
                seen.append(list((event["object"].get("status") or {}).get("subTasks", [])))

    follower = asyncio.create_task(follow())
    try:
        for turn in (1, 2, 3):
            first.stop(signal.SIGKILL)
            first = operator()
            # The fresh process handles the parent at once: a message needs a turn, whose end
            # writes the rows from what the process knows about the children.
            await tasks.send("lead", "Where are we?")
            status = await tasks.wait("lead", "TASK_STATE_INPUT_REQUIRED", turn=turn, within=40)
    finally:
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)

    assert len(status["subTasks"]) == 2
    assert seen, "the parent's status never changed"
    assert all(len(rows) == 2 for rows in seen), seen
