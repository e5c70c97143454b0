"""kopf, watching only the objects of this replica's shards; started again when they change.

Unsharded, one kopf instance watches every task, message and turn record, for the operator's
whole life. Sharded, each replica's kopf asks the API server for the objects of its shards only
(a label selector on :data:`~tiny_harness.kube.names.SHARD_LABEL`), so an event costs CPU on
the one replica that works its task, not on every replica: adding replicas adds throughput
instead of multiplying the work of following the cluster.

kopf reads its label selectors when a watch starts and cannot be told to list afresh, and an
object that comes into a selector's range by the selector changing (not by the object changing)
is never sent by a running watch. So a change of shards starts a new kopf instance with the new
selector, and then stops the old one. The rules for the hand-over:

- **What is watched.** The shards this replica holds or is dealt
  (:meth:`Watches.want`, from each tick of the shard manager). A dealt shard is watched before
  it is taken, so its objects are listed by the time its Lease comes free.
- **When the new instance is read.** From its first handler call: kopf calls none before all
  its indexes hold everything their first listing returned. Until then the cache reads the old
  instance's indexes, which go on following the shards the old selector named: no read ever
  sees a half-listed index. A new selector that matches nothing at all is read at once (no
  handler would ever be called); one whose objects vanish before kopf lists them is read
  after :data:`FILL_TIMEOUT` seconds, with a warning.
- **Only then the old instance stops.** Both deliver events meanwhile; an event only pokes, and
  a poke is idempotent.
- **Stopping.** An instance that ends by itself (a signal: the newest instance's kopf handles
  SIGINT and SIGTERM) or fails ends the whole operator, and the others are stopped.
- **Changes while a hand-over runs** are taken up when it ends: one instance at a time is
  being filled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Final

import kopf
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.kube.names import GROUP, MESSAGE_PLURAL, PLURAL, TURN_PLURAL, VERSION
from tiny_harness.operator.cache import Feed
from tiny_harness.operator.settings import operator_settings
from tiny_harness.operator.shards import selector

log = logging.getLogger(__name__)

#: The longest a new instance's indexes are waited for before they are read anyway.
FILL_TIMEOUT: Final = 30.0
#: The longest an old instance is given to stop.
STOP_TIMEOUT: Final = 10.0

WATCHED: Final = (PLURAL, MESSAGE_PLURAL, TURN_PLURAL)

#: Builds an instance's kopf registry: its index functions feed the given feed, and every
#: handler calls the given hook first (it adopts the feed on the first call).
RegistryFactory = Callable[[Feed, Callable[[Feed], None]], kopf.OperatorRegistry]


@dataclass(eq=False)
class _Instance:
    selection: frozenset[int] | None
    feed: Feed
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    @property
    def running(self) -> asyncio.Task[None]:
        assert self.task is not None
        return self.task


class Watches:
    """The kopf instances of one operator process; :meth:`run` until the operator stops."""

    def __init__(
        self,
        api: client.ApiClient,
        build: RegistryFactory,
        adopt: Callable[[Feed], None],
        *,
        namespaces: Collection[str],
        sharded: bool,
    ) -> None:
        self.api = api
        self.build = build
        self.adopt = adopt
        self.namespaces: list[str | None] = [*namespaces]
        self.sharded = sharded
        self._wanted: frozenset[int] | None = None
        self._changed = asyncio.Event()
        self._filling: _Instance | None = None
        self.restarts = 0

    def want(self, shards: Collection[int]) -> None:
        """Watch these shards' objects (only sharded; the change is made by :meth:`run`)."""
        wanted = frozenset(shards)
        if wanted != self._wanted:
            self._wanted = wanted
            self._changed.set()

    async def run(
        self,
        *,
        ready_flag: asyncio.Event | None = None,
        stop_flag: asyncio.Event | None = None,
    ) -> None:
        stopping = asyncio.create_task(_wait(stop_flag), name="operator stop flag")
        instances: list[_Instance] = []
        try:
            if self.sharded:
                # The first deal comes with the shard manager's first tick.
                await self._first(stopping)
                if stopping.done():
                    return
            current = self._start(self._wanted if self.sharded else None, ready_flag)
            instances.append(current)
            self.adopt(current.feed)
            while True:
                changed = asyncio.create_task(self._changed.wait())
                await asyncio.wait(
                    {current.running, changed, stopping}, return_when=asyncio.FIRST_COMPLETED
                )
                changed.cancel()
                if current.running.done() or stopping.done():
                    return
                self._changed.clear()
                if self._wanted == current.selection:
                    continue
                new = self._start(self._wanted, None)
                instances.append(new)
                if not await self._fill(new, stopping):
                    return
                old, current = current, new
                self.restarts += 1
                log.info(
                    "watching shards %s (was %s)",
                    _shards(current.selection),
                    _shards(old.selection),
                )
                await self._stop(old)
                instances.remove(old)
        finally:
            stopping.cancel()
            await asyncio.gather(*(self._stop(i) for i in instances))
            for instance in instances:
                if instance.running.done() and not instance.running.cancelled():
                    error = instance.running.exception()
                    if error is not None:
                        raise error

    async def _first(self, stopping: asyncio.Task[None]) -> None:
        if self._wanted is None:
            changed = asyncio.create_task(self._changed.wait())
            await asyncio.wait({changed, stopping}, return_when=asyncio.FIRST_COMPLETED)
            changed.cancel()
        self._changed.clear()

    def _start(
        self, selection: frozenset[int] | None, ready_flag: asyncio.Event | None
    ) -> _Instance:
        instance = _Instance(selection, Feed())
        settings = operator_settings()
        if selection is not None:
            for plural in WATCHED:
                settings.watching.label_selectors[GROUP, plural] = selector(selection)
        registry = self.build(instance.feed, self._filled)
        self._filling = instance
        instance.task = asyncio.create_task(
            _kopf(
                registry=registry,
                indexers=instance.feed.indexers,
                settings=settings,
                clusterwide=not self.namespaces,
                namespaces=[n for n in self.namespaces if n is not None],
                stop_flag=instance.stop,
                ready_flag=ready_flag,
                standalone=True,
            ),
            name=f"kopf {_shards(selection)}",
        )
        return instance

    def _filled(self, feed: Feed) -> None:
        """Every handler's first step: the first call of the instance being filled adopts it
        (on the event loop, before the handler's pokes read the cache)."""
        if feed.filled.is_set():
            return
        feed.filled.set()
        if self._filling is not None and self._filling.feed is feed:
            self.adopt(feed)

    async def _fill(self, new: _Instance, stopping: asyncio.Task[None]) -> bool:
        """Wait until ``new`` is read (see the module's rules); False if the operator stops."""
        if new.selection is not None and await self._nothing_selected(new.selection):
            self._filled(new.feed)
        filled = asyncio.create_task(new.feed.filled.wait())
        done, _ = await asyncio.wait(
            {filled, new.running, stopping},
            timeout=FILL_TIMEOUT,
            return_when=asyncio.FIRST_COMPLETED,
        )
        filled.cancel()
        if new.running.done() or stopping.done():
            return False
        if not done:
            log.warning(
                "kopf's indexes for shards %s were not filled within %.0fs; reading them anyway",
                _shards(new.selection),
                FILL_TIMEOUT,
            )
            self._filled(new.feed)
        return True

    async def _nothing_selected(self, selection: frozenset[int]) -> bool:
        """Does the selector match no object at all? (On an error: not known, so no.)"""
        try:
            return await self._count_none(selection)
        except (ApiException, OSError, TimeoutError) as exc:
            log.warning("could not list shards %s: %s", _shards(selection), exc)
            return False

    async def _count_none(self, selection: frozenset[int]) -> bool:
        objects = client.CustomObjectsApi(self.api)
        label_selector = selector(selection)
        for plural in WATCHED:
            for namespace in [*self.namespaces] or [None]:
                if namespace is None:
                    found = await objects.list_cluster_custom_object(
                        GROUP, VERSION, plural, label_selector=label_selector, limit=1
                    )
                else:
                    found = await objects.list_namespaced_custom_object(
                        GROUP, VERSION, namespace, plural, label_selector=label_selector, limit=1
                    )
                if found.get("items"):
                    return False
        return True

    async def _stop(self, instance: _Instance) -> None:
        instance.stop.set()
        task = instance.running
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT)
        except TimeoutError:
            log.warning("kopf for shards %s did not stop in time", _shards(instance.selection))
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        except Exception:  # a failed instance is reported by run()
            pass


async def _kopf(**options: Any) -> None:
    """One kopf instance, until its stop flag is set, a signal comes, or a root task fails.

    Its root tasks are spawned and awaited here rather than by ``kopf.operator()``: on its way
    out that cancels every task the event loop started after it, which would take the other
    instance and every task worker with it. Each root task stops what it spawned.
    """
    tasks = await kopf.spawn_tasks(**options)
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    for task, result in zip(tasks, results, strict=True):
        if task in done and isinstance(result, Exception):
            raise result


async def _wait(flag: asyncio.Event | None) -> None:
    if flag is None:
        await asyncio.Event().wait()
    else:
        await flag.wait()


def _shards(selection: frozenset[int] | None) -> str:
    if selection is None:
        return "all"
    return ",".join(str(s) for s in sorted(selection)) or "none"
