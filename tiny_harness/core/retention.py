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

from tiny_harness.core.states import TaskState


def rfc3339(moment: dt.datetime) -> str:
    """A time as the status records it: UTC, to the millisecond (a one-second timeout counted
    from a time cut to the second could run out at once)."""
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: object) -> dt.datetime | None:
    """An RFC 3339 time as the status records it; None when absent or unreadable (a time
    is never guessed). A time without a zone is UTC."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


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
    finished = parse_time(completion_time)
    if state is None or not state.is_terminal or ttl_seconds is None or finished is None:
        return None
    return (finished - now).total_seconds() + ttl_seconds
