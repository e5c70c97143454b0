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
too, so a running conversation is parsed once per version, as before. A text dropped for
room is read back by name when a pass needs it (:meth:`Cache.load`): a task's worker loads
and pins its group at the start of every pass, and every read a pass makes is of that group.
A read of a dropped object that nobody loaded is a bug, and says so (:class:`NotLoaded`).

The watch lags the writes this replica makes by a few milliseconds. So every write's response
goes into the *overlay* too, and until the feed has delivered exactly that version, a read
takes the overlay's copy. Versions are compared for equality only: the API conventions make a
``resourceVersion`` opaque, never to be ordered. None needs ordering here, because kopf's watch
delivers an object's events in the order etcd committed them: any version the feed delivers
before our write's own is older than our write, and the moment it delivers ours the feed has
caught up, and the overlay entry is dropped. So the overlay holds only the last moments' writes.

Two cases need a memory of what the feed delivered:

- **The watch was faster than the write's response** (the feed delivered our version before
  ``wrote_*`` was called, and maybe later ones after it): the last few versions the feed
  delivered of each object are kept (:data:`DELIVERED_KEPT`), and a write whose version is
  among them does not enter the overlay.
- **The watch passed over our version** (kopf listed afresh after 410 Gone, and the listing
  had a later one): an entry the feed has not matched for :data:`OVERLAY_SECONDS`, while it
  delivered other versions since, is dropped. A watch that is merely away delivers nothing,
  and keeps the entry. Every write is made on the version read, so a read that is older than
  it should be costs a conflict and a fresh read, never a lost update.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from tiny_harness.core.settings import OperatorSettings
from tiny_harness.core.sizes import MAX_TREE_DEPTH
from tiny_harness.core.task import TaskUsage, local_parent_of
from tiny_harness.core.usage import Spent, spent_in, summed
from tiny_harness.kube.client import Obj
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.kube.names import (
    SHARD_LABEL,
)
from tiny_harness.kube.ownership import ancestors_of, is_child_of, is_stray_of, owned_by
from tiny_harness.kube.unreadable import Skipped, uncounted
from tiny_harness.operator.feed import (
    MESSAGES,
    PARENT,
    PARSERS,
    PLURALS,
    TASK,
    TASKS,
    TURNS,
    Feed,
    Key,
    Packed,
    pack,
    plain,
    rv_of,
    stub_of,
)
from tiny_harness.operator.resident import Resident

#: Parsed versions kept for reads, at most (about the working set of a few hundred busy tasks);
#: they are bounded by bytes too (:data:`PARSED_SHARE`).
PARSED_KEPT: Final = 4096
#: The share of the cache's byte budget that parsed versions may take, counted as
#: :data:`PARSED_WEIGHT` times their text (a parsed object holds its strings and a dict or
#: model per level: a rough, conservative measure).
PARSED_SHARE: Final = 0.5
PARSED_WEIGHT: Final = 2
#: Bytes of object text kept whole when nothing says otherwise: the setting's default
#: (``operator.cache_bytes``).
DEFAULT_BUDGET: Final[int] = OperatorSettings.model_fields["cache_bytes"].default
#: Versions of one object the feed delivered that are remembered (events can come after the
#: next write already happened), and for how many objects at most (the ones written lately).
DELIVERED_KEPT: Final = 8
DELIVERED_OBJECTS: Final = 4096
#: How long an own write waits in the overlay for its own event while others come (see above).
OVERLAY_SECONDS: Final = 30.0
#: How far up a tree is walked: as deep as a sub-task may be created (core/reach.py).
MAX_DEPTH: Final = MAX_TREE_DEPTH
#: Objects read back by name at once by one load.
LOADS_AT_ONCE: Final = 8

#: Reads one object back from the API server: ``(plural, namespace, name)`` to the object, or
#: None when it is gone.
Fetch = Callable[[str, str, str], Awaitable[Obj | None]]


class NotLoaded(LookupError):
    """A read of an object whose text was dropped for room, outside the group its reader
    loaded (:meth:`Cache.load`): a missing load in the caller, never a state of the task."""


V = TypeVar("V")


@dataclass(slots=True)
class _Own(Generic[V]):
    """A write of this replica whose version the feed has not delivered yet."""

    value: V
    resource_version: str
    #: When it was written (the cache's clock).
    at: float
    #: The feed has delivered another version of the object since.
    passed: bool = False


