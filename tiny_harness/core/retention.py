"""When a finished task is deleted: ``spec.ttlSecondsAfterFinished``, counted from
``status.completionTime``.

A cluster that runs tasks for a team would otherwise keep every finished task, its messages
and its turn records in etcd for ever. The rule, as Kubernetes Jobs have it:

- ``status.completionTime`` is written with every terminal state (completed, cancelled,
  failed, rejected) and cleared by any other, so a failed conversation that takes messages
  again is no longer counted as finished;
- the time to live is the task's ``spec.ttlSecondsAfterFinished``, else the operator's
  ``operator.ttl_seconds_after_finished``, else none (kept for ever);
- once it has passed, the operator deletes the task; its messages, turn records and sub-tasks
  go with it through their owner references (the garbage collector's work), and messages
  written without one (``kubectl apply`` of a manifest) are deleted by the task's label.

A task that waits for a participant is never collected by this rule: it is not finished.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from tiny_harness.core.clock import parse, rfc3339
from tiny_harness.core.states import TaskState

# The times live in core/clock.py; these two names stay for the callers that still import
# them from here (operator/worker.py, tests/integration/test_deadlines.py).
parse_time = parse
__all__ = ["expires_in", "parse_time", "rfc3339", "with_completion_time"]


def with_completion_time(patch: Mapping[str, Any], now: dt.datetime) -> Mapping[str, Any]:
    """A status patch with ``completionTime`` as its state asks: now for a terminal state,
    cleared for any other, untouched when the patch sets no state or sets the time itself."""
    state = patch.get("state")
    if state is None or "completionTime" in patch:
        return patch
    finished = TaskState(state).is_terminal
    return {**patch, "completionTime": rfc3339(now) if finished else None}


def expires_in(
    state: TaskState | None,
    completion_time: str | None,
    ttl_seconds: int | None,
    now: dt.datetime,
) -> float | None:
    """Seconds until the finished task is to be deleted (zero or less: now), or None when it
    is never to be: not finished, no time to live, or no completion time recorded."""
    finished = parse(completion_time)
    if state is None or not state.is_terminal or ttl_seconds is None or finished is None:
        return None
    return (finished - now).total_seconds() + ttl_seconds
