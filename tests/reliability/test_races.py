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
        entries = [e for r in await tasks.records.for_task(name) for e in r.entries]
        acks = [e for e in entries if isinstance(e, AckEntry) and e.message_id == command]
        replies = [e for e in entries if isinstance(e, NoticeEntry) and e.id == reply]
        assert (len(acks), len(replies)) == (1, 1), f"{name} at {moment}s: {entries}"

    for i in range(0, len(runs), 2):
        await asyncio.gather(*(race(names[j], runs[j]) for j in range(i, min(i + 2, len(runs)))))


async def test_a_parent_keeps_its_sub_task_rows_across_an_operator_restart(
    api: Any, namespace: str, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Still here."}])
    first = operator()
    await tasks.create("lead")
    await tasks.wait("lead", "TASK_STATE_INPUT_REQUIRED")
    for goal in ("Draft it.", "Review it."):
        await tasks.send("lead", f"/sub-task {goal}")
    for _ in range(400):
        rows = (await tasks.status("lead")).get("subTasks", [])
        if len(rows) == 2:
            break
        await asyncio.sleep(0.05)
    assert len(rows) == 2, rows

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
