"""Several operator replicas split the tasks: each shard is held by one replica through a
``coordination.k8s.io/v1`` Lease, and a replica works only the tasks of the shards it holds.

The written rules (docs/design/scale.md has the why):

- **Membership.** Each replica keeps a member Lease of its own renewed. The live replicas are
  those whose member Lease this replica has seen change within ``lease_seconds`` on its own
  monotonic clock (the same rule as a task's runner lease: :class:`LeaseObserver`), plus itself.
- **The deal.** Every tick (a quarter of the lease time) each replica computes the deal from the
  live replicas (:func:`~tiny_harness.operator.shard_deal.mine`) and moves toward it:
  - a shard it holds and is dealt: renewed (a write on the version read);
  - a shard it holds and is not dealt: it stops working it *first*, then releases it (clears
    the holder), so two replicas never both think they hold it;
  - a shard it is dealt that is free, or whose holder's renewals this replica has not seen for
    the lease time: taken, on the version read, so of two takers one wins and the other gets
    409 and looks again next tick;
  - a shard it is dealt that another live replica still holds: left alone until that replica
    releases it (it will, on its own next tick, having computed the same deal).
- **Holding.** A replica counts its hold on a shard from the moment it *sent* the write that
  took or renewed it, and stops working the shard at ``HOLD`` (0.8) of the lease time without
  a successful renewal: before any other replica can see the Lease expire. The margin is wider
  than a runner lease's (``lease.SAFETY``) because a shard hold guards no write (the runner
  lease does), only which replica looks; it lets a tick run up to 0.55 of the lease time late
  (an event loop busy with a burst) before the hold lapses.
- **What the shard Lease does not guard.** Whether a task's turn runs is still decided by the
  task's own runner lease, taken by a conditional status write and fencing its journal. A
  replica that loses a shard mid-turn finishes that turn under the task's lease; the new holder
  sees the lease held and waits for it. So a hand-over can make a task wait, never run twice.
- **No wake-up lost.** A poke for a task whose shard this replica does not hold is dropped.
  So when a shard is taken, every task of it in the cache is poked: a message that arrived
  while nobody held the shard is found. And a poke dropped while this replica's hold had
  lapsed (a tick slower than the hold's margin, on a busy machine) is kept: the next renewal
  that lands delivers it.

A replica stopped gracefully deletes its member Lease and releases its shards, so the others
take them at their next tick instead of after the lease time (a rolling update moves shards
in about a quarter of the lease time, a crash in about the lease time and one tick).

The Leases are written by :mod:`tiny_harness.operator.shard_lease_writes`, each on the version
read.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.clock import now as utc_now
from tiny_harness.core.clock import rfc3339
from tiny_harness.core.decide import Lease
from tiny_harness.operator.lease import Clock, LeaseObserver
from tiny_harness.operator.shard_deal import mine
from tiny_harness.operator.shard_lease_writes import ROLE_LABEL, ShardLeaseWrites, runner_of

log = logging.getLogger(__name__)
#: A member Lease unseen for this many lease times belongs to a replica that is gone for good
#: (a crashed pod); any replica deletes it.
STALE_MEMBER_LEASES: Final = 10
#: The share of the lease time a hold on a shard lasts from the write that took or renewed it.
HOLD: Final = 0.8


def lease_name_part(identity: str) -> str:
    """A replica identity as part of an object name: lower case, ``-`` for anything else, and a
    hash suffix when that changed it or it is long, so two identities never share a name."""
    cleaned = re.sub(r"[^a-z0-9-]", "-", identity.lower()).strip("-")[:40] or "replica"
    if cleaned == identity and len(identity) <= 40:
        return cleaned
    return f"{cleaned}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}"


@dataclass
class ShardState:
    """What this replica holds: each shard it holds, with when (monotonic) the write that took
    or last renewed it was sent."""

    confirmed: dict[int, float] = field(default_factory=dict)
    #: The tasks (namespace, name) of held shards whose pokes were dropped while the hold had
    #: lapsed, by shard.
    missed: dict[int, set[tuple[str, str]]] = field(default_factory=dict)


class ShardManager:
    """This replica's side of the deal, kept by :meth:`run` until cancelled."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        identity: str,
        shards: int,
        shard_set: str,
        namespace: str,
        lease_seconds: float,
        on_acquired: Callable[[int], None],
        on_missed: Callable[[set[tuple[str, str]]], None] = lambda tasks: None,
        on_counted: Callable[[int], None] = lambda held: None,
        on_dealt: Callable[[frozenset[int]], None] = lambda shards: None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.writes = ShardLeaseWrites(api, namespace, shard_set)
        self.identity = identity
        self.shards = shards
        self.shard_set = shard_set
        self.namespace = namespace
        self.lease_seconds = lease_seconds
        self.on_acquired = on_acquired
        self.on_missed = on_missed
        self.on_counted = on_counted
        self.on_dealt = on_dealt
        self.clock = clock
        self.observer = LeaseObserver(identity, lease_seconds, clock)
        self.state = ShardState()
        self.member_name = f"{shard_set}-member-{lease_name_part(identity)}"
        #: The replicas live at the last tick (this one included).
        self.live: frozenset[str] = frozenset({identity})
        self.ticks = 0
        self.stale: list[Any] = []

    # -- what the workers ask ----------------------------------------------------------------

    def holds(self, shard: int) -> bool:
        """Does this replica hold ``shard`` now, by its own clock?"""
        confirmed = self.state.confirmed.get(shard)
        return confirmed is not None and self.clock() < confirmed + self.lease_seconds * HOLD

    def held(self) -> list[int]:
        return sorted(s for s in self.state.confirmed if self.holds(s))

    def dropped(self, shard: int, task: tuple[str, str]) -> None:
        """A task of ``shard`` was not looked at because the shard is not held. If this replica
        still counts the shard as its own (its hold only lapsed), the next renewal that lands
        pokes that task again."""
        if shard in self.state.confirmed:
            self.state.missed.setdefault(shard, set()).add(task)

    # -- the loop ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Tick until cancelled; then release what is held (best effort)."""
        try:
            while True:
                started = self.clock()
                try:
                    await self.tick()
                except (ApiException, OSError, TimeoutError) as exc:
                    # The holds lapse by themselves if this goes on (see holds()).
                    log.warning("shards: could not reach the API server this tick: %s", exc)
                # A quarter of the lease after the start of the last tick, however long it took.
                await asyncio.sleep(max(0.0, self.lease_seconds / 4 - (self.clock() - started)))
        finally:
            await asyncio.shield(self.release_all())

    async def tick(self) -> None:
        sent = self.clock()
        now = utc_now()
        by_name = {lease.metadata.name: lease for lease in await self.writes.listed()}
        await self._renew_member(by_name.get(self.member_name), now, sent)
        self.stale = []
        self.live = frozenset({self.identity, *self._live_members(by_name.values())})
        for lease in self.stale:
            await self.writes.delete_stale(lease)
        dealt = mine(self.identity, self.live, self.shards)
        # All at once: a tick that wrote its shards one after another could take longer than a
        # hold lasts on a busy machine.
        await asyncio.gather(
            *(
                self._move(s, by_name.get(f"{self.shard_set}-shard-{s}"), s in dealt, now, sent)
                for s in range(self.shards)
            )
        )
        self.ticks += 1
        self.on_counted(len(self.held()))
        # What to watch: the shards to work, and those about to be taken (listed by the time
        # their Lease comes free). A held shard not dealt was released above.
        self.on_dealt(dealt | frozenset(self.state.confirmed))

    # -- membership ----------------------------------------------------------------------------

    def _live_members(self, leases: Any) -> list[str]:
        live = []
        for lease in leases:
            labels = lease.metadata.labels or {}
            holder = lease.spec.holder_identity
            if labels.get(ROLE_LABEL) != "member" or not holder or holder == self.identity:
                continue
            key = ("member", lease.metadata.name)
            state, _ = self.observer.judge(key, runner_of(lease))
            if state is Lease.HELD:
                live.append(holder)
            elif self._stale(key):
                self.stale.append(lease)
        return live

    def _stale(self, key: tuple[str, str]) -> bool:
        unchanged = self.observer.unchanged_for(key)
        return unchanged is not None and unchanged > self.lease_seconds * STALE_MEMBER_LEASES

    async def _renew_member(self, lease: Any, now: dt.datetime, sent: float) -> None:
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_seconds)),
            "renewTime": rfc3339(now, digits=6),
        }
        if lease is None:
            await self.writes.create(self.member_name, "member", spec)
        else:
            await self.writes.replace(lease, spec)

    # -- shards --------------------------------------------------------------------------------

    async def _move(
        self, shard: int, lease: Any, dealt: bool, now: dt.datetime, sent: float
    ) -> None:
        name = f"{self.shard_set}-shard-{shard}"
        holder = lease.spec.holder_identity if lease is not None else None
        if holder == self.identity:
            if not dealt:
                # Stop working it first; then let it go.
                self.state.confirmed.pop(shard, None)
                self.state.missed.pop(shard, None)
                await self.writes.replace(lease, {"holderIdentity": None, "renewTime": None})
                log.info("shards: released shard %d", shard)
                return
            if await self.writes.replace(lease, self._held_spec(lease, now, taking=False)):
                self.state.confirmed[shard] = sent
                missed = self.state.missed.pop(shard, None)
                if missed:
                    # Pokes were dropped while the hold had lapsed: they are delivered now.
                    log.info("shards: shard %d held again after a lapse", shard)
                    self.on_missed(missed)
            else:
                self.state.confirmed.pop(shard, None)
                self.state.missed.pop(shard, None)
            return
        # Not ours (any more): whatever we thought, another holder or nobody has it now.
        self.state.confirmed.pop(shard, None)
        self.state.missed.pop(shard, None)
        # Every other holder's renewals are timed, dealt or not: when its replica dies and the
        # deal hands the shard here, the lease time has been counting since it last renewed.
        state = self.observer.judge(("shard", name), runner_of(lease) if holder else None)[0]
        if not dealt or state is Lease.HELD:
            return
        if lease is None:
            taken = await self.writes.create(name, "shard", self._held_spec(None, now, taking=True))
        else:
            taken = await self.writes.replace(lease, self._held_spec(lease, now, taking=True))
        if taken:
            self.state.confirmed[shard] = sent
            log.info("shards: took shard %d (from %s)", shard, holder or "nobody")
            self.on_acquired(shard)

    def _held_spec(self, lease: Any, now: dt.datetime, *, taking: bool) -> dict[str, Any]:
        transitions = int((lease.spec.lease_transitions or 0) if lease is not None else 0)
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_seconds)),
            "renewTime": rfc3339(now, digits=6),
            "leaseTransitions": transitions + 1 if taking else transitions,
        }
        if taking:
            spec["acquireTime"] = rfc3339(now, digits=6)
        return spec

    async def release_all(self) -> None:
        """Leave (a graceful stop): give every held shard back and delete this replica's
        member Lease, so at their next tick the others deal without it and take the shards,
        instead of waiting out the lease time."""
        held = list(self.state.confirmed)
        self.state.confirmed.clear()
        try:
            for lease in await self.writes.listed():
                if lease.metadata.name == self.member_name:
                    await self.writes.delete(self.member_name)
                elif lease.spec.holder_identity == self.identity:
                    await self.writes.replace(lease, {"holderIdentity": None, "renewTime": None})
        except (ApiException, OSError, TimeoutError) as exc:
            log.warning("shards: could not release shards %s at shutdown: %s", held, exc)
