"""The worker's pass loop without a cluster: a poke that lands while a pass runs is never lost,
and an error in a pass backs off, is counted, and after the budget fails the task once instead
of spinning. The passes themselves are stand-ins; the loop around them is the real one."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from kubernetes_asyncio import client

from tiny_harness.kube.client import KubeError
from tiny_harness.operator import pass_failures
from tiny_harness.operator.cache import Cache
from tiny_harness.operator.metrics import OperatorMetrics
from tiny_harness.operator.pass_failures import ERROR_BUDGET
from tiny_harness.operator.worker import TaskWorker


class FakeRuntime:
    """Only what a worker touches outside its passes."""

    def __init__(self) -> None:
        self.api = client.ApiClient()
        self.metrics = OperatorMetrics()
        self.identity = "replica-a"
        #: Knows no task: a load before each pass finds nothing to read back.
        self.cache = Cache()


def errors(runtime: FakeRuntime, where: str) -> float:
    value = runtime.metrics.registry.get_sample_value("tiny_harness_errors_total", {"where": where})
    return value or 0.0


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Back-offs still yield to the loop, but take no time."""
    real_sleep = asyncio.sleep

    async def instant(_: float) -> None:
        await real_sleep(0)

    monkeypatch.setattr(pass_failures.asyncio, "sleep", instant)


class ScriptedWorker(TaskWorker):
    """A worker whose passes are scripted: each returns the next result, or raises it."""

    def __init__(self, runtime: FakeRuntime, results: list[Any]) -> None:
        super().__init__(runtime, "ns", "task")  # type: ignore[arg-type]
        self.results = results
        self.passes = 0
        self.failed: list[tuple[str, str]] = []
        self.during_pass: Any = None

    async def step(self) -> bool:
        self.passes += 1
        if self.during_pass is not None:
            await self.during_pass(self)
        result = self.results.pop(0) if self.results else False
        if isinstance(result, BaseException):
            raise result
        return bool(result)

    async def fail_task(self, reason: str, message: str) -> None:
        self.failed.append((reason, message))


async def test_a_poke_during_a_pass_that_found_nothing_gets_a_pass_of_its_own() -> None:
    """Run the race many times, with the poke at a different await point of the pass."""
    runtime = FakeRuntime()
    for attempt in range(200):
        worker = ScriptedWorker(runtime, [False, False])
        yields = random.Random(attempt).randint(0, 3)

        async def poke_midway(w: ScriptedWorker, yields: int = yields) -> None:
            if w.passes == 1:
                for _ in range(yields):
                    await asyncio.sleep(0)
                w.poke()

        worker.during_pass = poke_midway
        await worker.run()
        assert worker.passes == 2, f"attempt {attempt}: the poke was lost"


async def test_the_loop_exits_when_a_pass_found_nothing_and_nobody_poked() -> None:
    worker = ScriptedWorker(FakeRuntime(), [True, True, False])
    await worker.run()
    assert worker.passes == 3


async def test_an_unexpected_error_backs_off_is_counted_and_fails_the_task_once() -> None:
    runtime = FakeRuntime()
    boom = [RuntimeError("boom") for _ in range(ERROR_BUDGET)]
    worker = ScriptedWorker(runtime, [*boom, False])

    await worker.run()

    assert worker.passes == ERROR_BUDGET
    assert errors(runtime, "worker") == ERROR_BUDGET
    [(reason, message)] = worker.failed
    assert reason == "OperatorError"
    assert "RuntimeError: boom" in message
    assert "send a message to try again" in message


async def test_an_error_that_goes_away_never_fails_the_task() -> None:
    runtime = FakeRuntime()
    worker = ScriptedWorker(runtime, [RuntimeError("once"), True, False])
    await worker.run()
    assert worker.failed == []
    assert worker.passes == 3
    assert worker.failures.errors == 0


async def test_an_unreachable_api_server_is_waited_for_and_never_fails_the_task() -> None:
    runtime = FakeRuntime()
    away = [KubeError(503, "unavailable") for _ in range(ERROR_BUDGET * 2)]
    worker = ScriptedWorker(runtime, [*away, ConnectionRefusedError(), False])

    await worker.run()

    assert worker.failed == []
    assert errors(runtime, "worker") == 0
    assert worker.passes == ERROR_BUDGET * 2 + 2
