"""The one writer of a task's status, so that every status write of a task is made the same way.

Each patch is bounded (:func:`~tiny_harness.operator.status_writes.bounded`), stamped with the
times it implies (:func:`~tiny_harness.core.deadlines.stamped`), given the task's usage
(:class:`~tiny_harness.operator.budgets.TaskBudgets`) and written on the ``resourceVersion``
last read. One write at a time per task: a turn's lease renewal, its end and a command beside
it share the version they write on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from tiny_harness.core.clock import now
from tiny_harness.core.deadlines import stamped
from tiny_harness.kube.client import ConflictError, Obj
from tiny_harness.operator.budgets import TaskBudgets
from tiny_harness.operator.feed import rv_of
from tiny_harness.operator.lease import Holding, LeaseLostError
from tiny_harness.operator.ports import TaskIO
from tiny_harness.operator.status_writes import bounded


class StatusWriter:
    """Writes one task's status (see the module docstring); ``holding`` is the runner lease
    while this replica runs the task's turn."""

    def __init__(self, task: TaskIO, budgets: TaskBudgets) -> None:
        self.task = task
        self.budgets = budgets
        #: The task's version last read: every write is made on it.
        self.rv: str | None = None
        self.holding: Holding | None = None
        self.lock = asyncio.Lock()

    def held(self) -> Holding:
        if self.holding is None:
            raise LeaseLostError("no lease is held")
        return self.holding

    async def write(
        self, patch: Mapping[str, Any], *, leased: bool = False, renewal: bool = False
    ) -> Obj | None:
        """Merge-patch the status on the version last read.

        A 409 means someone wrote meanwhile. Outside a turn it is a :class:`ConflictError` and
        the pass starts again on fresh state. During a turn (``leased``) the patch is applied
        again on the fresh version as long as this replica still holds the lease it started
        the turn with: its values are absolute, so applying it twice is the same as once.
        """
        task, rt = self.task, self.task.rt
        async with self.lock:
            if renewal and self.held().closing:
                return None  # the turn is ending: its last write clears the runner
            current = (rt.cache.task(task.namespace, task.name) or {}).get("status") or {}
            patch = self.budgets.with_usage(stamped(bounded(patch), current, now()))
            while True:
                if leased:
                    self.held().check()
                try:
                    obj = await task.tasks.patch_status(task.name, patch, resource_version=self.rv)
                except ConflictError:
                    if not leased:
                        raise
                    fresh = await task.tasks.get(task.name)
                    rt.cache.wrote_task(fresh)
                    runner = (fresh.get("status") or {}).get("runner") or {}
                    holding = self.held()
                    if (
                        runner.get("holder") != rt.identity
                        or int(runner.get("epoch") or 0) != holding.epoch
                    ):
                        holding.lost = True
                        raise LeaseLostError("another replica took the lease over") from None
                    self.rv = rv_of(fresh)
                    continue
                self.rv = rv_of(obj)
                rt.written(task.namespace, task.name, self.rv)
                rt.cache.wrote_task(obj)
                return obj
