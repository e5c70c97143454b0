"""What a failed pass costs, so that every failure ends somewhere a participant sees it.

- a **conflict** (someone wrote the task meanwhile) re-reads the task and looks again at once,
  with backoff after the third in a row;
- a write **refused for good** (too large, refused by the API server) fails the task: the
  same write would be refused again, so it is a state now, never a retry;
- an **API server that cannot be reached** is waited for with capped backoff, since nothing
  can be written until it is back;
- any **other error** is retried with backoff a bounded number of times
  (:data:`ERROR_BUDGET`), then fails the task (``OperatorError``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from tiny_harness.core.backoff import Backoff
from tiny_harness.core.errors import TaskNotFoundError
from tiny_harness.kube.client import RefusedWriteError, unreachable
from tiny_harness.kube.journal import EntryTooLargeError
from tiny_harness.operator.ports import Acting

log = logging.getLogger(__name__)

#: Unexpected errors in a row before the task is failed with ``OperatorError``.
ERROR_BUDGET: Final = 5
#: Backoff after the n-th unexpected error: BASE * 2**(n-1), capped, with jitter.
ERROR_BACKOFF: Final = Backoff(first=0.5, cap=30.0)
#: Backoff while the API server cannot be reached.
UNREACHABLE_BACKOFF: Final = Backoff(first=0.2, cap=5.0)
#: Backoff after the fourth conflict in a row (three are taken at once).
CONFLICT_BACKOFF: Final = Backoff(first=0.05, cap=2.0)


class PassFailures:
    """One worker's failed passes in a row, and what each costs (see the module docstring)."""

    def __init__(self, worker: Acting) -> None:
        self.w = worker
        self.errors = 0
        self.conflicts = 0
        self.unreachable = 0

    def passed(self) -> None:
        """A pass went through: the counts start again."""
        self.errors = self.conflicts = self.unreachable = 0

    async def conflicted(self) -> bool:
        """Someone wrote the task meanwhile: re-read it (a rare read) and decide again."""
        self.conflicts += 1
        if self.conflicts > 3:
            await asyncio.sleep(CONFLICT_BACKOFF.delay(self.conflicts + 1))
        try:
            obj = await self.w.tasks.get(self.w.name)
        except TaskNotFoundError:
            return True
        self.w.rt.cache.wrote_task(obj)
        return True

    async def failed(self, exc: Exception) -> bool:
        """A pass failed with ``exc``: True to look again (after its backoff)."""
        w = self.w
        if isinstance(exc, (RefusedWriteError, EntryTooLargeError)):
            # The same write would be refused again: a state now, never a retry (and never a
            # second model call for the step whose record could not be stored).
            w.rt.metrics.errors.labels(where="refused").inc()
            log.warning("task %s/%s: a write was refused for good: %s", *w.key, exc)
            try:
                await w.fail_task(
                    "WriteRefused",
                    f"The operator could not store this task's work: {exc}. What a task "
                    "stores is bounded (docs/design/limits.md); send a shorter message to go on.",
                )
            except Exception:
                log.exception("task %s/%s: could not record the failure", *w.key)
            return False
        if unreachable(exc):
            self.unreachable += 1
            delay = UNREACHABLE_BACKOFF.delay(self.unreachable + 1)
            log.warning(
                "task %s/%s: the API server is unreachable (%s); retrying in %.1fs",
                *w.key,
                exc,
                delay,
            )
            await asyncio.sleep(delay)
            return True
        self.errors += 1
        w.rt.metrics.errors.labels(where="worker").inc()
        if self.errors == 1:
            log.exception("task %s/%s: pass failed", *w.key)
        else:
            log.warning(
                "task %s/%s: pass failed again (%d of %d): %s: %s",
                *w.key,
                self.errors,
                ERROR_BUDGET,
                type(exc).__name__,
                exc,
            )
        if self.errors < ERROR_BUDGET:
            await asyncio.sleep(ERROR_BACKOFF.delay(self.errors))
            return True
        self.errors = 0
        try:
            await w.fail_task(
                "OperatorError",
                f"The operator could not work on this task ({type(exc).__name__}: {exc}). "
                "Its log has the details; send a message to try again.",
            )
        except Exception:
            log.exception("task %s/%s: could not record the failure", *w.key)
        return False
