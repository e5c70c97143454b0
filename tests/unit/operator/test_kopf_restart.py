"""A kopf instance that fails is started again, and the operator goes on: kopf ends an
instance on an error it does not retry (a listing whose continue token expired while a large
namespace was listed), which must never end the operator (operator/kopf_shards.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import kopf
import pytest

from tiny_harness.core.backoff import Backoff
from tiny_harness.operator import kopf_shards
from tiny_harness.operator.feed import Feed
from tiny_harness.operator.kopf_shards import Watches


def watches_on(build: Any, adopt: Any = lambda shard, feed: None) -> Watches:
    """Watches of one unsharded instance, its feed primed at once, no real API."""

    async def prime(feed: Feed, label: str) -> None:
        feed.filled.set()

    return Watches(
        None,  # type: ignore[arg-type]
        build,
        prime,
        adopt,
        lambda shard: None,
        namespaces=["team-a"],
        sharded=False,
        on_signal=lambda sig: None,
    )


async def test_a_failed_instance_is_started_again_and_the_operator_stops_only_when_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    starts: list[Feed] = []
    adopted: list[Feed] = []
    second_started = asyncio.Event()

    async def instance(spawned: Any, **options: Any) -> None:
        starts.append(options["registry"].feed)
        if len(starts) == 1:
            raise RuntimeError("The provided continue parameter is too old (410)")
        second_started.set()
        await options["stop_flag"].wait()

    def build(feed: Feed) -> kopf.OperatorRegistry:
        registry = kopf.OperatorRegistry()
        registry.feed = feed  # type: ignore[attr-defined]
        return registry

    monkeypatch.setattr(kopf_shards, "_kopf", instance)
    monkeypatch.setattr(kopf_shards, "RESTART_BACKOFF", Backoff(first=0.0, cap=0.0))
    watches = watches_on(build, lambda shard, feed: adopted.append(feed))
    stop = asyncio.Event()
    ready = asyncio.Event()
    running = asyncio.create_task(watches.run(stop_flag=stop, ready_flag=ready))
    await asyncio.wait_for(second_started.wait(), 5)

    assert ready.is_set()
    assert not running.done()
    # The same feed, primed once, read by the cache throughout.
    assert starts[0] is starts[1]
    assert adopted == [starts[0]]
    stop.set()
    await asyncio.wait_for(running, 5)
    assert running.exception() is None


async def test_an_instance_that_ends_unasked_is_started_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    starts = 0
    again = asyncio.Event()

    async def instance(spawned: Any, **options: Any) -> None:
        nonlocal starts
        starts += 1
        if starts == 1:
            return  # kopf gave up quietly
        again.set()
        await options["stop_flag"].wait()

    monkeypatch.setattr(kopf_shards, "_kopf", instance)
    monkeypatch.setattr(kopf_shards, "RESTART_BACKOFF", Backoff(first=0.0, cap=0.0))
    watches = watches_on(lambda feed: kopf.OperatorRegistry())
    stop = asyncio.Event()
    running = asyncio.create_task(watches.run(stop_flag=stop))
    await asyncio.wait_for(again.wait(), 5)
    assert not running.done()
    stop.set()
    await asyncio.wait_for(running, 5)
