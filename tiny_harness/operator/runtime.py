"""The operator's runtime: one worker per task with work to do, started by events.

kopf delivers watch events; each event only *pokes* the task it concerns. A poke starts the
task's worker if none is running, or tells the running one to look again. Workers hold no
state of their own that a restart would miss (see :mod:`tiny_harness.operator.worker`): they
read the cache that the watches feed (:mod:`tiny_harness.operator.cache`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from kubernetes_asyncio import client

from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.commands.setup import BuiltCommands, build_command_registry
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.settings import OperatorSettings
from tiny_harness.core.task import Runner
from tiny_harness.kube.events import post_event
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.operator.cache import Cache
from tiny_harness.operator.labeller import Labeller
from tiny_harness.operator.lease import LeaseObserver
from tiny_harness.operator.metrics import OperatorMetrics
from tiny_harness.operator.remote import Remotes
from tiny_harness.operator.shard_deal import shard_named
from tiny_harness.operator.shard_leases import ShardManager
from tiny_harness.operator.slots import Ticket, WorkerSlots
from tiny_harness.operator.tool_discovery import ToolServers
from tiny_harness.operator.tool_offers import NoToolServers
from tiny_harness.operator.worker import TaskWorker

log = logging.getLogger(__name__)

#: How many stray tasks' uids are remembered as reported (one Event each, not one per event).
_STRAYS_KEPT = 4096

Key = tuple[str, str]


class Runtime:
    """Workers by task, the cache they read, and the lease observer they share.

    The runtime is the only place a worker is started. A poke for a task with a running worker
    raises that worker's generation (it will look again before it exits); otherwise it asks for
    one, which starts at once or, in a burst, when a slot is free (:mod:`.slots`). Both
    happen on the event loop's thread, so a poke can never fall between a worker's last look
    and its exit: once its coroutine has returned, its asyncio task is done and the next poke
    asks for a new worker.
    """

    def __init__(
        self,
        api: client.ApiClient,
        loop: CoreLoop,
        catalog: ModelCatalog,
        settings: OperatorSettings,
        metrics: OperatorMetrics,
        cache: Cache,
        *,
        commands: BuiltCommands | None = None,
    ) -> None:
        self.api = api
        self.loop = loop
        self.catalog = catalog
        self.settings = settings
        self.metrics = metrics
        self.cache = cache
        self.identity = settings.replica_identity
        self.leases = LeaseObserver(self.identity, settings.lease_seconds)
        self.slots: WorkerSlots[Key] = WorkerSlots(self._start)
        self.commands = commands or build_command_registry(catalog)
        self._workers: dict[Key, tuple[TaskWorker, asyncio.Task[None]]] = {}
        self._written: dict[tuple[str, str, str], deque[str]] = {}
        #: Set when the replicas split the tasks (operator/shard_leases.py): then a task is worked
        #: only while this replica holds its shard.
        self.shards: ShardManager | None = None
        #: Set with ``shards``: labels the objects that came without a shard label.
        self.labeller: Labeller | None = None
        #: The remote agents (HarnessAgents) sub-tasks may run on, when the operator has them.
        self.remotes: Remotes | None = None
        #: The tool servers tasks' turns are offered (operator/tool_discovery.py).
        self.tool_servers: ToolServers | NoToolServers = NoToolServers()
        self._strays_reported: set[str] = set()

    def owns(self, namespace: str, name: str) -> bool:
        """Is this task this replica's to work? Always, unless sharded; a task whose shard is
        not known yet gets a look (its worker finds nothing to do and exits). A no is a look
        dropped: the shard manager hears of it (see ``ShardManager.dropped``)."""
        if self.shards is None:
            return True
        shard = shard_named(self.cache.feeds.shard(namespace, name), self.shards.shards)
        if shard is None:
            return True
        if self.shards.holds(shard):
            return True
        self.shards.dropped(shard, (namespace, name))
        return False

    def poke_all(self, tasks: set[Key]) -> None:
        for namespace, name in tasks:
            self.poke(namespace, name)

    def shards_counted(self, held: int) -> None:
        self.metrics.shards_held.set(held)

    def shard_acquired(self, shard: int) -> None:
        """A shard was taken: look at each of its tasks, so nothing sent while nobody held it
        waits for another event, and label what was waiting for its holder to label it."""
        for namespace, name in self.cache.feeds.in_shard(str(shard)):
            self.poke(namespace, name)
        if self.labeller is not None:
            self.labeller.acquired(shard)

    def unwatched(self, shard: int | None) -> None:
        """The shard is no longer watched here: stop reading its tasks and counting them in
        this replica's tasks-by-state gauge (the replica that takes it counts them now; the
        dashboard sums the replicas)."""
        feed = self.cache.feeds.get(shard)
        if feed is not None:
            for namespace, name in list(feed.shards):
                self.metrics.task_state(namespace, name, None)
        self.cache.drop(shard)

    def observe_lease(self, namespace: str, name: str, runner: dict[str, Any] | None) -> None:
        """Time another replica's runner lease on a task this replica does not work, so that
        if its shard comes here after that replica died, the lease time has been counting."""
        try:
            parsed = Runner.model_validate(runner) if runner else None
        except ValueError:
            return
        self.leases.judge((namespace, name), parsed)

    def poke(self, namespace: str, name: str) -> None:
        """Something about this task changed: make sure a worker looks at it (if the task is
        this replica's to work)."""
        if not self.owns(namespace, name):
            return
        key = (namespace, name)
        running = self._workers.get(key)
        if running is not None and not running[1].done():
            running[0].poke()
            return
        self.slots.ask(key)

    def _start(self, key: Key, ticket: Ticket) -> None:
        """Admitted: start the task's worker, which gives the slot back when it exits."""
        worker = TaskWorker(self, *key, ticket=ticket)
        task = asyncio.create_task(worker.run(), name=f"task {key[0]}/{key[1]}")
        self._workers[key] = (worker, task)

        def forget(done: asyncio.Task[None]) -> None:
            ticket.release()
            if self._workers.get(key, (None, None))[1] is done:
                del self._workers[key]
            if not done.cancelled() and done.exception() is not None:
                log.error("task %s/%s: worker died", *key, exc_info=done.exception())

        task.add_done_callback(forget)

    def poke_unless_own(self, kind: str, namespace: str, name: str, task: str, rv: str) -> None:
        """A watch event for an object: poke its task, unless the event only shows a version
        this replica wrote itself (its worker already acted on that write)."""
        key = (kind, namespace, name)
        written = self._written.get(key)
        if written is not None and rv in written:
            # Versions are written in order: this one and any older are now seen.
            while written and written.popleft() != rv:
                pass
            if not written:
                del self._written[key]
            return
        self.poke(namespace, task)

    def written(self, namespace: str, name: str, resource_version: str) -> None:
        """Remember versions of a task this replica wrote, so their watch events are not news.
        A few are kept: events can arrive after the next write already happened."""
        self._remember("task", namespace, name, resource_version)

    def written_record(self, namespace: str, record: TurnRecord) -> None:
        self._remember("turn", namespace, record.name, record.resource_version)

    def _remember(self, kind: str, namespace: str, name: str, rv: str) -> None:
        self._written.setdefault((kind, namespace, name), deque(maxlen=8)).append(rv)

    def forget(self, namespace: str, name: str) -> None:
        """The task is gone: drop what was kept about it."""
        self._written.pop(("task", namespace, name), None)
        self.slots.drop((namespace, name))
        self.cache.forget(namespace, name)
        self.leases.forget((namespace, name))

    def wake_later(self, namespace: str, name: str, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self.poke, namespace, name)

    async def event(
        self, obj: dict[str, Any], reason: str, message: str, *, warning: bool = False
    ) -> None:
        """Post a Kubernetes Event on the task (best effort: an Event is never worth a retry;
        :mod:`tiny_harness.kube.events` says why the operator posts them itself)."""
        await post_event(self.api, obj, reason, message, warning=warning, instance=self.identity)

    async def report_stray(self, obj: dict[str, Any], parent: dict[str, Any]) -> None:
        """Say once, on ``obj``, that it names ``parent`` as its parent without being its
        child (no owner reference to the parent's uid, which only the harness writes): the
        parent shows no row for it, takes no turn for it and counts none of its usage."""
        uid = str(obj["metadata"].get("uid") or "")
        if uid in self._strays_reported:
            return
        if len(self._strays_reported) >= _STRAYS_KEPT:
            self._strays_reported.clear()
        self._strays_reported.add(uid)
        name = parent["metadata"]["name"]
        log.warning(
            "task %s/%s names %s as its parent but is not its sub-task; ignored",
            obj["metadata"].get("namespace"),
            obj["metadata"]["name"],
            name,
        )
        await self.event(
            obj,
            "NotASubTask",
            f"spec.parent names task {name}, but this task was not created by the harness as "
            f"its sub-task (no owner reference to {name}'s uid): {name} does not count it as "
            "a sub-task, shows no row for it and takes no turn for it. Ask a participant who "
            f"may end {name} to start sub-tasks through /sub-task or the A2A gateway.",
            warning=True,
        )

    async def shutdown(self) -> None:
        tasks = [t for _, t in self._workers.values()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
