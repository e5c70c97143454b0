"""The runner lease taken with a new epoch, and a turn's record fenced with it: what makes a
replica that lost a task's turn write nothing more of it.

A turn starts (or resumes) by taking the lease: a status write conditional on the version read,
so of two replicas one wins. A replica that takes over an open turn reads its records from the
API (a lagging view must not be trusted there) and fences the last one with its epoch, so an
earlier holder's next append fails (:class:`~tiny_harness.kube.journal.FencedError`). A turn
nobody runs any more is closed where its journal stops, so nothing it did is lost.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from tiny_harness.core.clock import rfc3339
from tiny_harness.core.history import history_delta, replay_history
from tiny_harness.core.task import Runner
from tiny_harness.kube.journal import FencedError, TurnRecord
from tiny_harness.operator.lease import Holding, LeaseLostError
from tiny_harness.operator.ports import TaskIO
from tiny_harness.operator.snapshot import Snapshot, history_before


class Fences:
    """One task's runner lease and its turns' fences (see the module docstring)."""

    def __init__(self, task: TaskIO) -> None:
        self.task = task

    async def take_lease(self, snap: Snapshot, extra: Mapping[str, Any]) -> Holding:
        """Take (or take over) the runner lease with a new epoch: the write that starts or
        resumes a turn. Conditional on the version read, so only one replica wins."""
        rt = self.task.rt
        epoch = (snap.status.runner.epoch if snap.status.runner else 0) + 1
        runner = Runner(holder=rt.identity, renew_time=rfc3339(digits=6), epoch=epoch)
        sent = time.monotonic()
        status = self.task.status
        await status.write({**extra, "runner": runner.model_dump(by_alias=True)})
        holding = Holding(epoch, rt.settings.lease_seconds)
        holding.renewed(sent)
        status.holding = holding
        return holding

    async def close_open_turn(self, snap: Snapshot) -> None:
        """Take the open turn's lease over and end the turn where its journal stops."""
        task = self.task
        turn = snap.status.turn
        holding = await self.take_lease(snap, {})
        records = await self.fence_turn(snap, turn, holding.epoch)
        if any(r.ended for r in records):
            return
        before = history_before(snap.records, turn)
        entries = [e for r in records for e in r.entries]
        after = replay_history(before, entries)
        record = await task.records.append(
            task.name,
            turn,
            (),
            last=records[-1] if records else None,
            history=history_delta(before, after),
            owner=snap.obj,
            lease=holding.epoch if records else None,
        )
        task.rt.cache.wrote_record(task.namespace, record)

    async def fence_turn(self, snap: Snapshot, turn: int, epoch: int) -> list[TurnRecord]:
        """Read the turn's records from the API (a takeover must not trust a lagging view)
        and fence the last one with ``epoch``, so an earlier holder can append no more."""
        task = self.task
        records = await task.records.for_task(snap.obj, turn)
        if records:
            try:
                records[-1] = await task.records.fence(records[-1], epoch)
            except FencedError:
                raise LeaseLostError("another replica fenced the turn first") from None
        for record in records:
            task.rt.cache.wrote_record(task.namespace, record)
        return records
