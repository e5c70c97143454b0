"""A turn's saved journal, consumed in order as the turn retraces its steps.

A turn run again with the entries it already checkpointed takes each step's result from them
instead of doing the step again (:mod:`tiny_harness.core.turn` names each step's entry). This
is the one reader of that journal: it hands out the entries in order, checks that each is the
step the turn has reached (a journal that does not match the turn is a
:class:`~tiny_harness.core.turn.JournalMismatchError`, never a silent divergence), and says when
the turn has gone past its end and is running live.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeVar

from tiny_harness.core.turn import (
    AwaitEntry,
    CompactionEntry,
    DrainEntry,
    JournalEntry,
    JournalMismatchError,
    ModelEntry,
    ToolEntry,
    TurnRef,
)

_E = TypeVar("_E", ModelEntry, ToolEntry, DrainEntry, CompactionEntry)


class Skipped:
    """At an optional step the recorded turn did not take (it drained nothing, say)."""


SKIPPED: Final = Skipped()


class Replay:
    """The saved journal, consumed in order as the turn retraces its steps."""

    def __init__(self, ref: TurnRef, entries: Sequence[JournalEntry]) -> None:
        self._ref = ref
        self._entries = entries
        self._next = 0

    @property
    def live(self) -> bool:
        return self._next >= len(self._entries)

    def _mismatch(self, expected: str) -> JournalMismatchError:
        found = self._entries[self._next].id if not self.live else "the end of the journal"
        return JournalMismatchError(self._ref.prefix, self._next, expected, found)

    def step(self, entry_id: str, kind: type[_E]) -> _E | None:
        """The recorded entry of a step every path takes; None once the journal is used up."""
        if self.live:
            return None
        entry = self._entries[self._next]
        if entry.id != entry_id or not isinstance(entry, kind):
            raise self._mismatch(entry_id)
        self._next += 1
        return entry

    def optional(self, entry_id: str, kind: type[_E]) -> _E | Skipped | None:
        """Like :meth:`step` for a step only recorded when it did something: SKIPPED while
        replaying past a point where nothing was recorded."""
        if self.live:
            return None
        entry = self._entries[self._next]
        if entry.id != entry_id:
            return SKIPPED
        if not isinstance(entry, kind):
            raise self._mismatch(entry_id)
        self._next += 1
        return entry

    def call(self, entry_id: str) -> ToolEntry | AwaitEntry | None:
        """The recorded outcome of a tool step: its result, or its park for approval."""
        if self.live:
            return None
        entry = self._entries[self._next]
        if entry.id != entry_id or not isinstance(entry, ToolEntry | AwaitEntry):
            raise self._mismatch(entry_id)
        self._next += 1
        return entry

    def finish(self) -> None:
        if not self.live:
            raise self._mismatch("the end of the turn")
