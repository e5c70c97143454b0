"""How many task workers do work at once, across all the operator's tasks.

A worker's passes (observe, decide, act) end in API writes, and writes share a small
connection pool. Without a bound, a burst (thousands of tasks created at once, or an operator
starting over a namespace full of them) starts a worker for every task at once: thousands of
workers hold their snapshot and half-built request while they queue for a connection, and the
memory they held stays fragmented long after they are done (measured: 400 MB against 185 MB
for the same 10,000 tasks taken at a steady pace).

The rule:

- A task with work to do and no worker asks for a slot (:meth:`WorkerSlots.ask`). Until it gets
  one it is only its key in a first-come-first-served queue: no worker exists yet, so waiting
  costs nothing, and the worker that starts reads the newest state (a poke that lands while
  the key waits is already covered by that). Asking again while queued changes nothing.
- A started worker holds its slot (a :class:`Ticket`) until it exits, or until it hands over
  to a turn's model calls, which can take minutes and must not hold up other tasks' cancels
  and messages; whichever comes first gives the slot back, once.
- A slot given back admits the next key at once. Everything runs on the event loop's thread,
  so no ask can fall between a slot's release and the next admission.
- **Paused, nothing is admitted** (:meth:`WorkerSlots.pause`, counted: each pause is resumed
  once): keys queue as above, and workers already started go on. kopf's listing of a shard
  pauses them (:mod:`.kopf_shards`): kopf queues every listed object at once, paced by
  nothing, so passes competing for the loop meanwhile would keep the whole listing in memory
  and let its continue token expire; the pokes it causes are taken when it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Final, Generic, TypeVar

#: Workers at work at once: enough to keep the operator's API connections busy, few enough
#: that a burst queues as keys rather than as half-done passes.
ACTIVE_WORKERS: Final = 32

K = TypeVar("K", bound=Hashable)


class Ticket:
    """One admitted worker's slot. Releasing it again does nothing."""

    __slots__ = ("_on_release", "_released")

    def __init__(self, on_release: Callable[[], None]) -> None:
        self._on_release = on_release
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._on_release()


class WorkerSlots(Generic[K]):
    """Starts at most ``limit`` workers at once, in the order their keys asked."""

    def __init__(self, start: Callable[[K, Ticket], None], limit: int = ACTIVE_WORKERS) -> None:
        if limit < 1:
            raise ValueError(f"the worker limit must be at least 1, not {limit}")
        self._start = start
        self.limit = limit
        self.active = 0
        self._queued: dict[K, None] = {}
        self._paused = 0

    @property
    def waiting(self) -> int:
        return len(self._queued)

    def ask(self, key: K) -> None:
        """``key`` has work and no worker: start one now, or as soon as a slot is free."""
        self._queued.setdefault(key, None)
        self._admit()

    @property
    def paused(self) -> bool:
        return self._paused > 0

    def pause(self) -> None:
        """Admit nothing until :meth:`resume` (as many times as paused)."""
        self._paused += 1

    def resume(self) -> None:
        self._paused = max(self._paused - 1, 0)
        self._admit()

    def drop(self, key: K) -> None:
        """``key`` no longer needs a worker (its task is gone)."""
        self._queued.pop(key, None)

    def _slot_returned(self) -> None:
        self.active -= 1
        self._admit()

    def _admit(self) -> None:
        while not self._paused and self.active < self.limit and self._queued:
            key = next(iter(self._queued))
            del self._queued[key]
            self.active += 1
            ticket = Ticket(self._slot_returned)
            try:
                self._start(key, ticket)
            except BaseException:
                ticket.release()
                raise
