"""An operator whose namespace holds more than its cache may keep, on the real control plane:
it starts, serves every task, and a conversation begun before a restart goes on after it
with one model call per turn; what it dropped for room it read back by name
(operator/cache.py, operator/resident.py, operator/priming.py)."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Callable

import pytest

from tests.conftest import ModelServer, OperatorProcess, free_port
from tests.eventually import eventually_async
from tests.integration.lifecycle_support import Tasks

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

#: The least the setting allows: the 24 goals below are twice as much.
CACHE_BYTES = 1024 * 1024
GOAL = "Keep the release notes in order. " * 1900  # about 62 KiB


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("tiny_harness_operator_cache")
    }


async def test_an_operator_smaller_than_its_namespace_starts_serves_and_resumes(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "First answer."}, {"type": "text", "text": "Second answer."}]
    )
    names = [f"big-{i:02d}" for i in range(24)]
    for name in names:
        await tasks.create(name, goal=GOAL)
    port = free_port()
    first = operator(cache_bytes=CACHE_BYTES, metrics_bind=f"127.0.0.1:{port}")
    for name in names:
        await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED")

    # The oldest task, long dropped for room by the others: worked once, one model call.
    await tasks.send("big-00", "What is first?")
    status = await tasks.wait("big-00", "TASK_STATE_INPUT_REQUIRED", turn=1)
    assert status["message"] == "First answer."
    assert len(await model_server.control.requests()) == 1

    figures = await asyncio.to_thread(scrape, port)
    assert figures['tiny_harness_operator_cache_bytes{form="budget"}'] == CACHE_BYTES
    assert figures['tiny_harness_operator_cache_objects{form="known"}'] >= len(names)
    assert figures['tiny_harness_operator_cache_objects{form="whole"}'] < len(names)
    assert figures['tiny_harness_operator_cache_objects_moved_total{what="dropped"}'] > 0
    assert figures['tiny_harness_operator_cache_objects_moved_total{what="read_back"}'] > 0

    # A new operator lists the namespace in summary and goes on with the conversation: the
    # model is asked once more, with the first question and answer in what it is given.
    first.stop()
    second_port = free_port()
    operator(
        identity="operator-b", cache_bytes=CACHE_BYTES, metrics_bind=f"127.0.0.1:{second_port}"
    )
    await tasks.send("big-00", "And second?")
    status = await tasks.wait("big-00", "TASK_STATE_INPUT_REQUIRED", turn=2)
    assert status["message"] == "Second answer."
    requests = await model_server.control.requests()
    assert len(requests) == 2
    asked = requests[1].raw_body.decode()
    assert "What is first?" in asked
    assert "First answer." in asked
    assert "And second?" in asked

    async def within_budget() -> bool:
        now = await asyncio.to_thread(scrape, second_port)
        # Nothing is at work any more: what is kept whole is within the budget again.
        return now['tiny_harness_operator_cache_bytes{form="text"}'] <= CACHE_BYTES

    await eventually_async(within_budget, within=10, what="the cache within its budget")
