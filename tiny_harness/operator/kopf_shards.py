"""kopf, watching only the objects of this replica's shards: one kopf instance per shard.

Unsharded, one kopf instance watches every task, message and turn record, for the operator's
whole life. Sharded, each shard this replica watches has a kopf instance of its own that asks
the API server for that shard's objects only (a label selector on
:data:`~tiny_harness.kube.names.SHARD_LABEL`). So an event costs CPU on the one replica that
works its task, not on every replica: adding replicas adds throughput instead of multiplying
the work of following the cluster.

Why an instance per shard rather than one instance with a selector naming all of them: kopf
reads its selectors when a watch starts and cannot be told to list afresh, and a running watch
never sends an object that comes into range because the selector changed. So a change of
shards needs a new watch, and with one instance for all shards it would list every kept shard
again too. kopf's first listing also costs more than linearly in the objects listed (each
object's handler waits for all of them to be indexed), so many small listings are much cheaper
than one large one: a replica taking over a dead one's shards lists those shards, nothing else.

The rules:

- **What is watched.** The shards this replica holds or is dealt (:meth:`Watches.want`, from
  each tick of the shard manager). A dealt shard is watched before it is taken, so its objects
  are listed by the time its Lease comes free.
- **When a shard's feed is read.** Once it is primed (:mod:`.priming`: every object of the
  shard listed into it), before its kopf instance starts: so no read ever sees a half-listed
  shard, and no handler runs before the feed holds the shard.
- **A shard no longer watched** is dropped from the cache at once, then its instance stopped.
- **No pass while kopf lists.** kopf lists the shard again when its instance starts, and
  queues every object it lists at once, paced by nothing: passes competing for the loop
  meanwhile would keep the whole listing in memory, and on a large namespace let its
  continue token expire. So the workers are paused (``pausing``) from the instance's start
  until its listing has told as many objects as the feed holds, or none for
  :data:`LISTING_QUIET` seconds; the pokes it causes queue, and are taken then.
- **Races.** Everything here runs on the event loop: a want that arrives while instances start
  or stop is taken up by the next round of the loop, which compares what runs with what is
  wanted. An instance's events only poke, and a poke is idempotent.
- **Stopping.** SIGINT and SIGTERM stop the operator, or do what the process that embeds it
  says (``on_signal``: the CLI stops everything it runs and exits 130 or 143). kopf installs
  its own signal handlers with each instance; they are put back after every start.
- **An instance that fails** (kopf ends its instance on an error it does not retry: a
  listing whose continue token expired, when a large namespace is listed more slowly than
  the API server keeps its history) is started again after a bounded wait
  (:data:`RESTART_BACKOFF`), and lists afresh; the feed it serves stays read meanwhile, and
  the listing tells it what changed. The operator never ends for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import kopf
from kubernetes_asyncio import client

from tiny_harness.core.backoff import Backoff
from tiny_harness.kube.names import GROUP, MESSAGE_PLURAL, PLURAL, TURN_PLURAL
from tiny_harness.operator.feed import Feed
from tiny_harness.operator.kopf_vault import new_vault
from tiny_harness.operator.settings import operator_settings
from tiny_harness.operator.shard_deal import selector

log = logging.getLogger(__name__)

#: The longest an instance is given to stop.
STOP_TIMEOUT: Final = 10.0
#: The waits before a failed instance is started again.
RESTART_BACKOFF: Final = Backoff(first=1.0, cap=30.0)
#: kopf's listing is taken for over once it has told as many objects as the feed holds, or
#: told none for this long.
LISTING_QUIET: Final = 5.0


class Pausing(Protocol):
    """What holds back the passes while kopf lists (:class:`~.slots.WorkerSlots`)."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...


WATCHED: Final = (PLURAL, MESSAGE_PLURAL, TURN_PLURAL)

#: Builds an instance's kopf registry: its handlers feed the given feed.
RegistryFactory = Callable[[Feed], kopf.OperatorRegistry]
#: Lists a shard's objects into its feed (the label selector names the shard; empty: all).
Prime = Callable[[Feed, str], Awaitable[object]]
#: Called when a shard's feed is to be read (``None``: the one feed of an unsharded operator).
Adopt = Callable[[int | None, Feed], None]


