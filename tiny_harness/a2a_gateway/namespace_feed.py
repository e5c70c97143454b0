"""The gateway's one follow of its namespace: one watch of tasks and one of messages, shared.

Whatever the number of open streams, sends and lists, a gateway replica holds two watches on
the API server for its namespace (``kube.watching.follow_listings``): ``HarnessTask`` objects
whole, ``HarnessMessage`` objects as metadata alone. What they tell goes, in the one step of
the event loop that receives it, to:

- the task index (:mod:`.task_index`), which answers every read of a task and every list;
- the fan-out (:mod:`.fanout`), which queues each change for the streams that follow its task;
- the quota tally (:mod:`.tally`), which counts what is stored.

Until the first listings are whole the gateway answers no call that reads them
(:meth:`NamespaceFeed.ready`, bounded like the tally's wait). After a 410 the listing is told
again whole: the index takes the tasks that changed meanwhile as changes, and ends the streams
of the tasks that are gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final

from a2a.utils.errors import InternalError
from kubernetes_asyncio import client

from tiny_harness.a2a_gateway.fanout import Fanout
from tiny_harness.a2a_gateway.rendering import TaskChange, change_of
from tiny_harness.a2a_gateway.tally import QuotaTally
from tiny_harness.a2a_gateway.task_index import TaskIndex
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.kube.names import MESSAGE_PLURAL, PLURAL
from tiny_harness.kube.watching import Relisted, Synced, WatchEvent, follow_listings

log = logging.getLogger(__name__)

#: How long a call waits for the first listings before it is refused.
READY_SECONDS: Final = 30.0

Told = WatchEvent | Relisted | Synced


class NamespaceFeed:
    """The namespace as this replica hears it: the task index, the fan-out and the tally."""

    def __init__(
        self,
        namespace: str,
        tally: QuotaTally,
        *,
        queue_bound: int,
        ready_seconds: float = READY_SECONDS,
    ) -> None:
        self.namespace = namespace
        self.tally = tally
        self.index = TaskIndex()
        self.fanout: Fanout[TaskChange] = Fanout(change_of, bound=queue_bound)
        self.ready_seconds = ready_seconds
        self._tasks_listed = asyncio.Event()

    async def run(self, api: client.ApiClient) -> None:
        """Follow the namespace until cancelled; every subscription ends when it is."""
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._follow(api, PLURAL, self.hear_task, metadata=False))
                group.create_task(
                    self._follow(api, MESSAGE_PLURAL, self.tally.messages.hear, metadata=True)
                )
        finally:
            self.fanout.stop()

    async def _follow(
        self, api: client.ApiClient, plural: str, hear: Callable[[Told], None], *, metadata: bool
    ) -> None:
        changes = follow_listings(api, self.namespace, plural, metadata_only=metadata)
        async with contextlib.aclosing(changes):
            async for change in changes:
                hear(change)

    def hear_task(self, change: Told) -> None:
        """One thing the tasks' watch told, given to each part in the same step."""
        self.tally.tasks.hear(change)
        if isinstance(change, Relisted):
            self.index.relisting()
        elif isinstance(change, Synced):
            for gone in self.index.synced():
                self.fanout.gone(str(gone["metadata"]["name"]))
            self._tasks_listed.set()
        elif change.type == "DELETED":
            name = str(change.object["metadata"]["name"])
            self.index.drop(name)
            self.fanout.gone(name)
        elif self.index.put(change.object):
            self.fanout.tell(change.object)

    @property
    def listed(self) -> bool:
        return self._tasks_listed.is_set()

    async def ready(self) -> None:
        """Return once the tasks and messages have been listed; refuse the call if that takes
        longer than ``ready_seconds`` (the API server does not answer the listing)."""
        if self.listed and self.tally.messages.synced.is_set():
            return
        try:
            async with asyncio.timeout(self.ready_seconds):
                await self._tasks_listed.wait()
                await self.tally.messages.synced.wait()
        except TimeoutError:
            raise coded(
                InternalError,
                ReasonCode.NOT_READY,
                f"the gateway has not yet read the tasks of namespace {self.namespace}; retry "
                "in a few seconds",
            ) from None
