"""How long to wait before trying again: one formula for every retry the harness makes.

Capped exponential: the n-th retry waits ``first * 2**(n-1)`` seconds, at most ``cap``. With
``jitter`` (the share of the wait that is random; the default is half) many callers that
failed together (tasks behind one rate limit, replicas behind one API server) do not retry in
lockstep. A server that says when to come back (``Retry-After``) is believed, within the
same cap, and without jitter: it asked for that time.

A wait that is shown to people and written by several replicas (a status message saying
"trying again in 4s") has no jitter (``jitter=0``), so that replicas that found the same write
the same.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

#: The largest exponent used: 2**64 seconds is past any cap, and a float cannot hold 2**1024.
_MAX_EXPONENT = 64


@dataclass(frozen=True)
class Backoff:
    """The waits of one kind of retry."""

    #: The first retry's wait, in seconds.
    first: float
    #: The longest wait, in seconds.
    cap: float
    #: The share of each wait that is random, from 0 (none) to 1 (anything from 0 to the wait).
    jitter: float = 0.5
    #: Where the randomness comes from (a number in [0, 1)); tests give their own.
    draw: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.first < 0 or self.cap < 0:
            raise ValueError("a backoff's first wait and cap are seconds, never negative")
        if not 0 <= self.jitter <= 1:
            raise ValueError("a backoff's jitter is a share of the wait, from 0 to 1")

    def delay(self, retry: int, *, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (the first retry is 1), or as the
        server asked (``retry_after``), never more than :attr:`cap`."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.cap)
        exponent = min(max(retry - 1, 0), _MAX_EXPONENT)
        wait = min(self.first * 2.0**exponent, self.cap)
        return wait * (1 - self.jitter * self.draw())


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a server asked for, in seconds, or None to use our own backoff.

    ``retry-after-ms`` (OpenAI, Anthropic) is more precise, so it wins when it parses. An
    HTTP-date ``Retry-After`` is not parsed: it depends on both clocks agreeing, and our own
    backoff is a safe answer to a server that is busy. Header names are matched in lower case
    (httpx's headers match any case).
    """
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None
