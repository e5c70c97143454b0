"""What the operator knows about its objects, without asking the API: every object of its
namespaces (or shards) in summary, the ones at work whole, plus the objects this replica has
just written.

**What is fed.** Each shard's objects (every one, unsharded) are listed page by page into a
feed (:class:`~tiny_harness.operator.feed.Feed`) before that shard's kopf instance starts
(:mod:`tiny_harness.operator.priming`), and kopf's events keep it current from then on
(:meth:`Cache.saw`, called by every handler before it pokes). So the first pass over a task
after a restart already sees all its messages, records and children; no label is needed for
a message to be seen. The feed is ours, not kopf's indexes: kopf makes every object of an
indexed kind wait for all the others before its first handler runs, which costs the square
of the objects listed.

**What is kept.** Every object has a summary for the operator's whole life (its name,
version, where it belongs, and what a handler reads: a task's state and owners, a record's
usage), and its JSON text while there is room (:mod:`tiny_harness.operator.resident`): the
text is one allocation, where the parsed form is dozens of small ones scattered among the
short-lived allocations of event handling, which keeps the allocator from ever returning that
memory. Reads parse on demand, and the latest parsed versions are kept within a byte bound
too (:mod:`tiny_harness.operator.parsed`), so a running conversation is parsed once per
version. A text dropped for room is read back by name when a pass needs it
(:meth:`Cache.load`): a task's worker loads and pins its group at the start of every pass, and
every read a pass makes is of that group (:mod:`tiny_harness.operator.working_set`). A read
of a dropped object that nobody loaded is a bug, and says so
(:class:`~tiny_harness.operator.working_set.NotLoaded`).

The watch lags the writes this replica makes by a few milliseconds, so every write's response
goes into the *overlay* too (:mod:`tiny_harness.operator.overlay`), and a read takes the
overlay's copy until the feed has delivered exactly that version. The tree walks (children,
descendants, ancestors) are :mod:`tiny_harness.operator.task_tree`'s, over these reads.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Final

from tiny_harness.core.settings import OperatorSettings
from tiny_harness.core.task import TaskUsage, local_parent_of
from tiny_harness.core.usage import Spent, spent_in, summed
from tiny_harness.kube.client import Obj
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.kube.ownership import owned_by
from tiny_harness.kube.unreadable import Skipped, uncounted
from tiny_harness.operator.feed import (
    MESSAGES,
    PARENT,
    PARSERS,
    TASK,
    TASKS,
    TURNS,
    Feed,
    Feeds,
    Packed,
    rv_of,
    stub_of,
)
from tiny_harness.operator.overlay import Overlay
from tiny_harness.operator.parsed import ParsedVersions, Version
from tiny_harness.operator.resident import Resident
from tiny_harness.operator.task_tree import TaskTree
from tiny_harness.operator.working_set import (
    Fetch,
    NotLoaded,
    Pins,
    Working,
    held_in_groups,
    read_back,
)

#: Bytes of object text kept whole when nothing says otherwise: the setting's default
#: (``operator.cache_bytes``).
DEFAULT_BUDGET: Final[int] = OperatorSettings.model_fields["cache_bytes"].default


class Cache(TaskTree):
    """The operator's read side: the feeds plus the overlay of its own recent writes."""

    def __init__(
        self,
        feed: Feed | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        budget: int = DEFAULT_BUDGET,
        fetch: Fetch | None = None,
        skipped: Skipped = uncounted,
    ) -> None:
        #: The feeds read, by shard (None: the one feed of an unsharded operator).
        self.feeds = Feeds({None: feed} if feed is not None else {})
        self.resident = Resident(budget)
        #: How a dropped object is read back (the operator's API client; None in tests that
        #: keep everything).
        self.fetch = fetch
        self.skipped = skipped
        #: Objects read back by name, for the metrics.
        self.loaded = 0
        #: This replica's own writes, until the feed delivers them.
        self.overlay = Overlay(clock)
        self.parsed_versions = ParsedVersions()

    def adopt(self, shard: int | None, feed: Feed) -> None:
        """Read ``feed`` (the shard's, or the only one) from now on."""
        self.feeds[shard] = feed

    def drop(self, shard: int | None) -> None:
        """Stop reading the shard's feed: it is no longer watched, so it would go stale."""
        feed = self.feeds.pop(shard, None)
        if feed is not None:
            for packed, _ in feed.objects.values():
                self.resident.forget(packed)

    # -- feeding --------------------------------------------------------------------------------

    def saw(self, feed: Feed, kind: str, obj: Obj, *, deleted: bool = False) -> None:
        """An object as listed or watched (or read back by name), in its plain form
        (:func:`~tiny_harness.operator.feed.plain`): the feed holds it, whole while there is room.
        One that cannot be parsed is never held: it is flagged, as every reader flags one
        (:mod:`tiny_harness.kube.unreadable`), and ``skipped`` counts it."""
        meta = obj["metadata"]
        namespace = str(meta.get("namespace") or "")
        name = str(meta["name"])
        if deleted:
            gone = feed.remove(kind, namespace, name)
            if gone is not None:
                self.resident.forget(gone)
            if kind == TASKS:
                feed.shards.pop((namespace, name), None)
            return
        rv = rv_of(obj)
        held = feed.get(kind, namespace, name)
        if held is not None and held.resource_version == rv and held.text is not None:
            self.resident.touch(held)  # told again (a second listing): nothing new
            return
        parsed = PARSERS[kind](obj, self.skipped)
        if parsed is None:  # it cannot be taken: flagged, and left out
            gone = feed.remove(kind, namespace, name)
            if gone is not None:
                self.resident.forget(gone)
            return
        packed, old = feed.hold(kind, obj, parsed)
        if old is not None:
            self.resident.forget(old)
        self.resident.keep(packed)
        if self.feeds.reads(feed):
            if kind == TASKS:
                self.indexed_task(namespace, name, rv)
            elif kind == TURNS:
                self.indexed_record(namespace, parsed)
        self.parsed((kind, namespace, name, rv), parsed, packed.size)

    # -- reads ----------------------------------------------------------------------------------

    def _store(self, kind: str, key: tuple[str, ...]) -> list[Any]:
        namespace = key[-2]
        return [self._unpack(kind, namespace, packed) for packed in self.feeds.held(kind, key)]

    def _unpack(self, kind: str, namespace: str, packed: Packed) -> Any:
        key = (kind, namespace, packed.name, packed.resource_version)
        found = self.parsed_versions.get(key)
        if found is not None:
            self.resident.touch(packed)
            return found[0]
        if packed.text is None:
            raise NotLoaded(
                f"{kind} {namespace}/{packed.name} is not in memory: load its task first"
            )
        parsed = PARSERS[kind](json.loads(packed.text), self.skipped)
        self.resident.touch(packed)
        self.parsed(key, parsed, packed.size)
        return parsed

    def parsed(self, key: Version, value: Any, size: int = 0) -> None:
        """Keep a parsed version for reads (what :meth:`saw` parsed, so a read right after the
        event parses nothing), within the bounds of :mod:`tiny_harness.operator.parsed`."""
        self.parsed_versions.keep(key, value, size, self.resident.budget)

    @property
    def parsed_bytes(self) -> int:
        return self.parsed_versions.bytes

    def task(self, namespace: str, name: str) -> Obj | None:
        stored = self._store(TASKS, (TASK, namespace, name))
        own = self.overlay.task((namespace, name), rv_of(stored[0]) if stored else None)
        if own is not None:
            return own
        return stored[0] if stored else None

    def stub(self, namespace: str, name: str) -> Obj | None:
        """The task in summary (:func:`stub_of`), whether or not its text is kept: this
        replica's latest write if the feed has not caught up with it."""
        held = self.feeds.held(TASKS, (TASK, namespace, name))
        indexed = held[0].resource_version if held else None
        own = self.overlay.task((namespace, name), indexed, keep=True)
        if own is not None:
            return stub_of(own)
        return held[0].stub if held else None

    def records(self, namespace: str, task: str) -> list[TurnRecord]:
        """The task's turn records, in turn and chunk order: those owned by the uid of the
        task of that name now (:mod:`tiny_harness.kube.ownership`)."""
        current = self.task(namespace, task)
        if current is None:
            return []
        key = (namespace, task)
        stored: list[TurnRecord] = self._store(TURNS, key)
        merged = {r.name: r for r in stored}
        for name, record in self.overlay.task_records(key, merged).items():
            merged[name] = record
        mine = (r for r in merged.values() if owned_by(r.owners, current))
        return sorted(mine, key=lambda r: (r.turn, r.chunk))

    def usage(self, namespace: str, task: str) -> TaskUsage:
        """What the task's records say it used, from their summaries (its journals need not
        be in memory): as :func:`tiny_harness.core.usage.usage_of` of :meth:`records`."""
        current = self.stub(namespace, task)
        if current is None:
            return TaskUsage()
        key = (namespace, task)
        held = {p.name: p for p in self.feeds.held(TURNS, key)}
        rows: dict[str, tuple[Spent, ...]] = {
            name: p.spent for name, p in held.items() if owned_by(p.owners, current)
        }
        for name, record in self.overlay.task_records(key, held).items():
            if owned_by(record.owners, current):
                rows[name] = spent_in(record.entries)
        return summed(row for spent in rows.values() for row in spent)

    def messages(self, namespace: str, task: str) -> list[StoredMessage]:
        """The task's messages, oldest first: those that belong to the task of that name now
        (:func:`tiny_harness.kube.ownership.message_belongs`)."""
        current = self.task(namespace, task)
        if current is None:
            return []
        stored: list[StoredMessage] = self._store(MESSAGES, (namespace, task))
        return sorted((m for m in stored if m.belongs_to(current)), key=lambda m: m.order)

    def _naming(self, namespace: str, parent: str, *, stubs: bool = False) -> list[Obj]:
        """Every task whose spec names ``parent`` as its parent, as it is now (feed and own
        writes, newest of each); with ``stubs``, in summary."""
        held = self.feeds.held(TASKS, (PARENT, namespace, parent))
        if stubs:
            by_name = {p.name: p.stub for p in held if p.stub is not None}
        else:
            by_name = {p.name: self._unpack(TASKS, namespace, p) for p in held}
        written = [
            name
            for (ns, name), own in self.overlay.tasks.items()
            if ns == namespace and local_parent_of(own.value.get("spec")) == parent
        ]
        for name in written:
            # The overlay's copy, until the feed has it.
            now = self.stub(namespace, name) if stubs else self.task(namespace, name)
            if now is not None and local_parent_of(now.get("spec")) == parent:
                by_name[name] = now
        return list(by_name.values())

    # -- keeping what is worked in memory -------------------------------------------------------

    def working(self, namespace: str, name: str) -> Working:
        """Pin the task's group while its worker runs (``with cache.working(...) as pins``),
        and :meth:`load` it at the start of each pass (:mod:`tiny_harness.operator.working_set`)."""
        return Working(self.resident, (namespace, name))

    async def load(self, namespace: str, name: str, pins: Pins | None = None) -> None:
        """Bring into memory everything a pass over the task reads: the task, its messages,
        its records and its children, and its ancestors (their budgets bound it), reading back
        by name what was dropped for room; with ``pins``, pin the ancestors' groups too."""
        groups = [(namespace, name)] + [
            (namespace, str(a["metadata"]["name"])) for a in self.ancestors(namespace, name)
        ]
        if pins is not None:
            pins.add(groups, self.resident)
        wanted = held_in_groups(self.feeds.values(), namespace, name, groups)
        # Only the text counts: a parsed version may make way for another at any read, while
        # a pinned text stays.
        missing = [(f, k, p) for f, k, p in wanted if p.text is None]
        if not missing:
            return
        if self.fetch is None:
            raise NotLoaded(f"{len(missing)} objects of task {namespace}/{name} are not in memory")
        await read_back(self, self.fetch, namespace, missing)

    # -- the overlay ----------------------------------------------------------------------------

    def wrote_task(self, obj: Obj) -> None:
        """This replica wrote the task (``obj`` is the response): read this copy until the
        feed has delivered its version."""
        meta = obj["metadata"]
        key = (str(meta.get("namespace", "")), str(meta["name"]))
        stored = self._store(TASKS, (TASK, *key))
        self.overlay.wrote_task(key, obj, rv_of(obj), rv_of(stored[0]) if stored else None)

    def wrote_record(self, namespace: str, record: TurnRecord) -> None:
        """As :meth:`wrote_task`, for a turn record."""
        stored: list[TurnRecord] = self._store(TURNS, (namespace, record.task))
        seen = next((r for r in stored if r.name == record.name), None)
        self.overlay.wrote_record(namespace, record, seen.resource_version if seen else None)

    def forget(self, namespace: str, name: str) -> None:
        self.feeds.forget(namespace, name)
        self.overlay.forget(namespace, name)

    def indexed_task(self, namespace: str, name: str, rv: str) -> None:
        """The feed delivered version ``rv`` of the task (:meth:`saw` calls this on every
        event): the overlay drops our write of that very version
        (:meth:`~tiny_harness.operator.overlay.Overlay.delivered_task`)."""
        self.overlay.delivered_task(namespace, name, rv)

    def indexed_record(self, namespace: str, record: TurnRecord) -> None:
        """As :meth:`indexed_task`, for a turn record."""
        self.overlay.delivered_record(namespace, record)
