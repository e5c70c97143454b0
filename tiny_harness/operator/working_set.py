"""What a worker's passes read, kept in memory while it runs: its task's group, pinned and loaded.

The cache keeps each object's text while there is room (:mod:`tiny_harness.operator.resident`).
A task's worker pins its group (the task, its messages, records and children, and its
ancestors, whose budgets bound it) for as long as it runs (:class:`Working`), and loads it at
the start of every pass (:meth:`Cache.load <tiny_harness.operator.cache.Cache.load>`),
reading back by name, :data:`LOADS_AT_ONCE` at a time, what was dropped for room. Nothing of
a pinned group is dropped, so nothing a pass or a running turn reads goes missing under it. A
read of a dropped object that nobody loaded is a bug, and says so (:class:`NotLoaded`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, Protocol

from tiny_harness.kube.client import Obj
from tiny_harness.operator.feed import (
    MESSAGES,
    PARENT,
    PLURALS,
    TASK,
    TASKS,
    TURNS,
    Feed,
    Key,
    Packed,
    plain,
)
from tiny_harness.operator.resident import Resident

#: Objects read back by name at once by one load.
LOADS_AT_ONCE: Final = 8

#: Reads one object back from the API server: ``(plural, namespace, name)`` to the object, or
#: None when it is gone.
Fetch = Callable[[str, str, str], Awaitable[Obj | None]]


class NotLoaded(LookupError):
    """A read of an object whose text was dropped for room, outside the group its reader
    loaded (:meth:`Cache.load <tiny_harness.operator.cache.Cache.load>`): a missing load in
    the caller, never a state of the task."""


@dataclass(slots=True)
class Pins:
    """The task groups one worker has pinned (:class:`Working`)."""

    groups: set[Key] = field(default_factory=set)

    def add(self, groups: Iterable[Key], resident: Resident) -> None:
        """Pin ``groups`` too (the ancestors a load found)."""
        for group in groups:
            if group not in self.groups:
                self.groups.add(group)
                resident.pin(group)


class Working:
    """A worker's pins (``with cache.working(...) as pins``): its task's group, and the
    ancestors its loads found; all unpinned when the worker ends."""

    def __init__(self, resident: Resident, key: Key) -> None:
        self.resident = resident
        self.key = key
        self.pins = Pins()

    def __enter__(self) -> Pins:
        self.pins.groups.add(self.key)
        self.resident.pin(self.key)
        return self.pins

    def __exit__(self, *_: object) -> None:
        for group in self.pins.groups:
            self.resident.unpin(group)
        self.pins.groups.clear()


def held_in_groups(
    feeds: Iterable[Feed], namespace: str, name: str, groups: Iterable[Key]
) -> list[tuple[Feed, str, Packed]]:
    """Everything a pass over task ``name`` reads, as the feeds hold it: the tasks of
    ``groups`` (the task and its ancestors), its messages, its records and its children."""
    wanted: list[tuple[Feed, str, Packed]] = []
    groups = list(groups)
    for feed in feeds:
        for ns, task in groups:
            wanted += [(feed, TASKS, p) for p in _in(feed, TASKS, (TASK, ns, task))]
        wanted += [(feed, MESSAGES, p) for p in _in(feed, MESSAGES, (namespace, name))]
        wanted += [(feed, TURNS, p) for p in _in(feed, TURNS, (namespace, name))]
        wanted += [(feed, TASKS, p) for p in _in(feed, TASKS, (PARENT, namespace, name))]
    return wanted


class Fed(Protocol):
    """Where what is read back goes: the cache, as if the feed had told it."""

    loaded: int

    def saw(self, feed: Feed, kind: str, obj: Obj, *, deleted: bool = False) -> None: ...


async def read_back(
    fed: Fed, fetch: Fetch, namespace: str, missing: Iterable[tuple[Feed, str, Packed]]
) -> None:
    """Read ``missing`` back by name, :data:`LOADS_AT_ONCE` at a time, into ``fed``."""
    gate = asyncio.Semaphore(LOADS_AT_ONCE)

    async def back(feed: Feed, kind: str, packed: Packed) -> None:
        async with gate:
            obj = await fetch(PLURALS[kind], namespace, packed.name)
        fed.loaded += 1
        if feed.get(kind, namespace, packed.name) is not packed:
            return  # an event brought a newer version meanwhile
        if obj is None:
            fed.saw(
                feed,
                kind,
                {"metadata": {"namespace": namespace, "name": packed.name}},
                deleted=True,
            )
        else:
            fed.saw(feed, kind, plain(obj))

    async with asyncio.TaskGroup() as reading:
        for feed, kind, packed in missing:
            reading.create_task(back(feed, kind, packed))


def _in(feed: Feed, kind: str, key: tuple[str, ...]) -> list[Packed]:
    return list(feed.indices[kind].get(key, {}).values())
