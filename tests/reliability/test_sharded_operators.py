"""Two operator replicas splitting the tasks by shard, on the real control plane: both work,
no task's turn runs twice, and when one is SIGKILLed its tasks are answered by the other once
its shard Leases have run out."""

from __future__ import annotations

import asyncio
import signal
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.conftest import ModelServer, OperatorProcess, free_port
from tests.eventually import NotYet, eventually_async
from tests.integration.lifecycle_support import Tasks

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]
TASKS = 24
LEASE = 3.0


def metric(metrics_url: str, prefix: str) -> float:
    """The sum of the samples whose line starts with ``prefix``."""
    with urllib.request.urlopen(metrics_url, timeout=5) as resp:
        text = resp.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix)
    )


def turns_finished(metrics_url: str) -> float:
    return metric(metrics_url, "tiny_harness_turns_finished_total{")


async def counted(replicas: dict[str, Any], turns: float) -> dict[str, float]:
    """Each replica's finished turns, once they add up to ``turns``."""

    def by_replica() -> dict[str, float] | NotYet:
        counts = {i: turns_finished(url) for i, (_, url) in replicas.items()}
        return counts if sum(counts.values()) >= turns else NotYet(counts)

    return await eventually_async(
        lambda: asyncio.to_thread(by_replica), within=10, what=f"{turns:g} turns counted"
    )


async def answered(tasks: Tasks, names: list[str], turn: int, within: float) -> None:
    await asyncio.gather(
        *(tasks.wait(n, "TASK_STATE_INPUT_REQUIRED", turn=turn, within=within) for n in names)
    )


async def test_two_replicas_split_the_tasks_and_one_takes_over_when_the_other_dies(
    api: Any, namespace: str, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    replicas = {}
    for identity in ("op-a", "op-b"):
        port = free_port()
        replicas[identity] = (
            operator(
                identity=identity,
                shards=8,
                lease_namespace=namespace,
                lease_seconds=LEASE,
                metrics_bind=f"127.0.0.1:{port}",
            ),
            f"http://127.0.0.1:{port}/metrics",
        )
    names = [f"t-{i}" for i in range(TASKS)]
    for name in names:
        await tasks.create(name)
    await asyncio.gather(*(tasks.wait(n, "TASK_STATE_INPUT_REQUIRED", within=60) for n in names))

    # Each replica holds half the shards once both have seen each other.
    leases = client.CoordinationV1Api(api)

    async def split() -> list[str]:
        listed = await leases.list_namespaced_lease(
            namespace, label_selector="tiny-harness.dev/shard-role=shard"
        )
        return sorted(lease.spec.holder_identity or "" for lease in listed.items)

    async def halves() -> bool | NotYet:
        holders = await split()
        return True if holders == ["op-a"] * 4 + ["op-b"] * 4 else NotYet(holders)

    await eventually_async(halves, within=20, what="each replica to hold 4 shards", interval=0.1)

    def held() -> bool | NotYet:  # each replica's /metrics says so at its next tick
        counts = [metric(url, "tiny_harness_shards_held ") for _, url in replicas.values()]
        return True if counts == [4, 4] else NotYet(counts)

    await eventually_async(
        lambda: asyncio.to_thread(held), within=20, what="/metrics to show 4 shards each"
    )

    for name in names:
        await tasks.send(name, "First.")
    await answered(tasks, names, 1, within=60)
    # A replica counts a turn once the turn has written its parked status: read the counters
    # once they have caught up with what the tasks show.
    by_replica = await counted(replicas, TASKS)
    assert sum(by_replica.values()) == TASKS, by_replica
    assert all(n > 0 for n in by_replica.values()), f"one replica did all: {by_replica}"

    # op-b dies mid-stride; messages to its tasks wait for its Leases to run out, then op-a
    # answers every one of them, once.
    replicas["op-b"][0].stop(signal.SIGKILL)
    killed = time.monotonic()
    for name in names:
        await tasks.send(name, "Second.")
    await answered(tasks, names, 2, within=60)
    took = time.monotonic() - killed
    assert took < 6 * LEASE, f"the survivor took {took:.1f}s to answer the dead one's tasks"
    # op-a's second round: every task, its own and the dead one's.
    survivor = {"op-a": replicas["op-a"]}
    assert (await counted(survivor, by_replica["op-a"] + TASKS))["op-a"] == (
        by_replica["op-a"] + TASKS
    )
    requests = await model_server.control.requests()
    assert len(requests) == 2 * TASKS  # no turn ran twice
    for name in names:
        assert (await tasks.status(name))["turn"] == 2
