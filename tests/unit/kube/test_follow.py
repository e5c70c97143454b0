"""The one way the harness follows a collection (kube/watching.py ``follow``), against a
stand-in API server on loopback: the listing, then the watch from its version; after 410 Gone a
new listing that tells what changed meanwhile, deletions included; after a refusal, a bounded
wait and a new listing; and the watch on a client of its own."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from tests.unit.kube.fake_api import FakeCollection, serving
from tiny_harness.core.backoff import Backoff
from tiny_harness.kube.watching import Synced, WatchEvent, follow

NS = "team-a"
PLURAL = "harnessagents"
AT_ONCE = Backoff(first=0.0, cap=0.0)

Heard = tuple[str, str] | str


def things(*names: str) -> FakeCollection:
    collection = FakeCollection(NS, PLURAL)
    for name in names:
        collection.put(name, spec={"n": 0})
    return collection


async def hear(changes: AsyncIterator[WatchEvent | Synced], count: int) -> list[Heard]:
    """The next ``count`` things the follower says: (type, name), or "synced"."""
    heard: list[Heard] = []
    async with asyncio.timeout(5):
        while len(heard) < count:
            change = await anext(changes)
            if isinstance(change, Synced):
                heard.append("synced")
            else:
                heard.append((change.type, change.object["metadata"]["name"]))
    return heard


async def test_the_listing_comes_first_then_the_changes_after_it() -> None:
    collection = things("echo", "market")
    collection.scripts = [[FakeCollection.modified("echo", spec={"n": 1})]]
    async with serving(collection) as api:
        changes = follow(api, NS, PLURAL, backoff=AT_ONCE)
        try:
            heard = await hear(changes, 4)
        finally:
            await changes.aclose()

    assert heard == [("ADDED", "echo"), ("ADDED", "market"), "synced", ("MODIFIED", "echo")]
    assert (collection.lists, collection.watches) == (1, 1)


async def test_after_410_gone_a_new_listing_tells_the_deletion_missed_meanwhile() -> None:
    """The watch's history is gone (410) while an object was deleted and another created
    unseen: the new listing lacks the one and has the other, and the follower hears both."""
    collection = things("echo", "market")
    collection.scripts = [
        [
            FakeCollection.modified("echo", spec={"n": 1}),
            FakeCollection.meanwhile(lambda c: c.delete("market")),
            FakeCollection.meanwhile(lambda c: c.put("weather", spec={"n": 0})),
            FakeCollection.expired(),
        ]
    ]
    async with serving(collection) as api:
        changes = follow(api, NS, PLURAL, backoff=AT_ONCE)
        try:
            heard = await hear(changes, 7)
        finally:
            await changes.aclose()

    assert heard == [
        ("ADDED", "echo"),
        ("ADDED", "market"),
        "synced",
        ("MODIFIED", "echo"),
        ("DELETED", "market"),  # heard although no watch event ever said so
        ("ADDED", "weather"),
        "synced",  # echo, unchanged since its event, is not told again
    ]
    assert collection.lists == 2


async def test_a_deleted_object_is_told_as_it_was_last_seen() -> None:
    collection = things("market")
    collection.scripts = [
        [FakeCollection.meanwhile(lambda c: c.delete("market")), FakeCollection.expired()]
    ]
    async with serving(collection) as api:
        changes = follow(api, NS, PLURAL, backoff=AT_ONCE)
        try:
            await hear(changes, 2)
            gone = await anext(changes)
        finally:
            await changes.aclose()

    assert isinstance(gone, WatchEvent)
    assert gone.type == "DELETED"
    assert gone.object["metadata"]["namespace"] == NS
    assert gone.object["spec"] == {"n": 0}


async def test_a_refused_listing_is_made_again_after_a_bounded_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    collection = things("echo")
    collection.refuse_lists = 2
    waits: list[float] = []
    counting = Backoff(first=0.01, cap=0.02, jitter=0.0)

    class Counted(Backoff):
        def delay(self, retry: int, *, retry_after: float | None = None) -> float:
            waits.append(counting.delay(retry))
            return waits[-1]

    async with serving(collection) as api:
        changes = follow(api, NS, PLURAL, backoff=Counted(0.0, 0.0))
        try:
            with caplog.at_level(logging.WARNING):
                heard = await hear(changes, 2)
        finally:
            await changes.aclose()

    assert heard == [("ADDED", "echo"), "synced"]
    assert collection.lists == 3
    assert waits == [0.01, 0.02]  # growing, and capped
    assert "harnessagents in team-a: listing or watching failed" in caplog.text


async def test_the_watch_runs_on_a_client_of_its_own() -> None:
    """Given a client that can no longer be used (as the operator's capped write client must
    not be for watches), the follower lists and watches all the same: on its own client."""
    collection = things("echo")
    async with serving(collection) as api:
        await api.close()
        changes = follow(api, NS, PLURAL, backoff=AT_ONCE)
        try:
            heard = await hear(changes, 2)
        finally:
            await changes.aclose()

    assert heard == [("ADDED", "echo"), "synced"]
