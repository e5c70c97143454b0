"""Shard Leases on the real API server (operator/shard_leases.py): replicas joining, leaving and
dying, and at every moment no shard believed held by two replicas.

The managers run in this process, each with its own identity, on the real clock with a short
lease; ticks are driven by the test (in a chosen order, or all at once) so each step of a
hand-over can be looked at.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.eventually import NotYet, eventually_async
from tiny_harness.operator.shard_lease_writes import SET_LABEL
from tiny_harness.operator.shard_leases import ShardManager

pytestmark = pytest.mark.controlplane

SHARDS = 8
LEASE = 1.2


def manager(
    api: Any,
    namespace: str,
    identity: str,
    acquired: list[tuple[str, int]],
    missed: list[set[tuple[str, str]]] | None = None,
    watched: dict[str, frozenset[int]] | None = None,
) -> ShardManager:
    return ShardManager(
        api,
        identity=identity,
        shards=SHARDS,
        shard_set="test",
        namespace=namespace,
        lease_seconds=LEASE,
        on_acquired=lambda shard: acquired.append((identity, shard)),
        on_missed=lambda tasks: (missed if missed is not None else []).append(tasks),
        on_dealt=lambda shards: (watched if watched is not None else {}).update({identity: shards}),
    )


def assert_disjoint(managers: list[ShardManager]) -> None:
    seen: dict[int, str] = {}
    for m in managers:
        for shard in m.held():
            assert shard not in seen, f"shard {shard} held by {seen[shard]} and {m.identity}"
            seen[shard] = m.identity


async def holders(api: Any, namespace: str) -> dict[str, str | None]:
    listed = await client.CoordinationV1Api(api).list_namespaced_lease(
        namespace, label_selector=f"{SET_LABEL}=test"
    )
    return {lease.metadata.name: lease.spec.holder_identity for lease in listed.items}


async def test_a_joining_replica_gets_its_share_and_a_dead_ones_shards_move_within_the_lease(
    api: Any, namespace: str
) -> None:
    acquired: list[tuple[str, int]] = []
    watched: dict[str, frozenset[int]] = {}
    a = manager(api, namespace, "op-a", acquired, watched=watched)
    b = manager(api, namespace, "op-b", acquired, watched=watched)

    await a.tick()
    assert a.held() == list(range(SHARDS))  # alone: everything
    assert sorted(shard for _, shard in acquired) == list(range(SHARDS))
    assert watched["op-a"] == set(range(SHARDS))

    await b.tick()  # b sees a live: its share is still a's
    assert b.held() == []
    # ... but b watches its share already, so it is listed by the time a lets it go.
    assert len(watched["op-b"]) == SHARDS // 2
    assert_disjoint([a, b])
    await a.tick()  # a sees b: lets b's share go
    assert len(a.held()) == SHARDS // 2
    assert watched["op-a"] == set(a.held())
    assert_disjoint([a, b])
    await b.tick()  # b takes it
    assert len(b.held()) == SHARDS // 2
    assert watched["op-b"] == set(b.held())
    assert_disjoint([a, b])
    leases = await holders(api, namespace)
    assert sorted(h for n, h in leases.items() if "-shard-" in n) == ["op-a"] * 4 + ["op-b"] * 4

    # a dies (no more ticks): b takes a's shards once it has seen them unrenewed for a lease.
    died = time.monotonic()

    async def b_holds_all() -> bool | NotYet:
        await b.tick()
        assert_disjoint([a, b])
        return True if len(b.held()) == SHARDS else NotYet(b.held())

    await eventually_async(
        b_holds_all, within=3 * LEASE, what="b to take a's shards", interval=LEASE / 3
    )
    took = time.monotonic() - died
    assert took >= LEASE  # never before the lease time: a may only have been slow
    assert a.held() == []  # a's own clock says its holds have lapsed


async def test_a_replica_stopping_gracefully_hands_its_shards_over_at_the_next_tick(
    api: Any, namespace: str
) -> None:
    acquired: list[tuple[str, int]] = []
    a = manager(api, namespace, "op-a", acquired)
    b = manager(api, namespace, "op-b", acquired)
    for m in (a, b, a, b):
        await m.tick()
    assert len(b.held()) == SHARDS // 2

    running = asyncio.create_task(b.run())
    await asyncio.sleep(0.1)
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    assert b.held() == []
    leases = await holders(api, namespace)
    assert sorted(h or "" for n, h in leases.items() if "-shard-" in n).count("") == SHARDS // 2

    # b left (its member Lease is gone): a deals without it at its very next tick.
    await a.tick()
    assert a.held() == list(range(SHARDS))
    assert_disjoint([a, b])


async def test_a_hold_that_lapsed_on_a_slow_tick_delivers_the_pokes_it_dropped_when_renewed(
    api: Any, namespace: str
) -> None:
    """Pokes for a shard's tasks are dropped while its hold has lapsed; the renewal that ends
    the lapse must deliver them, or a message sent meanwhile waits forever."""
    acquired: list[tuple[str, int]] = []
    missed: list[set[tuple[str, str]]] = []
    a = manager(api, namespace, "op-a", acquired, missed)
    await a.tick()
    await a.tick()  # renewed in time: nothing to deliver
    assert missed == []

    await asyncio.sleep(LEASE * 0.9)  # past the hold (0.8 of the lease): no shard is held
    assert a.held() == []
    a.dropped(3, ("team", "t-1"))  # two messages' pokes came meanwhile
    a.dropped(3, ("team", "t-2"))
    await a.tick()
    assert a.held() == list(range(SHARDS))
    assert missed == [{("team", "t-1"), ("team", "t-2")}]
    assert acquired[SHARDS:] == []  # delivered one by one: no shard-wide look again


@pytest.mark.parametrize("seed", range(5))
async def test_replicas_ticking_at_random_never_both_hold_a_shard(
    api: Any, namespace: str, seed: int
) -> None:
    """Four replicas tick at random moments while one of them pauses (a long GC) and comes
    back, and another leaves; after every tick, no shard is believed held by two."""
    rng = random.Random(seed)
    acquired: list[tuple[str, int]] = []
    replicas = [manager(api, namespace, f"op-{i}", acquired) for i in range(4)]
    paused: dict[str, float] = {}
    gone: set[str] = set()
    deadline = time.monotonic() + 6 * LEASE

    async def life(m: ShardManager) -> None:
        while time.monotonic() < deadline and m.identity not in gone:
            if paused.get(m.identity, 0) > time.monotonic():
                await asyncio.sleep(0.05)
                continue
            await m.tick()
            assert_disjoint(replicas)
            await asyncio.sleep(rng.uniform(0.05, LEASE / 3))

    async def trouble() -> None:
        await asyncio.sleep(rng.uniform(LEASE, 2 * LEASE))
        paused["op-1"] = time.monotonic() + rng.uniform(LEASE / 2, 2 * LEASE)
        await asyncio.sleep(rng.uniform(LEASE, 2 * LEASE))
        gone.add("op-2")

    await asyncio.gather(*(life(m) for m in replicas), trouble())
    # Settled: the three left hold everything between them, evenly.
    for _ in range(6):
        for m in replicas:
            if m.identity not in gone:
                await m.tick()
        assert_disjoint(replicas)
        await asyncio.sleep(LEASE / 3)
    live = [m for m in replicas if m.identity not in gone]

    async def all_held() -> list[int] | NotYet:
        counts = sorted(len(m.held()) for m in live)
        if sum(counts) == SHARDS:
            return counts
        for m in live:
            await m.tick()
        assert_disjoint(replicas)
        return NotYet(counts)

    counts = await eventually_async(
        all_held, within=10 * LEASE, what="the three left to hold every shard", interval=0.1
    )
    assert counts == [2, 3, 3]
