"""A shard's objects listed into its feed before its kopf instance starts.

kopf would list them too, but tells no handler when its listing is over (only index handlers
wait for it, each object for all the others: the square of the objects listed), and the first
pass over a task must see all its messages and records, or it could take a message twice or
run a journaled step again. So the feed is primed here with one listing of each kind, page by
page (:func:`tiny_harness.kube.watching.follow_listings`, stopped at its first
:class:`~tiny_harness.kube.watching.Synced`), and only then is the instance started; its own
listing then tells the cache nothing new (:meth:`Cache.saw` drops a version it holds), and
its watch everything after.

The rule for the gap between the two listings: an object created in it is told by kopf's
listing; one changed in it, likewise; one deleted in it stays in the feed until its task is
read back by name (a 404 forgets it) or deleted. So the window costs at most a stale object
of a task that is gone, never a missed one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Collection
from typing import Final

from kubernetes_asyncio import client

from tiny_harness.kube.watching import Synced, WatchEvent, follow_listings
from tiny_harness.operator.cache import Cache
from tiny_harness.operator.feed import MESSAGES, PLURALS, TASKS, TURNS, Feed, plain

log = logging.getLogger(__name__)

#: Objects per page of the priming listing: with 64 KiB goals, a page is a few MB.
PAGE: Final = 100


async def prime(
    api: client.ApiClient,
    cache: Cache,
    feed: Feed,
    *,
    namespaces: Collection[str],
    label_selector: str = "",
    page: int = PAGE,
) -> int:
    """List every task, message and turn record the selector matches (in ``namespaces``, or
    the whole cluster) into ``feed``, and mark it filled. Returns how many objects were told.
    Errors are retried as every follower's are (the API server may be starting too)."""
    started = time.monotonic()
    where: list[str | None] = [*namespaces] or [None]
    told = 0

    async def one(kind: str, namespace: str | None) -> None:
        nonlocal told
        listings = follow_listings(
            api, namespace, PLURALS[kind], label_selector=label_selector, page=page
        )
        async with contextlib.aclosing(listings) as items:
            async for item in items:
                if isinstance(item, Synced):
                    return
                if isinstance(item, WatchEvent):
                    cache.saw(feed, kind, plain(item.object))
                    told += 1

    async with asyncio.TaskGroup() as listing:
        for kind in (TASKS, MESSAGES, TURNS):
            for namespace in where:
                listing.create_task(one(kind, namespace))
    feed.filled.set()
    log.info(
        "listed %d objects%s in %.1fs; %.1f MB kept whole",
        told,
        f" ({label_selector})" if label_selector else "",
        time.monotonic() - started,
        cache.resident.bytes / (1024 * 1024),
    )
    return told
