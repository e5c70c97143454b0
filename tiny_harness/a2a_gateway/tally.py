"""What is stored in the gateway's namespace, counted for the quotas: a tally kept from watches.

The quotas (:mod:`.quotas`) are asked on every send, so the count must cost nothing per send.
Listing at each send would cost what is stored: a participant's messages, and for the
namespace's quotas everyone's (a message's metadata alone is about 1.4 KB: 140 MB for 100,000).
So each replica keeps a digest of each object of two collections of its namespace, told by the
namespace's one follow (:mod:`.namespace_feed`, through ``kube.watching.follow_listings``):

- ``HarnessMessage``, metadata alone: the sender label and the bytes annotation; per sender,
  how many and how many bytes;
- ``HarnessTask``, whole (the state is in its status), reduced at once to its sender label (the
  participant whose first message created it) and whether it is live (not ended).

**What it believes.** Only what the harness can prove: the identity policy
(``kube/admission.py``) lets nobody but the harness write a bytes annotation, or a sender label
that names anyone but the writer, and nobody but the harness change either afterwards. The
gateway measures what it writes and labels it with the participant it authenticated; the
operator labels and annotates its own; a message written as its participant (``kubectl harness
send``) carries at most its writer's own sender label, and the operator measures it and writes
the annotation (``operator/measurer.py``). Until then it counts as the most a message may carry
(:data:`UNMEASURED_BYTES`), erring high, never at nothing. So no object can charge a message or a
task to someone else, nor a size its writer chose.

The digest is a cache of the API, not state of the gateway's own: it is built anew from a
listing at start and after every 410, so a replica that restarts counts what one that did not
counts, and any replica counts what any other does, up to the watch's delay. A send waits for
the first listing (at most :data:`READY_SECONDS`). What it costs: that listing, in pages; one
event of metadata per message written or deleted; one event per task write (status writes and
lease renewals of live tasks); about 300 bytes of memory per object (30 MB for 100,000).

**The race, and its rule.** A check and the hold of what it admits are one step of the event
loop, and a hold counts as stored from then until the watch delivers the objects the write
made (or :data:`HOLD_SECONDS` after each was written; what was not written is let go at once).
So within a replica two sends never both take the last place. Between replicas a write is seen
when the watch delivers it, milliseconds after it was made: sends that reach different replicas
within that window each see the room the other is about to take. A quota is therefore overrun
by at most the writes other replicas admitted in that window: a participant's, with R replicas
and one send of theirs at a time on each, by R - 1 messages (at most R - 1 times 256 KiB of
bytes) or R - 1 tasks; the namespace's by the sends the other replicas have in flight then.
It happens once: the next send on any replica sees them and is refused. That is acceptable:
the quotas keep etcd's size bounded, not a count exact to the object, and the overrun is
bounded and small against any limit; preventing it would need a write to one shared object
per send, serialising every participant's sends through it. While a replica's watch is away
(the API server unreachable) its counts are its last ones; the writes it admits meanwhile fail
with the API server anyway.

What it does not bound: a message without the sender label (written by hand, with no label,
before the operator labels it) counts only for the namespace, and a task not created by the
gateway (``kubectl harness``, a sub-task) only for the namespace; a writer with direct API
access is bounded by RBAC and a Kubernetes ``ResourceQuota`` (``count/harnessmessages.<group>``),
not by the gateway.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Literal

from a2a.utils.errors import InternalError

from tiny_harness.a2a_gateway.quotas import Demand, Refused, Usage, quotas, refusal
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.sizes import MESSAGE_BYTES
from tiny_harness.core.states import TERMINAL_STATES
from tiny_harness.kube.client import Obj
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.names import BYTES_ANNOTATION, SENDER_LABEL
from tiny_harness.kube.watching import Relisted, Synced, WatchEvent

#: What a message not measured yet counts for: the most one may carry (``core.sizes``).
UNMEASURED_BYTES: Final = MESSAGE_BYTES
#: How long a send waits for the first listing before it is refused.
READY_SECONDS: Final = 30.0
#: How long a written object is held after its write, waiting for the watch to deliver it:
#: far longer than a watch's delay; an object not delivered by then was deleted meanwhile.
HOLD_SECONDS: Final = 60.0

ItemKind = Literal["message", "task"]


@dataclass(frozen=True)
class Entry:
    """One object as the tally counts it: whose it is (its sender label; None: no one's), and
    what it adds (a message: one and its bytes; a task: one while it is live, else none)."""

    sender: str | None
    count: int
    size: int = 0


def message_entry(obj: Obj) -> Entry:
    """A message's entry, from its metadata alone. A message not measured yet (no bytes
    annotation: written as its participant, the operator has not measured it) counts as the
    most a message may carry, never as nothing."""
    meta = obj.get("metadata") or {}
    raw = str((meta.get("annotations") or {}).get(BYTES_ANNOTATION) or "")
    return Entry(_sender(meta), 1, int(raw) if raw.isdigit() else UNMEASURED_BYTES)


def task_entry(obj: Obj) -> Entry:
    """A task's entry: live until its state is a terminal one (a task with no status yet is
    about to start, so live)."""
    state = (obj.get("status") or {}).get("state")
    return Entry(_sender(obj.get("metadata") or {}), 0 if state in TERMINAL_STATES else 1)


def _sender(meta: Obj) -> str | None:
    value = (meta.get("labels") or {}).get(SENDER_LABEL)
    return str(value) if value else None


class Sums:
    """Entries by object name, with their sums by sender and in all, kept as entries change
    (so a question costs nothing, however many objects there are)."""

    def __init__(self, entries: dict[str, Entry] | None = None) -> None:
        self.entries: dict[str, Entry] = {}
        self.count: Counter[str] = Counter()
        self.size: Counter[str] = Counter()
        self.total_count = 0
        self.total_size = 0
        for name, entry in (entries or {}).items():
            self.put(name, entry)

    def put(self, name: str, entry: Entry) -> None:
        self.drop(name)
        self.entries[name] = entry
        self._add(entry, 1)

    def drop(self, name: str) -> None:
        old = self.entries.pop(name, None)
        if old is not None:
            self._add(old, -1)

    def _add(self, entry: Entry, sign: int) -> None:
        self.total_count += sign * entry.count
        self.total_size += sign * entry.size
        if entry.sender is None:
            return
        for sums, value in ((self.count, entry.count), (self.size, entry.size)):
            sums[entry.sender] += sign * value
            if not sums[entry.sender]:
                del sums[entry.sender]  # bounded by who has something stored


class Followed:
    """One collection's digest, as :func:`~tiny_harness.kube.watching.follow_listings` tells
    it: a listing is built aside and swapped in whole at its end, so the counts never fall to
    nothing while a listing is read."""

    def __init__(self, entry: Callable[[Obj], Entry]) -> None:
        self.sums = Sums()
        self.synced = asyncio.Event()
        self._entry = entry
        self._listing: dict[str, Entry] | None = None

    def hear(self, change: WatchEvent | Relisted | Synced) -> None:
        if isinstance(change, Relisted):
            self._listing = {}
            return
        if isinstance(change, Synced):
            self.sums = Sums(self._listing)
            self._listing = None
            self.synced.set()
            return
        name = str((change.object.get("metadata") or {}).get("name") or "")
        if self._listing is not None:
            self._listing[name] = self._entry(change.object)
        elif change.type == "DELETED":
            self.sums.drop(name)
        else:
            self.sums.put(name, self._entry(change.object))


@dataclass
class _Held:
    kind: ItemKind
    size: int
    name: str | None = None
    written: float = 0.0


class Hold:
    """What one admitted write adds, counted as stored until the watch delivers each object
    it wrote (at most :data:`HOLD_SECONDS` after the write); what it did not write is let go
    when the hold is settled (``with`` ends), whether the write succeeded or failed."""

    def __init__(self, tally: QuotaTally, sender: str, demand: Demand) -> None:
        self._tally = tally
        self.sender = sender
        self._items = [_Held("task", 0) for _ in range(demand.tasks)] + [
            _Held("message", size) for size in demand.message_sizes
        ]

    def wrote_task(self, name: str) -> None:
        self._wrote("task", name)

    def wrote_message(self, name: str) -> None:
        self._wrote("message", name)

    def _wrote(self, kind: ItemKind, name: str) -> None:
        for item in self._items:
            if item.kind == kind and item.name is None:
                item.name, item.written = name, self._tally.now()
                return

    def pending(self, now: float) -> list[_Held]:
        """The items still counted: not written yet, or written and not yet seen (the others
        are let go here)."""
        self._items = [
            item
            for item in self._items
            if item.name is None
            or (not self._tally.knows(item.kind, item.name) and now - item.written < HOLD_SECONDS)
        ]
        return self._items

    def settle(self) -> None:
        self._items = [item for item in self._items if item.name is not None]
        if not self._items:
            self._tally.release(self)

    def __enter__(self) -> Hold:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.settle()


class QuotaTally:
    """The namespace's messages and tasks, counted by sender, and the holds of writes in
    flight in this replica: what the store asks before it writes (:meth:`admit`)."""

    def __init__(
        self,
        settings: GatewaySettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        ready_seconds: float = READY_SECONDS,
    ) -> None:
        self.namespace = settings.namespace
        self.ready_seconds = ready_seconds
        self.quotas = quotas(settings)
        self.messages = Followed(message_entry)
        self.tasks = Followed(task_entry)
        self.now = clock
        self._holds: set[Hold] = set()

    async def ready(self) -> None:
        """Return once both collections have been listed; refuse the call if that takes
        longer than ``ready_seconds`` (the API server does not answer the listing)."""
        if self.messages.synced.is_set() and self.tasks.synced.is_set():
            return
        try:
            async with asyncio.timeout(self.ready_seconds):
                await self.messages.synced.wait()
                await self.tasks.synced.wait()
        except TimeoutError:
            raise coded(
                InternalError,
                ReasonCode.NOT_READY,
                f"the gateway has not yet read what is stored in namespace {self.namespace}, "
                "which its quotas count; retry in a few seconds",
            ) from None

    # -- counting ----------------------------------------------------------------------------

    def knows(self, kind: ItemKind, name: str) -> bool:
        """Has the watch delivered the object of that name (it is counted)?"""
        followed = self.messages if kind == "message" else self.tasks
        return name in followed.sums.entries

    def usage(self, participant: str) -> tuple[Usage, Usage]:
        """What ``participant`` keeps stored, and what the namespace does, holds included."""
        sender = label_value(participant)
        messages, tasks = self.messages.sums, self.tasks.sums
        mine = [messages.count[sender], messages.size[sender], tasks.count[sender]]
        everyone = [messages.total_count, messages.total_size, tasks.total_count]
        now = self.now()
        for hold in list(self._holds):
            held = hold.pending(now)
            if not held:
                self._holds.discard(hold)  # every object it wrote has been seen, or expired
            for item in held:
                index = 2 if item.kind == "task" else 0
                for counts in (everyone, mine) if hold.sender == sender else (everyone,):
                    counts[index] += 1
                    if item.kind == "message":
                        counts[1] += item.size
        return Usage(*mine), Usage(*everyone)

    def admit(self, participant: str, demand: Demand) -> Hold:
        """Hold what ``demand`` adds, or raise :class:`~.quotas.Refused` when it would pass a
        quota. No await between the count and the hold: within this replica it is exact."""
        if not demand.empty:
            mine, everyone = self.usage(participant)
            refused = refusal(
                self.quotas,
                demand,
                participant=participant,
                namespace=self.namespace,
                mine=mine,
                everyone=everyone,
            )
            if refused is not None:
                raise Refused.by_quota(refused)
        hold = Hold(self, label_value(participant), demand)
        self._holds.add(hold)
        return hold

    def release(self, hold: Hold) -> None:
        self._holds.discard(hold)
