"""The operator's runtime: one worker per task with work to do, started by events.

kopf delivers watch events; each event only *pokes* the task it concerns. A poke starts the
task's worker if none is running, or tells the running one to look again. Workers hold no
state of their own that a restart would miss (see :mod:`tiny_harness.operator.worker`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

import kopf
from kubernetes_asyncio import client

from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.commands.setup import BuiltCommands, build_command_registry
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.settings import OperatorSettings
from tiny_harness.operator.metrics import OperatorMetrics
from tiny_harness.operator.worker import TaskWorker

log = logging.getLogger(__name__)

Key = tuple[str, str]


class Runtime:
    def __init__(
        self,
        api: client.ApiClient,
        loop: CoreLoop,
        catalog: ModelCatalog,
        settings: OperatorSettings,
        metrics: OperatorMetrics,
        *,
        commands: BuiltCommands | None = None,
    ) -> None:
        self.api = api
        self.loop = loop
        self.catalog = catalog
        self.settings = settings
        self.metrics = metrics
        self.identity = settings.replica_identity
        self.commands = commands or build_command_registry(catalog)
        self._workers: dict[Key, tuple[TaskWorker, asyncio.Task[None]]] = {}
        self._written: dict[Key, deque[str]] = {}
        self._children: dict[Key, set[str]] = {}

    def poke(self, namespace: str, name: str, resource_version: str | None = None) -> None:
        """Something about this task changed. An event for the version this operator wrote
        itself is not news and is ignored."""
        key = (namespace, name)
        if resource_version is not None and resource_version in self._written.get(key, ()):
            return
        running = self._workers.get(key)
        if running is not None and not running[1].done():
            running[0].poke(resource_version)
            return
        worker = TaskWorker(self, namespace, name)
        task = asyncio.create_task(worker.run(), name=f"task {namespace}/{name}")
        self._workers[key] = (worker, task)

        def forget(done: asyncio.Task[None]) -> None:
            if self._workers.get(key, (None, None))[1] is done:
                del self._workers[key]

        task.add_done_callback(forget)

    def written(self, namespace: str, name: str, resource_version: str) -> None:
        """Remember versions this operator wrote, so their watch events are not news. A few
        are kept: events can arrive after the next write already happened."""
        self._written.setdefault((namespace, name), deque(maxlen=8)).append(resource_version)

    def wrote(self, namespace: str, name: str, resource_version: str) -> bool:
        return resource_version in self._written.get((namespace, name), ())

    def saw_child(self, namespace: str, parent: str, child: str, *, gone: bool = False) -> None:
        """Index of children by parent, fed by task events, so a task without children never
        lists them."""
        children = self._children.setdefault((namespace, parent), set())
        if gone:
            children.discard(child)
        else:
            children.add(child)

    def has_children(self, namespace: str, name: str) -> bool:
        return bool(self._children.get((namespace, name)))

    def wake_later(self, namespace: str, name: str, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self.poke, namespace, name)

    async def event(
        self, obj: dict[str, Any], reason: str, message: str, *, warning: bool = False
    ) -> None:
        """Post a Kubernetes Event on the task (best effort: an Event is never worth a retry)."""
        try:
            body: Any = obj
            (kopf.warn if warning else kopf.info)(body, reason=reason, message=message)
        except Exception:  # outside kopf's context, or the queue is gone at shutdown
            log.debug("could not post event %s for %s", reason, obj["metadata"]["name"])

    async def shutdown(self) -> None:
        tasks = [t for _, t in self._workers.values()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