@dataclass(eq=False)
class _Instance:
    shard: int | None
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
        prime: Prime,
        adopt: Adopt,
        drop: Callable[[int | None], None],
        *,
        namespaces: Collection[str],
        sharded: bool,
        on_signal: Callable[[signal.Signals], None] | None = None,
        pausing: Pausing | None = None,
    ) -> None:
        self.api = api
        #: What SIGINT and SIGTERM do (kopf takes them over with each instance it starts;
        #: they are handed back after each start). None: stop the operator.
        self.on_signal = on_signal
        self.build = build
        self.prime = prime
        self.pausing = pausing
        self.adopt = adopt
        self.drop = drop
        self.namespaces: list[str] = [*namespaces]
        self.sharded = sharded
        self.instances: dict[int | None, _Instance] = {}
        self._wanted: frozenset[int] | None = None
        self._changed = asyncio.Event()
        self._stop = asyncio.Event()
        #: How many times the shards watched have changed (the first start included).
        self.changes = 0

    def want(self, shards: Collection[int]) -> None:
        """Watch these shards' objects (only sharded; the change is made by :meth:`run`)."""
        wanted = frozenset(shards)
        if wanted != self._wanted:
            self._wanted = wanted
            self._changed.set()

    def watching(self) -> frozenset[int]:
        return frozenset(s for s in self.instances if s is not None)

    async def run(
        self,
        *,
        ready_flag: asyncio.Event | None = None,
        stop_flag: asyncio.Event | None = None,
    ) -> None:
        stopping = asyncio.create_task(_either(stop_flag, self._stop), name="operator stop")
        self._own_signals()  # until a kopf instance starts (it takes them), and after
        try:
            if not self.sharded:
                instance = self._start(None)
                if ready_flag is not None:
                    await _first(instance.feed.filled.wait(), stopping, instance.running)
                    ready_flag.set()
                await self._until_an_instance_ends(stopping)
                return
            started = False
            while not stopping.done():
                changed = asyncio.create_task(self._changed.wait())
                ended = [i.running for i in self.instances.values()]
                await asyncio.wait({changed, stopping, *ended}, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                if stopping.done() or any(t.done() for t in ended):
                    return
                self._changed.clear()
                await self._reconcile(self._wanted or frozenset())
                if not started and ready_flag is not None:
                    ready_flag.set()
                started = True
        finally:
            stopping.cancel()
            instances = list(self.instances.values())
            self.instances.clear()
            await asyncio.gather(*(self._stop_instance(i) for i in instances))
            for instance in instances:
                task = instance.running
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]

    async def _until_an_instance_ends(self, stopping: asyncio.Task[None]) -> None:
        ended = [i.running for i in self.instances.values()]
        await asyncio.wait({stopping, *ended}, return_when=asyncio.FIRST_COMPLETED)

    async def _reconcile(self, wanted: frozenset[int]) -> None:
        gone = [s for s in self.instances if s not in wanted]
        new = sorted(wanted - self.instances.keys())
        if not gone and not new:
            return
        for shard in gone:
            self.drop(shard)
        stopping = [self._stop_instance(self.instances.pop(s)) for s in gone]
        for shard in new:
            self._start(shard)
        self.changes += 1
        log.info("watching shards %s", _shards(self.watching()))
        await asyncio.gather(*stopping)

    def settled(self) -> bool:
        """Is every watched shard read by the cache (its instance filled)?"""
        return all(i.feed.filled.is_set() for i in self.instances.values())

    def _start(self, shard: int | None) -> _Instance:
        instance = _Instance(shard, Feed())
        self.instances[shard] = instance
        instance.task = asyncio.create_task(
            self._primed_then_kopf(instance),
            name=f"kopf shard {_shards({shard} if shard is not None else None)}",
        )
        return instance

    async def _primed_then_kopf(self, instance: _Instance) -> None:
        """The shard's feed primed and read by the cache, then its kopf instance, until it is
        stopped (see the module's rules)."""
        shard = instance.shard
        label = selector({shard}) if shard is not None else ""
        await self.prime(instance.feed, label)
        if self.instances.get(shard) is not instance or instance.stop.is_set():
            return
        self.adopt(shard, instance.feed)
        settings = operator_settings()
        if label:
            for plural in WATCHED:
                settings.watching.label_selectors[GROUP, plural] = label
        failures = 0
        while not instance.stop.is_set():
            listing = asyncio.create_task(self._paused_while_listing(instance.feed))
            try:
                await _kopf(
                    self._own_signals,
                    registry=self.build(instance.feed),
                    settings=settings,
                    clusterwide=not self.namespaces,
                    namespaces=self.namespaces,
                    stop_flag=instance.stop,
                    standalone=True,
                )
            except Exception as exc:  # kopf gave up on something it does not retry
                failures += 1
                wait = RESTART_BACKOFF.delay(failures)
                log.warning(
                    "kopf for shard %s failed (%s: %s); starting it again in %.1fs",
                    _shards({shard} if shard is not None else None),
                    type(exc).__name__,
                    str(exc)[:300],
                    wait,
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(instance.stop.wait(), wait)
            else:
                if instance.stop.is_set():
                    return
                # Ended by itself, unasked: kopf gave up quietly. Never a silent end.
                failures += 1
                wait = RESTART_BACKOFF.delay(failures)
                log.warning(
                    "kopf for shard %s ended unasked; starting it again in %.1fs",
                    _shards({shard} if shard is not None else None),
                    wait,
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(instance.stop.wait(), wait)
            finally:
                listing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listing

    async def _paused_while_listing(self, feed: Feed) -> None:
        """The workers paused until kopf's listing of ``feed``'s shard is over (see the
        module's rules)."""
        feed.expect_listing()
        if self.pausing is None:
            return
        self.pausing.pause()
        try:
            while not feed.listed.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(feed.listed.wait(), LISTING_QUIET / 5)
                if time.monotonic() - feed.last_listed >= LISTING_QUIET:
                    break
        finally:
            self.pausing.resume()

    def _own_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._signalled, sig)

    def _signalled(self, sig: signal.Signals) -> None:
        log.info("%s received: the operator is stopping", sig.name)
        if self.on_signal is not None:
            self.on_signal(sig)
        else:
            self._stop.set()

    async def _stop_instance(self, instance: _Instance) -> None:
        instance.stop.set()
        task = instance.running
        if not instance.feed.filled.is_set():
            task.cancel()  # still listing: nothing to stop gracefully
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                await asyncio.shield(task)
        except TimeoutError:
            log.warning("kopf for shard %s did not stop in time", instance.shard)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        except Exception:  # a failed instance is reported by run()
            pass


async def _kopf(spawned: Callable[[], None], **options: Any) -> None:
    """One kopf instance, until its stop flag is set or a root task fails.

    Its root tasks are spawned and awaited here rather than by ``kopf.operator()``: on its way
    out that cancels every task the event loop started after it, which would take the other
    instances and every task worker with it. Each root task stops what it spawned.
    ``spawned`` is called once kopf has spawned them (and installed its signal handlers).
    """
    # Our own vault, to close its API sessions when the instance ends (kopf's cleanup would,
    # but its root task is cancelled with the others).
    vault = new_vault()
    tasks = await kopf.spawn_tasks(vault=vault, **options)
    spawned()
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        await vault.close()
    for task, result in zip(tasks, results, strict=True):
        if task in done and isinstance(result, Exception):
            raise result


async def _first(*waits: Awaitable[Any]) -> None:
    """Until the first of ``waits`` is done (the others are left as they are, or cancelled if
    they were made here)."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    made = [t for t, w in zip(tasks, waits, strict=True) if t is not w]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in made:
            task.cancel()


async def _either(flag: asyncio.Event | None, own: asyncio.Event) -> None:
    waits = [asyncio.create_task(own.wait())]
    if flag is not None:
        waits.append(asyncio.create_task(flag.wait()))
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def _shards(selection: Collection[int] | None) -> str:
    if selection is None:
        return "all"
    return ",".join(str(s) for s in sorted(selection)) or "none"
