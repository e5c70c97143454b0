"""Bounds reached are states, never loops (core/sizes.py), against the in-memory host: a write
the API server refuses for what it is ends the task at once with the reason, after the one
model call the step made; a turn started as many times as it may be is given up without
asking the model again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.unit.operator.memory import Harness, in_memory
from tiny_harness.core.decide import MAX_TURN_ATTEMPTS
from tiny_harness.kube.client import RefusedWriteError, translate, unreachable

STUCK = 10.0


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    async with in_memory() as made:
        yield made


def error_reasons(status: dict[str, Any]) -> list[str]:
    return [c["reason"] for c in status.get("conditions", []) if c["type"] == "Error"]


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (413, '{"kind":"Status","message":"Request entity too large: limit is 3145728"}'),
        (422, '{"kind":"Status","message":"HarnessTurn.x is invalid: spec.entries: Too many"}'),
        (500, '{"kind":"Status","message":"etcdserver: request is too large"}'),
    ],
)
def test_a_write_refused_for_what_it_is_is_permanent_and_says_the_servers_words(
    status: int, body: str
) -> None:
    from kubernetes_asyncio.client.exceptions import ApiException

    exc = ApiException(status=status, reason="refused")
    exc.body = body
    error = translate(exc, "release")
    assert isinstance(error, RefusedWriteError)
    assert not unreachable(error)
    assert body.split('"message":"')[1].rstrip('"}') in str(error)


def test_a_server_error_that_may_pass_is_still_retried() -> None:
    from kubernetes_asyncio.client.exceptions import ApiException

    exc = ApiException(status=503, reason="Service Unavailable")
    exc.body = '{"kind":"Status","message":"the server is shutting down"}'
    error = translate(exc, "release")
    assert not isinstance(error, RefusedWriteError)
    assert unreachable(error)


async def test_a_record_the_api_server_refuses_fails_the_task_once_without_asking_again(
    harness: Harness,
) -> None:
    objects, loop = harness.objects, harness.loop
    real_append = objects.append
    refused: list[int] = []

    async def too_large(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("history") is not None and not refused:  # the turn's end: too big
            refused.append(1)
            raise RefusedWriteError(500, "etcdserver: request is too large")
        return await real_append(*args, **kwargs)

    objects.append = too_large  # type: ignore[method-assign]
    loop.gate.set()
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    await asyncio.wait_for(harness.worker.run(), STUCK)

    status = objects.task["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert error_reasons(status) == ["WriteRefused"]
    assert "etcdserver: request is too large" in status["message"]
    assert "docs/design/limits.md" in status["message"]
    assert loop.turns == 1  # one model call for the step; no resume asked it again
    assert refused == [1]


async def test_a_turn_started_as_often_as_it_may_be_is_given_up_without_a_model_call(
    harness: Harness,
) -> None:
    objects, loop = harness.objects, harness.loop
    objects.task["status"] = {
        **objects.task["status"],
        "state": "TASK_STATE_WORKING",
        "turn": 1,
        "turnAttempts": MAX_TURN_ATTEMPTS,
        "runner": {"holder": "replica-a", "renewTime": "2026-12-01T10:00:02Z", "epoch": 3},
    }
    objects.index_task()
    await asyncio.wait_for(harness.worker.run(), STUCK)

    status = objects.task["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert error_reasons(status) == ["TurnNotFinished"]
    assert f"started {MAX_TURN_ATTEMPTS} times and never finished" in status["message"]
    assert "runner" not in status
    assert "turnAttempts" not in status
    assert loop.turns == 0


async def test_each_start_of_a_turn_is_counted(harness: Harness) -> None:
    objects, loop = harness.objects, harness.loop
    seen: list[int] = []
    real = objects.patch_status

    async def watch(name: str, status: Any, **kwargs: Any) -> Any:
        if "turnAttempts" in status and status["turnAttempts"] is not None:
            seen.append(status["turnAttempts"])
        return await real(name, status, **kwargs)

    objects.patch_status = watch  # type: ignore[method-assign]
    loop.gate.set()
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    await asyncio.wait_for(harness.worker.run(), STUCK)
    assert seen == [1]
    assert "turnAttempts" not in objects.task["status"]  # cleared when the turn ended
