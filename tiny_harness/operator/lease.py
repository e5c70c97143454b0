"""The runner lease, timed by this replica's own clock only.

The lease is ``status.runner`` (holder, renew time, epoch). Whether another replica's lease is
still live is never computed from the renew time it wrote: that is the other machine's clock.
Instead, as Kubernetes' own leader election does, each replica notes on its *monotonic* clock
when it first saw a given (holder, epoch, renew time); the lease has expired once that same
value has stayed unchanged for ``lease_seconds``. Every renewal changes the renew time, so a
live holder's lease never looks expired to anyone.

The holder keeps its side of the bargain with :class:`Holding`: it renews every third of the
lease, counts its lease from the moment it *sent* the last successful renewal, and gives the
turn up (:class:`LeaseLostError`) at ``SAFETY`` of the lease time if it could not renew, which
is before any other replica can see the lease expire. What it may still try to write after
that is refused anyway: status writes carry the ``resourceVersion`` and journal appends test
the epoch (:mod:`tiny_harness.kube.journal`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from tiny_harness.core.decide import Lease
from tiny_harness.core.errors import HarnessError
from tiny_harness.core.task import Runner

#: The share of the lease time a holder may go without a successful renewal.
SAFETY = 0.6

Clock = Callable[[], float]


class LeaseLostError(HarnessError):
    """This replica no longer holds the task's runner lease: stop, and write nothing more."""


@dataclass
class _Seen:
    holder: str
    epoch: int
    renew_time: str
    since: float


class LeaseObserver:
    """Judges other replicas' leases by how long this replica has seen them unchanged."""

    def __init__(self, identity: str, lease_seconds: float, clock: Clock = time.monotonic) -> None:
        self.identity = identity
        self.lease_seconds = lease_seconds
        self.clock = clock
        self._seen: dict[tuple[str, str], _Seen] = {}

    def judge(self, key: tuple[str, str], runner: Runner | None) -> tuple[Lease, float]:
        """The lease's state, and for a live one, how long until it could expire."""
        if runner is None:
            self._seen.pop(key, None)
            return Lease.FREE, 0.0
        if runner.holder == self.identity:
            self._seen.pop(key, None)
            return Lease.MINE, 0.0
        now = self.clock()
        seen = self._seen.get(key)
        if seen is None or (seen.holder, seen.epoch, seen.renew_time) != (
            runner.holder,
            runner.epoch,
            runner.renew_time,
        ):
            seen = _Seen(runner.holder, runner.epoch, runner.renew_time, now)
            self._seen[key] = seen
        remaining = self.lease_seconds - (now - seen.since)
        if remaining <= 0:
            return Lease.EXPIRED, 0.0
        return Lease.HELD, remaining

    def unchanged_for(self, key: tuple[str, str]) -> float | None:
        """How long the lease under ``key`` has looked the same to this replica (None: not
        judged, or free or this replica's own)."""
        seen = self._seen.get(key)
        return None if seen is None else self.clock() - seen.since

    def forget(self, key: tuple[str, str]) -> None:
        self._seen.pop(key, None)


class Holding:
    """This replica's hold on one task's lease while it runs a turn."""

    def __init__(self, epoch: int, lease_seconds: float, clock: Clock = time.monotonic) -> None:
        self.epoch = epoch
        self.lease_seconds = lease_seconds
        self.clock = clock
        self.valid_from = clock()
        self.lost = False
        #: Set before the write that ends the turn (and clears the runner): from then on no
        #: renewal may be written, or it would put the runner back on an ended turn.
        self.closing = False

    @property
    def deadline(self) -> float:
        """When this replica must have stopped writing, unless it renews first."""
        return self.valid_from + self.lease_seconds * SAFETY

    def renewed(self, sent_at: float) -> None:
        """A renewal sent at ``sent_at`` (monotonic) succeeded."""
        self.valid_from = max(self.valid_from, sent_at)

    def check(self) -> None:
        if self.lost or self.clock() >= self.deadline:
            self.lost = True
            raise LeaseLostError("the runner lease ran out before it could be renewed")
