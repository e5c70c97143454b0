"""What the operator knows about its objects, without asking the API: kopf indexes, plus the
objects this replica has just written.

kopf feeds three indexes from its watches (:func:`register_indexes`): every task by name and
by its parent, every message and every turn record by ``spec.task``. kopf fills them from the
initial LIST before any handler runs, so the first pass over a task after a restart already
sees all its messages, records and children; no label is needed for a message to be seen.

The indexes hold every object of the namespace for the operator's whole life, most of them
parked and unread for hours, so they hold each as its JSON text (:class:`Packed`): one
allocation, where the parsed form is dozens of small ones scattered among the short-lived
allocations of event handling, which keeps the allocator from ever returning that memory.
Reads parse on demand, and the latest parsed versions are kept (:data:`PARSED_KEPT`), so a
running conversation is parsed once per version, as before.

The watch lags the writes this replica makes by a few milliseconds. So every write's response
goes into the *overlay* too, and until the index has delivered exactly that version, a read
takes the overlay's copy. Versions are compared for equality only: the API conventions make a
``resourceVersion`` opaque, never to be ordered. None needs ordering here, because kopf's watch
delivers an object's events in the order etcd committed them: any version the index delivers
before our write's own is older than our write, and the moment it delivers ours the index has
caught up, and the overlay entry is dropped. So the overlay holds only the last moments' writes.

Two cases need a memory of what the index delivered:

- **The watch was faster than the write's response** (the index delivered our version before
  ``wrote_*`` was called, and maybe later ones after it): the last few versions the index
  delivered of each object are kept (:data:`DELIVERED_KEPT`), and a write whose version is
  among them does not enter the overlay.
- **The watch passed over our version** (kopf listed afresh after 410 Gone, and the listing
  had a later one): an entry the index has not matched for :data:`OVERLAY_SECONDS`, while it
  delivered other versions since, is dropped. A watch that is merely away delivers nothing,
  and keeps the entry. Every write is made on the version read, so a read that is older than
  it should be costs a conflict and a fresh read, never a lost update.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

import kopf

# kopf.operator() takes the indexers it fills; the class is not re-exported at the top level.
from kopf._core.engines.indexing import OperatorIndexers

from tiny_harness.core.task import local_parent_of
from tiny_harness.core.tracing import TRACE_ANNOTATIONS
from tiny_harness.kube.client import Obj
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.kube.names import (
    CONTEXT_ID_ANNOTATION,
    GROUP,
    LIFECYCLE_ANNOTATION,
    MESSAGE_PLURAL,
    PLURAL,
    SHARD_LABEL,
    TURN_PLURAL,
    VERSION,
)
from tiny_harness.kube.ownership import is_child_of, is_stray_of, owned_by
from tiny_harness.kube.unreadable import Skipped, uncounted

Key = tuple[str, str]

#: Index names. The task index has two kinds of key: ``(TASK, namespace, name)`` and
#: ``(PARENT, namespace, parent name)``, so one index call per task event feeds both.
TASKS = "tasks"
MESSAGES = "messages"
TURNS = "turns"
TASK = "task"
PARENT = "parent"

#: Parsed versions kept for reads (about the working set of a few hundred busy tasks).
PARSED_KEPT: Final = 4096
#: Versions of one object the index delivered that are remembered (events can come after the
#: next write already happened), and for how many objects at most (the ones written lately).
DELIVERED_KEPT: Final = 8
DELIVERED_OBJECTS: Final = 4096
#: How long an own write waits in the overlay for its own event while others come (see above).
OVERLAY_SECONDS: Final = 30.0


@dataclass(frozen=True, slots=True)
class Packed:
    """An indexed object as compact JSON text, with what is needed without parsing it."""

    name: str
    resource_version: str
    text: str


def pack(obj: Obj) -> Packed:
    meta = obj["metadata"]
    return Packed(
        str(meta["name"]),
        str(meta.get("resourceVersion", "")),
        json.dumps(obj, separators=(",", ":"), ensure_ascii=False),
    )


#: How each index's packed objects are parsed.
PARSERS: Final[Mapping[str, Callable[[Obj], Any]]] = {
    TASKS: lambda obj: obj,
    MESSAGES: lambda obj: StoredMessage.of(obj),
    TURNS: lambda obj: TurnRecord.of(obj),
}


def rv_of(obj: Obj) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))


V = TypeVar("V")


@dataclass(slots=True)
class _Own(Generic[V]):
    """A write of this replica whose version the index has not delivered yet."""

    value: V
    resource_version: str
    #: When it was written (the cache's clock).
    at: float
    #: The index has delivered another version of the object since.
    passed: bool = False


class Feed:
    """One kopf instance's indexes, and the shard label of each task they hold.

    Unsharded, one instance feeds the cache for the operator's whole life. Sharded, each
    watched shard has an instance of its own (:mod:`tiny_harness.operator.kopf_shards`); the
    cache reads a shard's feed from the moment its indexes are filled (:meth:`Cache.adopt`)
    until the shard is no longer watched (:meth:`Cache.drop`). A task, its children, its
    messages and its turn records share a shard, so all of them are in one feed.
    """

    def __init__(self) -> None:
        self.indexers = OperatorIndexers()
        #: What the cache reads: ``indices[index][key] -> packed objects``.
        self.indices: Mapping[str, Any] = self.indexers.indices
        #: Each indexed task's shard label (its value as written; see operator/shard_deal.py).
        self.shards: dict[Key, str] = {}
        #: Set by the instance's first handler call: kopf calls none before every index holds
        #: all that its first listing returned.
        self.filled = asyncio.Event()


class Cache:
    """The operator's read side: indexes plus the overlay of its own recent writes."""

    def __init__(
        self, feed: Feed | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        #: The feeds read, by shard (None: the one feed of an unsharded operator).
        self.feeds: dict[int | None, Feed] = {None: feed} if feed is not None else {}
        self._tasks: dict[Key, _Own[Obj]] = {}
        #: Per task, its records written here, by name.
        self._records: dict[Key, dict[str, _Own[TurnRecord]]] = {}
        self._parsed: OrderedDict[tuple[str, str, str, str], Any] = OrderedDict()
        #: The versions the index delivered lately: ``(TASK or TURNS, namespace, name)``.
        self._delivered: OrderedDict[tuple[str, str, str], tuple[str, ...]] = OrderedDict()
        self._clock = clock

    def adopt(self, shard: int | None, feed: Feed) -> None:
        """Read ``feed`` (the shard's, or the only one) from now on."""
        self.feeds[shard] = feed

    def drop(self, shard: int | None) -> None:
        """Stop reading the shard's feed: it is no longer watched, so it would go stale."""
        self.feeds.pop(shard, None)

    def reads(self, feed: Feed) -> bool:
        return any(f is feed for f in self.feeds.values())

    # -- reads ----------------------------------------------------------------------------------

    def _store(self, index: str, key: tuple[str, ...]) -> list[Any]:
        for feed in self.feeds.values():
            idx = feed.indices[index]
            if key in idx:
                namespace = key[-2]
                return [self._unpack(index, namespace, packed) for packed in idx[key]]
        return []

    def _unpack(self, index: str, namespace: str, packed: Packed) -> Any:
        key = (index, namespace, packed.name, packed.resource_version)
        parsed = self._parsed.get(key)
        if parsed is None:
            parsed = PARSERS[index](json.loads(packed.text))
            self.parsed(key, parsed)
        else:
            self._parsed.move_to_end(key)
        return parsed

    def parsed(self, key: tuple[str, str, str, str], value: Any) -> None:
        """Keep a parsed version for reads (the index functions hand over what they parsed)."""
        self._parsed[key] = value
        if len(self._parsed) > PARSED_KEPT:
            self._parsed.popitem(last=False)

    def task(self, namespace: str, name: str) -> Obj | None:
        key = (namespace, name)
        stored = self._store(TASKS, (TASK, namespace, name))
        own = self._tasks.get(key)
        if own is not None and not self._caught_up(own, rv_of(stored[0]) if stored else None):
            return own.value
        self._tasks.pop(key, None)
        return stored[0] if stored else None

    def _caught_up(self, own: _Own[Any], indexed: str | None) -> bool:
        """Does the index hold this write (``indexed``, the version it holds, is its very
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
        own = self._records.get(key, {})
        for name, record in list(own.items()):
            indexed = merged.get(name)
            if self._caught_up(record, indexed.resource_version if indexed else None):
                del own[name]
            else:
                merged[name] = record.value
        if not own:
            self._records.pop(key, None)
        mine = (r for r in merged.values() if owned_by(r.owners, current))
        return sorted(mine, key=lambda r: (r.turn, r.chunk))

    def messages(self, namespace: str, task: str) -> list[StoredMessage]:
        """The task's messages, oldest first: those that belong to the task of that name now
        (:func:`tiny_harness.kube.ownership.message_belongs`)."""
        current = self.task(namespace, task)
        if current is None:
            return []
        stored: list[StoredMessage] = self._store(MESSAGES, (namespace, task))
        return sorted((m for m in stored if m.belongs_to(current)), key=lambda m: m.order)

    def _naming(self, namespace: str, parent: str) -> list[Obj]:
        """Every task whose spec names ``parent`` as its parent, as it is now (index and own
        writes, newest of each)."""
        by_name = {
            c["metadata"]["name"]: c for c in self._store(TASKS, (PARENT, namespace, parent))
        }
        written = [
            name
            for (ns, name), own in self._tasks.items()
            if ns == namespace and local_parent_of(own.value.get("spec")) == parent
        ]
        for name in written:
            now = self.task(namespace, name)  # the overlay's copy, until the index has it
            if now is not None and local_parent_of(now.get("spec")) == parent:
                by_name[name] = now
        return list(by_name.values())

    def children(self, namespace: str, parent: str) -> list[Obj]:
        """The task's children: the tasks that name it as their parent *and* carry the owner
        reference to its uid that only the harness writes. Anything else naming it is a stray
        (:meth:`strays`), and counts for nothing here."""
        current = self.task(namespace, parent)
        if current is None:
            return []
        return [c for c in self._naming(namespace, parent) if is_child_of(c, current)]

    def strays(self, namespace: str, parent: str) -> list[Obj]:
        """The tasks that name ``parent`` as their parent without being its children."""
        current = self.task(namespace, parent)
        if current is None:
            return []
        return [c for c in self._naming(namespace, parent) if is_stray_of(c, current)]

    # -- the overlay ----------------------------------------------------------------------------

    def wrote_task(self, obj: Obj) -> None:
        """This replica wrote the task (``obj`` is the response): read this copy until the
        index has delivered its version."""
        meta = obj["metadata"]
        key = (str(meta.get("namespace", "")), str(meta["name"]))
        rv = rv_of(obj)
        stored = self._store(TASKS, (TASK, *key))
        if rv in self._delivered.get((TASK, *key), ()) or (stored and rv_of(stored[0]) == rv):
            return  # the watch was faster than the write's response: the index has it
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
        """The index delivered version ``rv`` of the task (its function calls this on every
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


#: Metadata the operator never reads. ``managedFields`` alone is often most of an object's size
#: (every status write adds to it), and the index holds every task in memory. Of the
#: annotations only the A2A context id (a child joins its parent's context), the lifecycle a
#: child was created with (its first status follows it) and a message's trace context (its
#: turn continues the sender's trace) are read.
_UNREAD_METADATA: Final = frozenset({"managedFields", "annotations"})
_READ_ANNOTATIONS: Final = frozenset(
    {CONTEXT_ID_ANNOTATION, LIFECYCLE_ANNOTATION, *TRACE_ANNOTATIONS}
)


def _plain(body: kopf.Body) -> Obj:
    """The parts of the object the operator reads, as plain dicts (shared, not copied:
    nothing here mutates them)."""
    metadata = body["metadata"]
    kept = {k: v for k, v in metadata.items() if k not in _UNREAD_METADATA}
    annotations = {
        k: v for k, v in (metadata.get("annotations") or {}).items() if k in _READ_ANNOTATIONS
    }
    if annotations:
        kept["annotations"] = annotations
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "metadata": kept,
        "spec": body.get("spec") or {},
        "status": body.get("status") or {},
    }


def register_indexes(
    registry: kopf.OperatorRegistry, cache: Cache, feed: Feed, skipped: Skipped = uncounted
) -> None:
    """The three indexes the cache reads, on our own registry, feeding ``feed``.

    The functions are ``async`` on purpose: kopf runs a plain function in a thread pool, and
    these update the overlay that workers iterate on the event loop. On the loop they never
    run concurrently with a worker, and skip a thread hop per event. Each parses what it
    indexes once and hands the parsed form to the cache, so a read right after the event
    parses nothing. A message or record that cannot be parsed is never indexed: it is flagged
    here, as every reader flags one (:mod:`tiny_harness.kube.unreadable`), and ``skipped``
    (the operator's metrics) counts it.
    """

    @kopf.index(GROUP, VERSION, PLURAL, registry=registry, id=TASKS)
    async def tasks(
        namespace: str | None, name: str, body: kopf.Body, **_: Any
    ) -> dict[tuple[str, ...], Packed]:
        ns = namespace or ""
        obj = _plain(body)
        packed = pack(obj)
        shard = (obj["metadata"].get("labels") or {}).get(SHARD_LABEL)
        if shard is not None:
            feed.shards[(ns, name)] = str(shard)
        if cache.reads(feed):
            cache.indexed_task(ns, name, packed.resource_version)
        cache.parsed((TASKS, ns, name, packed.resource_version), obj)
        keys: dict[tuple[str, ...], Packed] = {(TASK, ns, name): packed}
        parent = local_parent_of(obj["spec"])
        if parent:
            keys[(PARENT, ns, str(parent))] = packed
        return keys

    @kopf.index(GROUP, VERSION, MESSAGE_PLURAL, registry=registry, id=MESSAGES)
    async def messages(
        namespace: str | None, body: kopf.Body, **_: Any
    ) -> dict[Key, Packed] | None:
        ns = namespace or ""
        obj = _plain(body)
        message = StoredMessage.read(obj, skipped)
        if message is None:  # it cannot be taken: flagged, and left out
            return None
        packed = pack(obj)
        cache.parsed((MESSAGES, ns, packed.name, packed.resource_version), message)
        return {(ns, message.spec.task): packed}

    @kopf.index(GROUP, VERSION, TURN_PLURAL, registry=registry, id=TURNS)
    async def turns(namespace: str | None, body: kopf.Body, **_: Any) -> dict[Key, Packed] | None:
        ns = namespace or ""
        obj = _plain(body)
        record = TurnRecord.read(obj, skipped)
        if record is None:
            return None
        if cache.reads(feed):
            cache.indexed_record(ns, record)
        packed = pack(obj)
        cache.parsed((TURNS, ns, packed.name, packed.resource_version), record)
        return {(ns, record.task): packed}
