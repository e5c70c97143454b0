"""Time as the harness writes and reads it: one clock, RFC 3339 out and in.

Every time the harness records (a condition's ``lastTransitionTime``, a status time, a Lease's
``renewTime``, a message's ``sentAt``) is UTC, written ``...Z``. What differs is only how much
of the second is kept, and each has a reason:

- ``digits=0``: a condition's ``lastTransitionTime``, as Kubernetes writes its own
  (``metav1.Time`` is to the second);
- ``digits=3`` (the default): the times a status is computed from (``completionTime``,
  ``turnStartTime``, ``waitingSince``): a one-second timeout counted from a time cut to the
  second could run out at once;
- ``digits=6``: a Lease's ``acquireTime`` and ``renewTime`` (``metav1.MicroTime``);
- :func:`rfc3339_nanos`: a message's ``sentAt``, so messages sent within one microsecond keep
  their order.

:func:`parse` reads any of them (and a time without a zone as UTC) and never guesses: what it
cannot read is None.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Literal

#: How many digits of the second a time keeps (see the module's list).
Digits = Literal[0, 3, 6]

_TIMESPEC: dict[int, str] = {0: "seconds", 3: "milliseconds", 6: "microseconds"}


def now() -> dt.datetime:
    """The current time, in UTC."""
    return dt.datetime.now(dt.UTC)


def rfc3339(moment: dt.datetime | None = None, *, digits: Digits = 3) -> str:
    """``moment`` (default: now) in UTC, as ``2026-11-30T16:00:00.123Z`` with ``digits``
    digits of the second (cut, not rounded: a time is never written later than it was). A
    time without a zone is UTC, as :func:`parse` reads one."""
    moment = now() if moment is None else moment
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    text = moment.astimezone(dt.UTC).isoformat(timespec=_TIMESPEC[digits])
    return text.replace("+00:00", "Z")


def rfc3339_nanos(ns: int | None = None) -> str:
    """``ns`` nanoseconds since the epoch (default: now) as RFC 3339 with nine digits."""
    ns = time.time_ns() if ns is None else ns
    seconds, fraction = divmod(ns, 1_000_000_000)
    base = dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{fraction:09d}Z"


def parse(value: object) -> dt.datetime | None:
    """An RFC 3339 time as the harness or the API server writes one; None when absent or
    unreadable (a time is never guessed). A time without a zone is UTC. Nanoseconds are
    read to the microsecond, all Python keeps."""
    if not isinstance(value, str) or not value:
        return None
    text = value.replace("z", "Z").replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[: min(digits, 6)] or '0'}{rest[digits:]}"
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
