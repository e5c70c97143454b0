"""Which objects the operator keeps in memory whole: as many bytes as it is given, no more.

The operator's cache knows every object of the namespaces it serves, but keeps only a
*summary* of most of them (names, versions, what a handler reads: :mod:`.cache`). The JSON
text of an object is kept while there is room: the most recently seen or read first, up to
``budget`` bytes. The rest are dropped to their summary and read back from the API server by
name when a pass needs them (:meth:`tiny_harness.operator.cache.Cache.load`). So an operator
started on a namespace many times its memory still starts, and serves: what it keeps grows
with the tasks at work, not with the tasks that exist.

The rules:

- **Pinned is kept.** A task being worked pins its *group* (its own object, its messages, its
  turn records and its children, which its rows read); nothing of a pinned group is dropped,
  so nothing a pass or a running turn reads goes missing under it. While everything is pinned
  the budget may be passed (the gauge shows it); it is never passed by what nobody works.
- **Least recently used goes first.** Storing or reading an object makes it the newest. Room
  is made by dropping the oldest unpinned ones; an oldest one that is pinned is moved to the
  newest end, so a round of eviction looks at each object at most once.
- **Sizes are the JSON text's length** (compact, one character per byte for the ASCII that
  names and most text are): what the object costs held as one string.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable
from typing import Protocol

Key = tuple[str, str]


class Held(Protocol):
    """What the store keeps: an object whose text can be dropped to its summary."""

    size: int
    groups: tuple[Key, ...]

    def drop_text(self) -> None: ...


class Resident:
    """The objects kept whole, least recently used first, within ``budget`` bytes."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        #: Bytes of text kept now.
        self.bytes = 0
        #: Texts dropped to make room, for the metrics.
        self.dropped = 0
        self._kept: OrderedDict[Held, None] = OrderedDict()
        self._pins: Counter[Key] = Counter()

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, held: Held) -> None:
        """``held`` has its text now: keep it as the newest, making room if need be."""
        if held in self._kept:
            self._kept.move_to_end(held)
            return
        self._kept[held] = None
        self.bytes += held.size
        self._make_room()

    def touch(self, held: Held) -> None:
        """``held`` was read: the newest now."""
        if held in self._kept:
            self._kept.move_to_end(held)

    def forget(self, held: Held) -> None:
        """``held`` is gone (replaced by a newer version, or deleted)."""
        if self._kept.pop(held, False) is None:
            self.bytes -= held.size

    def pin(self, group: Key) -> None:
        self._pins[group] += 1

    def unpin(self, group: Key) -> None:
        self._pins[group] -= 1
        if self._pins[group] <= 0:
            del self._pins[group]
        self._make_room()

    def pinned(self, held: Held) -> bool:
        return any(group in self._pins for group in held.groups)

    def pinned_groups(self) -> Iterable[Key]:
        return self._pins.keys()

    def _make_room(self) -> None:
        looked = 0
        count = len(self._kept)
        while self.bytes > self.budget and looked < count:
            looked += 1
            oldest = next(iter(self._kept))
            if self.pinned(oldest):
                self._kept.move_to_end(oldest)
                continue
            del self._kept[oldest]
            self.bytes -= oldest.size
            self.dropped += 1
            oldest.drop_text()
