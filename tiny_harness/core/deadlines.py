"""How long a task may work, and how long it may wait for a participant.

Two bounds a task's author may set, as Kubernetes Jobs have ``activeDeadlineSeconds``:

- ``spec.activeDeadlineSeconds``: the most time the task may spend *working*. Time parked,
  waiting for a participant, does not count: a conversation that lasts a week of idle days
  is not cut for it. ``status.activeSeconds`` accumulates the time of each turn, from
  ``status.turnStartTime`` (written when the turn starts) to the write that ends it (the one
  that clears the runner). Past the deadline the running turn is cut, or no new turn starts,
  and the task fails with reason ``DeadlineExceeded``.
- ``spec.inputTimeoutSeconds`` with ``spec.onTimeout``: the most time the task may wait for a
  participant (INPUT_REQUIRED or AUTH_REQUIRED), from ``status.waitingSince`` (written with
  every such state, cleared by any other). Past it the task fails with reason ``InputTimeout``,
  or completes when ``onTimeout`` is ``complete`` and no sub-task holds it open.

A third bound is the operator's alone: how long a conversation created by its first message
stays ``SUBMITTED`` waiting for that message (``[operator] first_message_seconds``, counted from
``status.startTime``, the operator's own stamp when it accepted the task;
:func:`first_message_left`, row 11 of :mod:`.decide`).

Every status write passes through :func:`stamped`, so the times are kept by the one place that
writes states, and survive a restart: the time left is computed from the status on every pass.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from tiny_harness.core.clock import parse, rfc3339
from tiny_harness.core.retention import with_completion_time
from tiny_harness.core.states import TaskState

INTERRUPTED: frozenset[TaskState] = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})


def stamped(
    patch: Mapping[str, Any], current: Mapping[str, Any], now: dt.datetime
) -> Mapping[str, Any]:
    """A status patch with the times its writes imply, given the status it applies to:

    - a state: ``completionTime`` (:func:`.retention.with_completion_time`), and
      ``waitingSince`` set for a state that waits for a participant, cleared for any other;
    - the runner cleared while a turn had started: that turn's time added to
      ``activeSeconds``, and ``turnStartTime`` and ``turnAttempts`` cleared.
    """
    out = dict(with_completion_time(patch, now))
    state = out.get("state")
    if state is not None and "waitingSince" not in out:
        out["waitingSince"] = rfc3339(now) if TaskState(state) in INTERRUPTED else None
    if "runner" in out and out["runner"] is None and "activeSeconds" not in out:
        started = parse(current.get("turnStartTime"))
        if started is not None:
            spent = max((now - started).total_seconds(), 0.0)
            out["activeSeconds"] = round(float(current.get("activeSeconds") or 0) + spent, 3)
            out["turnStartTime"] = None
        out.setdefault("turnAttempts", None)  # the turn is over: a new one counts from 1
    return out


def active_seconds(status: Mapping[str, Any], now: dt.datetime) -> float:
    """Time spent working so far, the running turn included."""
    spent = float(status.get("activeSeconds") or 0)
    started = parse(status.get("turnStartTime"))
    if started is not None and status.get("runner"):
        spent += max((now - started).total_seconds(), 0.0)
    return spent


def deadline_left(
    deadline_seconds: int | None, status: Mapping[str, Any], now: dt.datetime
) -> float | None:
    """Seconds of working time left before ``activeDeadlineSeconds``; None: no deadline."""
    if deadline_seconds is None:
        return None
    return deadline_seconds - active_seconds(status, now)


def input_time_left(
    timeout_seconds: int | None, status: Mapping[str, Any], now: dt.datetime
) -> float | None:
    """Seconds the task may still wait for a participant; None: it is not waiting, or may
    wait for ever."""
    if timeout_seconds is None:
        return None
    try:
        state = TaskState(str(status.get("state") or ""))
    except ValueError:
        return None
    since = parse(status.get("waitingSince"))
    if state not in INTERRUPTED or since is None:
        return None
    return timeout_seconds - (now - since).total_seconds()


def idle_time_left(
    timeout_seconds: int | None, status: Mapping[str, Any], now: dt.datetime
) -> float | None:
    """Seconds a conversation may still wait for its next message (parked awaiting it);
    None: it is not so parked, or may wait for ever. Counted from ``waitingSince``, as the
    input timeout is."""
    if timeout_seconds is None or status.get("subState") != "awaiting-next-message":
        return None
    return input_time_left(timeout_seconds, status, now)


def first_message_left(wait_seconds: float, status: Mapping[str, Any], now: dt.datetime) -> float:
    """Seconds a new task may still wait for the first message its creator announced, from
    ``status.startTime``; a status without one has waited long enough."""
    started = parse(status.get("startTime"))
    if started is None:
        return 0.0
    return wait_seconds - (now - started).total_seconds()
