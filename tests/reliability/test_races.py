"""A race the runtime must win against the real control plane: a parent's sub-task rows
survive an operator restart that hands the parent to a fresh process before its children's
events arrive.

The races of a running turn (a control, a command, the deadline, a cancel around a brief's send)
are driven through every point of the turn, in order, in ``tests/unit/operator/test_turn_races.py``.
"""

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
from tiny_harness.kube.names import GROUP, PLURAL, VERSION

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


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