@dataclass(slots=True)
class Pins:
    """The task groups one worker has pinned (:meth:`Cache.working`)."""

    groups: set[Key] = field(default_factory=set)


class Cache:
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
        self.feeds: dict[int | None, Feed] = {None: feed} if feed is not None else {}
        self.resident = Resident(budget)
        #: How a dropped object is read back (the operator's API client; None in tests that
        #: keep everything).
        self.fetch = fetch
        self.skipped = skipped
        #: Objects read back by name, for the metrics.
        self.loaded = 0
        self._tasks: dict[Key, _Own[Obj]] = {}
        #: Per task, its records written here, by name.
        self._records: dict[Key, dict[str, _Own[TurnRecord]]] = {}
        self._parsed: OrderedDict[tuple[str, str, str, str], tuple[Any, int]] = OrderedDict()
        self._parsed_bytes = 0
        #: The versions the feed delivered lately: ``(TASK or TURNS, namespace, name)``.
        self._delivered: OrderedDict[tuple[str, str, str], tuple[str, ...]] = OrderedDict()
        self._clock = clock

    def adopt(self, shard: int | None, feed: Feed) -> None:
        """Read ``feed`` (the shard's, or the only one) from now on."""
        self.feeds[shard] = feed

    def drop(self, shard: int | None) -> None:
        """Stop reading the shard's feed: it is no longer watched, so it would go stale."""
        feed = self.feeds.pop(shard, None)
        if feed is not None:
            for packed, _ in feed.objects.values():
                self.resident.forget(packed)

    def known(self) -> int:
        """Objects known, in summary at least, in the feeds read."""
        return sum(len(feed.objects) for feed in self.feeds.values())

    def reads(self, feed: Feed) -> bool:
        return any(f is feed for f in self.feeds.values())

    # -- feeding --------------------------------------------------------------------------------

    def saw(self, feed: Feed, kind: str, obj: Obj, *, deleted: bool = False) -> None:
        """An object as listed or watched (or read back by name), in its plain form
        (:func:`plain`): the feed holds it, whole while there is room. One that cannot be
        parsed is never held: it is flagged, as every reader flags one
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
        packed = pack(obj)
        keys: tuple[tuple[str, ...], ...]
        if kind == TASKS:
            parent = local_parent_of(obj.get("spec"))
            keys = ((TASK, namespace, name),)
            packed.groups = ((namespace, name),)
            if parent:
                keys += ((PARENT, namespace, str(parent)),)
                packed.groups += ((namespace, str(parent)),)
            packed.stub = stub_of(obj)
            shard = (meta.get("labels") or {}).get(SHARD_LABEL)
            if shard is not None:
                feed.shards[(namespace, name)] = str(shard)
        else:
            keys = ((namespace, parsed.spec.task if kind == MESSAGES else parsed.task),)
            packed.groups = ((namespace, keys[0][1]),)
            if kind == TURNS:
                packed.spent = spent_in(parsed.entries)
                packed.owners = parsed.owners
        old = feed.put(kind, namespace, packed, keys)
        if old is not None:
            self.resident.forget(old)
        self.resident.keep(packed)
        if self.reads(feed):
            if kind == TASKS:
                self.indexed_task(namespace, name, rv)
            elif kind == TURNS:
                self.indexed_record(namespace, parsed)
        self.parsed((kind, namespace, name, rv), parsed, packed.size)

    # -- reads ----------------------------------------------------------------------------------

    def _held(self, kind: str, key: tuple[str, ...]) -> list[Packed]:
        for feed in self.feeds.values():
            under = feed.indices[kind].get(key)
            if under is not None:
                return list(under.values())
        return []

    def _store(self, kind: str, key: tuple[str, ...]) -> list[Any]:
        namespace = key[-2]
        return [self._unpack(kind, namespace, packed) for packed in self._held(kind, key)]

    def _unpack(self, kind: str, namespace: str, packed: Packed) -> Any:
        key = (kind, namespace, packed.name, packed.resource_version)
        found = self._parsed.get(key)
        if found is not None:
            self._parsed.move_to_end(key)
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

    def parsed(self, key: tuple[str, str, str, str], value: Any, size: int = 0) -> None:
        """Keep a parsed version for reads (what :meth:`saw` parsed, so a read right after the
        event parses nothing), within :data:`PARSED_KEPT` and the bytes' share."""
        cost = size * PARSED_WEIGHT
        old = self._parsed.pop(key, None)
        if old is not None:
            self._parsed_bytes -= old[1]
        self._parsed[key] = (value, cost)
        self._parsed_bytes += cost
        limit = self.resident.budget * PARSED_SHARE
        while len(self._parsed) > PARSED_KEPT or (
            self._parsed_bytes > limit and len(self._parsed) > 1
        ):
            _, (_, dropped) = self._parsed.popitem(last=False)
            self._parsed_bytes -= dropped

    @property
    def parsed_bytes(self) -> int:
        return self._parsed_bytes

    def task(self, namespace: str, name: str) -> Obj | None:
        key = (namespace, name)
        stored = self._store(TASKS, (TASK, namespace, name))
        own = self._tasks.get(key)
        if own is not None and not self._caught_up(own, rv_of(stored[0]) if stored else None):
            return own.value
        self._tasks.pop(key, None)
        return stored[0] if stored else None

    def stub(self, namespace: str, name: str) -> Obj | None:
        """The task in summary (:func:`stub_of`), whether or not its text is kept: this
        replica's latest write if the feed has not caught up with it."""
        own = self._tasks.get((namespace, name))
        held = self._held(TASKS, (TASK, namespace, name))
        if own is not None and not self._caught_up(own, held[0].resource_version if held else None):
            return stub_of(own.value)
        return held[0].stub if held else None

    def _caught_up(self, own: _Own[Any], indexed: str | None) -> bool:
        """Does the feed hold this write (``indexed``, the version it holds, is its very
        version), or has it passed over it (see the module)?"""
        if indexed == own.resource_version:
            return True
        return own.passed and self._clock() - own.at >= OVERLAY_SECONDS

    def records(self, namespace: str, task: str) -> list[TurnRecord]:
        """The task's turn records, in turn and chunk order: those owned by the uid of the
        task of that name now (:mod:`tiny_harness.kube.ownership`)."""
        current = self.task(namespace, task)
        if current is None:
            return []
        key = (namespace, task)
        stored: list[TurnRecord] = self._store(TURNS, key)
        merged = {r.name: r for r in stored}
        for name, record in self._own_records(key, merged).items():
            merged[name] = record
        mine = (r for r in merged.values() if owned_by(r.owners, current))
        return sorted(mine, key=lambda r: (r.turn, r.chunk))

    def _own_records(self, key: Key, stored: Mapping[str, Any]) -> dict[str, TurnRecord]:
        """This replica's record writes the feed has not caught up with (the rest dropped)."""
        own = self._records.get(key, {})
        out: dict[str, TurnRecord] = {}
        for name, record in list(own.items()):
            indexed = stored.get(name)
            if self._caught_up(record, indexed.resource_version if indexed else None):
                del own[name]
            else:
                out[name] = record.value
        if not own:
            self._records.pop(key, None)
        return out

    def usage(self, namespace: str, task: str) -> TaskUsage:
        """What the task's records say it used, from their summaries (its journals need not
        be in memory): as :func:`tiny_harness.core.usage.usage_of` of :meth:`records`."""
        current = self.stub(namespace, task)
        if current is None:
            return TaskUsage()
        key = (namespace, task)
        held = {p.name: p for p in self._held(TURNS, key)}
        rows: dict[str, tuple[Spent, ...]] = {
            name: p.spent for name, p in held.items() if owned_by(p.owners, current)
        }
        for name, record in self._own_records(key, held).items():
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
        held = self._held(TASKS, (PARENT, namespace, parent))
        if stubs:
            by_name = {p.name: p.stub for p in held if p.stub is not None}
        else:
            by_name = {p.name: self._unpack(TASKS, namespace, p) for p in held}
        written = [
            name
            for (ns, name), own in self._tasks.items()
            if ns == namespace and local_parent_of(own.value.get("spec")) == parent
        ]
        for name in written:
            # The overlay's copy, until the feed has it.
            now = self.stub(namespace, name) if stubs else self.task(namespace, name)
            if now is not None and local_parent_of(now.get("spec")) == parent:
                by_name[name] = now
        return list(by_name.values())

    def children(self, namespace: str, parent: str) -> list[Obj]:
        """The task's children: the tasks that name it as their parent *and* carry the owner
        reference to its uid that only the harness writes. Anything else naming it is a stray
        (:meth:`strays`), and counts for nothing here."""
        current = self.stub(namespace, parent)
        if current is None:
            return []
        return [c for c in self._naming(namespace, parent) if is_child_of(c, current)]

    def child_stubs(self, namespace: str, parent: str) -> list[Obj]:
        """:meth:`children` in summary (:func:`stub_of`), whether or not they are in memory."""
        current = self.stub(namespace, parent)
        if current is None:
            return []
        return [c for c in self._naming(namespace, parent, stubs=True) if is_child_of(c, current)]

    def descendant_stubs(self, namespace: str, name: str) -> Iterator[Obj]:
        """The task's children, their children ..., in summary, down to :data:`MAX_DEPTH`
        levels below it (no sub-task is created deeper: core/reach.py)."""
        level = self.child_stubs(namespace, name)
        for _ in range(MAX_DEPTH):
            if not level:
                return
            yield from level
            level = [
                c for above in level for c in self.child_stubs(namespace, above["metadata"]["name"])
            ]

    def strays(self, namespace: str, parent: str) -> list[Obj]:
        """The tasks that name ``parent`` as their parent without being its children."""
        current = self.stub(namespace, parent)
        if current is None:
            return []
        return [c for c in self._naming(namespace, parent) if is_stray_of(c, current)]

    def ancestors(self, namespace: str, name: str) -> Iterator[Obj]:
        """The task's parent, its parent's parent ..., in summary, up to :data:`MAX_DEPTH` (a
        task that only names a parent it is not the child of has none)."""
        return ancestors_of(self.stub(namespace, name), lambda above: self.stub(namespace, above))

    def depth(self, namespace: str, name: str) -> int:
        """How many levels below its root the task is (0: a task with no parent here): what
        the depth bound of sub-tasks (core/reach.py) is held against."""
        return sum(1 for _ in self.ancestors(namespace, name))

    # -- keeping what is worked in memory -------------------------------------------------------

    def working(self, namespace: str, name: str) -> _Working:
        """Pin the task's group while its worker runs (``with cache.working(...) as pins``),
        and :meth:`load` it at the start of each pass."""
        return _Working(self, (namespace, name))

    async def load(self, namespace: str, name: str, pins: Pins | None = None) -> None:
        """Bring into memory everything a pass over the task reads: the task, its messages,
        its records and its children, and its ancestors (their budgets bound it), reading back
        by name what was dropped for room; with ``pins``, pin the ancestors' groups too."""
        groups = [(namespace, name)] + [
            (namespace, str(a["metadata"]["name"])) for a in self.ancestors(namespace, name)
        ]
        if pins is not None:
            for group in groups:
                if group not in pins.groups:
                    pins.groups.add(group)
                    self.resident.pin(group)
        wanted: list[tuple[Feed, str, Packed]] = []
        for feed in self.feeds.values():
            for ns, task in groups:
                wanted += [(feed, TASKS, p) for p in self._in(feed, TASKS, (TASK, ns, task))]
            wanted += [(feed, MESSAGES, p) for p in self._in(feed, MESSAGES, (namespace, name))]
            wanted += [(feed, TURNS, p) for p in self._in(feed, TURNS, (namespace, name))]
            wanted += [(feed, TASKS, p) for p in self._in(feed, TASKS, (PARENT, namespace, name))]
        # Only the text counts: a parsed version may make way for another at any read, while
        # a pinned text stays.
        missing = [(f, k, p) for f, k, p in wanted if p.text is None]
        if not missing:
            return
        if self.fetch is None:
            raise NotLoaded(f"{len(missing)} objects of task {namespace}/{name} are not in memory")
        fetch = self.fetch
        gate = asyncio.Semaphore(LOADS_AT_ONCE)

        async def back(feed: Feed, kind: str, packed: Packed) -> None:
            async with gate:
                obj = await fetch(PLURALS[kind], namespace, packed.name)
            self.loaded += 1
            if feed.get(kind, namespace, packed.name) is not packed:
                return  # an event brought a newer version meanwhile
            if obj is None:
                self.saw(
                    feed,
                    kind,
                    {"metadata": {"namespace": namespace, "name": packed.name}},
                    deleted=True,
                )
            else:
                self.saw(feed, kind, plain(obj))

        async with asyncio.TaskGroup() as reading:
            for feed, kind, packed in missing:
                reading.create_task(back(feed, kind, packed))

    @staticmethod
    def _in(feed: Feed, kind: str, key: tuple[str, ...]) -> list[Packed]:
        return list(feed.indices[kind].get(key, {}).values())

    # -- the overlay ----------------------------------------------------------------------------

    def wrote_task(self, obj: Obj) -> None:
        """This replica wrote the task (``obj`` is the response): read this copy until the
        feed has delivered its version."""
        meta = obj["metadata"]
        key = (str(meta.get("namespace", "")), str(meta["name"]))
        rv = rv_of(obj)
        stored = self._store(TASKS, (TASK, *key))
        if rv in self._delivered.get((TASK, *key), ()) or (stored and rv_of(stored[0]) == rv):
            return  # the watch was faster than the write's response: the feed has it
        self._tasks[key] = _Own(obj, rv, self._clock())

    def wrote_record(self, namespace: str, record: TurnRecord) -> None:
        """As :meth:`wrote_task`, for a turn record."""
        rv = record.resource_version
        stored: list[TurnRecord] = self._store(TURNS, (namespace, record.task))
        seen = next((r for r in stored if r.name == record.name), None)
        delivered = self._delivered.get((TURNS, namespace, record.name), ())
        if rv in delivered or (seen is not None and seen.resource_version == rv):
            return  # the watch was faster than the write's response
        own = self._records.setdefault((namespace, record.task), {})
        own[record.name] = _Own(record, rv, self._clock())

    def forget(self, namespace: str, name: str) -> None:
        for feed in self.feeds.values():
            feed.shards.pop((namespace, name), None)
        self._tasks.pop((namespace, name), None)
        self._records.pop((namespace, name), None)
        self._delivered.pop((TASK, namespace, name), None)

    def shard(self, namespace: str, name: str) -> str | None:
        """The task's shard label, as the feeds read last saw it."""
        for feed in self.feeds.values():
            label = feed.shards.get((namespace, name))
            if label is not None:
                return label
        return None

    def in_shard(self, label: str) -> list[Key]:
        """Every task read whose shard label is ``label``."""
        return [
            key
            for feed in self.feeds.values()
            for key, value in feed.shards.items()
            if value == label
        ]

    def indexed_task(self, namespace: str, name: str, rv: str) -> None:
        """The feed delivered version ``rv`` of the task (:meth:`saw` calls this on every
        event): our write of exactly that version is dropped from the overlay, so a parked
        task keeps no second copy of itself in memory. Any other version came before our
        write's own event (kopf delivers in etcd order) and changes nothing, unless it is
        passed over for good (see the module)."""
        self._deliver(TASK, namespace, name, rv)
        own = self._tasks.get((namespace, name))
        if own is not None and self._matched(own, rv):
            del self._tasks[(namespace, name)]

    def indexed_record(self, namespace: str, record: TurnRecord) -> None:
        """As :meth:`indexed_task`, for a turn record."""
        self._deliver(TURNS, namespace, record.name, record.resource_version)
        own = self._records.get((namespace, record.task))
        if own is None:
            return
        mine = own.get(record.name)
        if mine is not None and self._matched(mine, record.resource_version):
            del own[record.name]
        if not own:
            del self._records[(namespace, record.task)]

    def _matched(self, own: _Own[Any], rv: str) -> bool:
        """Is ``rv``, just delivered, this write's own version? Another one marks the write as
        passed, and ends it once it has waited :data:`OVERLAY_SECONDS` (see the module)."""
        if rv == own.resource_version:
            return True
        own.passed = True
        return self._clock() - own.at >= OVERLAY_SECONDS

    def _deliver(self, kind: str, namespace: str, name: str, rv: str) -> None:
        key = (kind, namespace, name)
        before = self._delivered.pop(key, ())
        self._delivered[key] = (*(v for v in before if v != rv), rv)[-DELIVERED_KEPT:]
        if len(self._delivered) > DELIVERED_OBJECTS:
            self._delivered.popitem(last=False)


class _Working:
    """A worker's pins (:meth:`Cache.working`): its task's group, and the ancestors its loads
    found; all unpinned when the worker ends."""

    def __init__(self, cache: Cache, key: Key) -> None:
        self.cache = cache
        self.key = key
        self.pins = Pins()

    def __enter__(self) -> Pins:
        self.pins.groups.add(self.key)
        self.cache.resident.pin(self.key)
        return self.pins

    def __exit__(self, *_: object) -> None:
        for group in self.pins.groups:
            self.cache.resident.unpin(group)
        self.pins.groups.clear()
