"""The latest parsed versions of the objects the cache reads, kept within a count and a share
of its bytes, so a running conversation is parsed once per version.

The cache keeps each object as its JSON text (:mod:`tiny_harness.operator.resident`): one
allocation, where the parsed form is dozens of small ones. Reads parse on demand; what they
parsed (and what an event parsed) is kept here, the least recently read dropped first.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Final

#: Parsed versions kept for reads, at most (about the working set of a few hundred busy tasks);
#: they are bounded by bytes too (:data:`PARSED_SHARE`).
PARSED_KEPT: Final = 4096
#: The share of the cache's byte budget that parsed versions may take, counted as
#: :data:`PARSED_WEIGHT` times their text (a parsed object holds its strings and a dict or
#: model per level: a rough, conservative measure).
PARSED_SHARE: Final = 0.5
PARSED_WEIGHT: Final = 2

#: A version: ``(kind, namespace, name, resourceVersion)``.
Version = tuple[str, str, str, str]


class ParsedVersions:
    """Parsed versions by :data:`Version`, least recently read first."""

    def __init__(self) -> None:
        self._kept: OrderedDict[Version, tuple[Any, int]] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: Version) -> tuple[Any, int] | None:
        """The parsed version and its cost, now the most recently read; None if not kept."""
        found = self._kept.get(key)
        if found is not None:
            self._kept.move_to_end(key)
        return found

    def keep(self, key: Version, value: Any, size: int, budget: int) -> None:
        """Keep a parsed version of ``size`` bytes of text, within :data:`PARSED_KEPT` and the
        bytes' share of ``budget``."""
        cost = size * PARSED_WEIGHT
        old = self._kept.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        self._kept[key] = (value, cost)
        self.bytes += cost
        limit = budget * PARSED_SHARE
        while len(self._kept) > PARSED_KEPT or (self.bytes > limit and len(self._kept) > 1):
            _, (_, dropped) = self._kept.popitem(last=False)
            self.bytes -= dropped
