"""A task's status ahead of the turn records the cache holds, and how long that is trusted to
catch up by itself.

Every ended turn leaves its record ended before the runner is cleared, so a view that lacks
the record is behind the status, and acting on it could take a message twice. The records'
watch event is on its way; if it has not come within :data:`RECORDS_GRACE_SECONDS`, they are
read from the API once, and a record that is really missing (deleted by hand) is closed empty.
"""

from __future__ import annotations

import logging
import time
from typing import Final

from tiny_harness.core.history import history_delta
from tiny_harness.operator.ports import TaskIO
from tiny_harness.operator.snapshot import Snapshot

log = logging.getLogger(__name__)

#: How long a view whose last turn record is missing is trusted to catch up by itself.
RECORDS_GRACE_SECONDS: Final = 2.0


class RecordLag:
    """Whether one task's records in view are current, and the wait while they are not."""

    def __init__(self, task: TaskIO) -> None:
        self.task = task
        #: When (monotonic) the records were first found behind the status.
        self.since: float | None = None

    def current(self, snap: Snapshot) -> bool:
        """Does the view hold the last turn's record, ended (see the module docstring)?"""
        turn = snap.status.turn
        if turn == 0 or snap.status.runner is not None:
            return True
        if any(r.turn == turn and r.ended for r in snap.records):
            self.since = None
            return True
        return False

    async def wait(self, snap: Snapshot) -> bool:
        """The status is ahead of the records in view. Their watch event is on its way; if it
        has not come within the grace time, read them from the API once. True: look again."""
        task = self.task
        moment = time.monotonic()
        if self.since is None:
            self.since = moment
            task.rt.wake_later(task.namespace, task.name, RECORDS_GRACE_SECONDS)
            return False
        if moment - self.since < RECORDS_GRACE_SECONDS:
            return False
        self.since = None
        turn = snap.status.turn
        fresh = await task.records.for_task(snap.obj, turn)
        for record in fresh:
            task.rt.cache.wrote_record(task.namespace, record)
        if not any(r.ended for r in fresh):
            # The record is really missing (deleted by hand?): close the turn on an empty one.
            log.warning("task %s/%s: turn %d has no record; closing it", *task.key, turn)
            last = fresh[-1] if fresh else None
            record = await task.records.append(
                task.name,
                turn,
                (),
                last=last,
                history=history_delta((), ()),
                owner=snap.obj,
            )
            task.rt.cache.wrote_record(task.namespace, record)
        return True
