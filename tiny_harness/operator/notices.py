"""Notices and acknowledgements a task gets outside any turn: a message taken, refused, or
answered by the operator itself.

They go to the latest turn's record, unfenced: no turn runs when a pass writes them (the
decision waited for any lease), and their ids (:mod:`tiny_harness.core.reply_ids`) make a
repeat after a crash harmless.
"""

from __future__ import annotations

import logging

from tiny_harness.core.history import RecordEntry
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.operator.ports import TaskIO
from tiny_harness.operator.snapshot import Snapshot, refusal_entries

log = logging.getLogger(__name__)


class Notices:
    """One task's journal outside its turns (see the module docstring)."""

    def __init__(self, task: TaskIO) -> None:
        self.task = task

    async def append(self, snap: Snapshot, entries: tuple[RecordEntry, ...]) -> None:
        """Add ``entries`` to the latest turn's record."""
        task = self.task
        turn = snap.status.turn
        record = await task.records.append(
            task.name,
            turn,
            entries,
            last=snap.last_record(turn),
            owner=snap.obj,
        )
        task.rt.cache.wrote_record(task.namespace, record)

    async def refuse(self, snap: Snapshot, message: StoredMessage, reason: str) -> None:
        """Take the message without acting on it; its sender sees the reason against it."""
        log.info("task %s/%s: message %s %s", *self.task.key, message.spec.message_id, reason)
        await self.append(snap, refusal_entries(message, reason))
