"""What the operator is told of its objects: each shard's *feed*, and the form it keeps
each object in (:class:`Packed`: the JSON text while there is room, a summary always).

The feed is filled by the priming listing (:mod:`.priming`) and by kopf's handlers
(:mod:`.handlers`), both through :meth:`Cache.saw <tiny_harness.operator.cache.Cache.saw>`,
and read by the cache (:mod:`.cache`), which also decides what stays whole
(:mod:`.resident`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from tiny_harness.core.task import local_parent_of
from tiny_harness.core.tracing import TRACE_ANNOTATIONS
from tiny_harness.core.usage import Spent, spent_in
from tiny_harness.kube.client import Obj
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.kube.names import (
    CONTEXT_ID_ANNOTATION,
    FIRST_MESSAGE_ANNOTATION,
    LIFECYCLE_ANNOTATION,
    MESSAGE_PLURAL,
    PLURAL,
    SHARD_LABEL,
    TURN_PLURAL,
)
from tiny_harness.kube.unreadable import Skipped

Key = tuple[str, str]

#: The kinds fed, by the plural their objects are read back with. The task kind has two kinds
#: of key: ``(TASK, namespace, name)`` and ``(PARENT, namespace, parent name)``; a message and
#: a record are kept under ``(namespace, task)``.
TASKS = "tasks"
MESSAGES = "messages"
TURNS = "turns"
TASK = "task"
PARENT = "parent"
PLURALS: Final[Mapping[str, str]] = {
    TASKS: PLURAL,
    MESSAGES: MESSAGE_PLURAL,
    TURNS: TURN_PLURAL,
}


@dataclass(eq=False, slots=True)
class Packed:
    """A fed object: its JSON text while it is kept (None once dropped for room), and the
    summary kept for its whole life."""

    name: str
    resource_version: str
    text: str | None
    size: int = 0
    #: The tasks whose pin keeps it (:mod:`.resident`): a task's own and its parent's; a
    #: message's and a record's task.
    groups: tuple[Key, ...] = ()
    #: A task's summary as a small object: what the handlers and a tree's walk read.
    stub: Obj | None = None
    #: A record's usage and owners, so a tree's usage is summed without its journals.
    spent: tuple[Spent, ...] = ()
    owners: tuple[str, ...] = ()

    def drop_text(self) -> None:
        self.text = None


def pack(obj: Obj) -> Packed:
    meta = obj["metadata"]
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return Packed(str(meta["name"]), str(meta.get("resourceVersion", "")), text, len(text))


#: How each kind's objects are parsed, from their plain form (None: it cannot be taken).
PARSERS: Final[Mapping[str, Callable[[Obj, Skipped], Any]]] = {
    TASKS: lambda obj, skipped: obj,
    MESSAGES: lambda obj, skipped: StoredMessage.read(obj, skipped),
    TURNS: lambda obj, skipped: TurnRecord.read(obj, skipped),
}


def rv_of(obj: Obj) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))


def stub_of(obj: Obj) -> Obj:
    """What is kept of a task whose text is dropped: enough for a handler to poke the right
    workers (its state, its parent, whose child it is) and for a tree to be walked."""
    meta = obj["metadata"]
    status = obj.get("status") or {}
    refs = [
        {"kind": r.get("kind"), "name": r.get("name"), "uid": r.get("uid")}
        for r in meta.get("ownerReferences") or ()
    ]
    stub: Obj = {
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            "creationTimestamp": meta.get("creationTimestamp"),
            "ownerReferences": refs,
        },
        "spec": {"parent": (obj.get("spec") or {}).get("parent")},
        "status": {k: status.get(k) for k in ("state", "subState") if k in status},
    }
    return stub


class Feed:
    """The objects of one kopf instance's watches, as the cache reads them, and the shard label
    of each task.

    Unsharded, one feed serves the cache for the operator's whole life. Sharded, each watched shard
    has a feed of its own (:mod:`tiny_harness.operator.kopf_shards`); the cache reads a shard's feed
    from the moment it is primed (:meth:`~tiny_harness.operator.cache.Cache.adopt`) until the shard
    is no longer watched (:meth:`~tiny_harness.operator.cache.Cache.drop`). A task, its children,
    its messages and its turn records share a shard, so all of them are in one feed."""

    def __init__(self) -> None:
        #: What the cache reads: ``indices[kind][key][name] -> packed object``.
        self.indices: dict[str, dict[tuple[str, ...], dict[str, Packed]]] = {
            TASKS: {},
            MESSAGES: {},
            TURNS: {},
        }
        #: Each object's packed form and the keys it is under, by ``(kind, namespace, name)``.
        self.objects: dict[tuple[str, str, str], tuple[Packed, tuple[tuple[str, ...], ...]]] = {}
        #: Each task's shard label (its value as written; see operator/shard_deal.py).
        self.shards: dict[Key, str] = {}
        #: Set once the feed holds everything its first listing returned.
        self.filled = asyncio.Event()
        #: kopf's own listing of the shard (:mod:`.kopf_shards`): the objects of each kind it
        #: is still expected to tell, and when it last told one.
        self.listing: dict[str, int] = {}
        self.listed = asyncio.Event()
        self.last_listed = 0.0

    def expect_listing(self) -> None:
        """kopf is about to list the shard: it should tell about as many objects of each kind
        as the feed holds (more or fewer if they changed meanwhile)."""
        counts = {TASKS: 0, MESSAGES: 0, TURNS: 0}
        for kind, _, _ in self.objects:
            counts[kind] += 1
        self.listing = counts
        self.listed = asyncio.Event()
        self.last_listed = time.monotonic()
        if not any(counts.values()):
            self.listed.set()

    def told_listed(self, kind: str) -> None:
        """kopf's listing told one object of ``kind`` (an event with no type)."""
        self.last_listed = time.monotonic()
        left = self.listing.get(kind)
        if left is None:
            return
        self.listing[kind] = left - 1
        if all(n <= 0 for n in self.listing.values()):
            self.listed.set()

    def get(self, kind: str, namespace: str, name: str) -> Packed | None:
        found = self.objects.get((kind, namespace, name))
        return found[0] if found is not None else None

    def put(
        self, kind: str, namespace: str, packed: Packed, keys: tuple[tuple[str, ...], ...]
    ) -> Packed | None:
        """Hold ``packed`` under ``keys``, in place of the object's older version (returned)."""
        old = self.remove(kind, namespace, packed.name)
        self.objects[(kind, namespace, packed.name)] = (packed, keys)
        index = self.indices[kind]
        for key in keys:
            index.setdefault(key, {})[packed.name] = packed
        return old

    def hold(self, kind: str, obj: Obj, parsed: Any) -> tuple[Packed, Packed | None]:
        """Hold ``obj`` (as its kind's parser read it: ``parsed``) packed, under its keys and
        with the summary kept for its whole life, and a task's shard label; the packed form,
        and the older version it replaced."""
        meta = obj["metadata"]
        namespace = str(meta.get("namespace") or "")
        name = str(meta["name"])
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
                self.shards[(namespace, name)] = str(shard)
        else:
            keys = ((namespace, parsed.spec.task if kind == MESSAGES else parsed.task),)
            packed.groups = ((namespace, keys[0][1]),)
            if kind == TURNS:
                packed.spent = spent_in(parsed.entries)
                packed.owners = parsed.owners
        return packed, self.put(kind, namespace, packed, keys)

    def remove(self, kind: str, namespace: str, name: str) -> Packed | None:
        found = self.objects.pop((kind, namespace, name), None)
        if found is None:
            return None
        packed, keys = found
        index = self.indices[kind]
        for key in keys:
            under = index.get(key)
            if under is not None:
                under.pop(name, None)
                if not under:
                    del index[key]
        return packed


class Feeds(dict[int | None, Feed]):
    """The feeds the cache reads, by shard (None: the one feed of an unsharded operator), and
    what they hold across shards."""

    def known(self) -> int:
        """Objects known, in summary at least, in the feeds read."""
        return sum(len(feed.objects) for feed in self.values())

    def reads(self, feed: Feed) -> bool:
        return any(f is feed for f in self.values())

    def held(self, kind: str, key: tuple[str, ...]) -> list[Packed]:
        """The objects of ``kind`` under ``key``, from the first feed that has any (a task's
        group is in one shard)."""
        for feed in self.values():
            under = feed.indices[kind].get(key)
            if under is not None:
                return list(under.values())
        return []

    def shard(self, namespace: str, name: str) -> str | None:
        """The task's shard label, as the feeds read last saw it."""
        for feed in self.values():
            label = feed.shards.get((namespace, name))
            if label is not None:
                return label
        return None

    def in_shard(self, label: str) -> list[Key]:
        """Every task read whose shard label is ``label``."""
        return [
            key for feed in self.values() for key, value in feed.shards.items() if value == label
        ]

    def forget(self, namespace: str, name: str) -> None:
        """The task is gone: its shard label with it."""
        for feed in self.values():
            feed.shards.pop((namespace, name), None)


#: Metadata the operator never reads. ``managedFields`` alone is often most of an object's size
#: (every status write adds to it), and the feed holds every task it can. Of the
#: annotations only the A2A context id (a child joins its parent's context), the lifecycle a
#: child was created with (its first status follows it), the first message a new task's
#: creator announced (row 11 of core/decide.py) and a message's trace context (its turn
#: continues the sender's trace) are read.
_UNREAD_METADATA: Final = frozenset({"managedFields", "annotations"})
_READ_ANNOTATIONS: Final = frozenset(
    {CONTEXT_ID_ANNOTATION, LIFECYCLE_ANNOTATION, FIRST_MESSAGE_ANNOTATION, *TRACE_ANNOTATIONS}
)


def plain(body: Mapping[str, Any]) -> Obj:
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
