"""The reason a running turn is cut, given once, and the one window a cut waits for.

A cut is one cancellation of the turn's task, for a typed reason
(:class:`~tiny_harness.core.decide.CutReason`); the first reason given wins and a later one
changes nothing. The rule for the one race it has (two guards cutting at once) is that: the
first call wins, the order of the calls is the order of the event loop, and the turn's end is
read by that one reason (``supervisor.TurnSupervisor.conclude``).

**The deferred window.** One step of a turn must not be cut halfway: a brief on its way to a
remote agent, between the send and the record of the remote task's id (a remote task whose id
nobody wrote down could be neither followed nor cancelled). The turn's code marks that step with
:meth:`Cut.deferred`; a cut given inside it is remembered and delivered when the step ends, or
when the window's bound runs out, whichever is first. Nothing shields the step or swallows a
cancellation: the cancellation is simply not sent until then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any, Final

from tiny_harness.core.actions import CutReason

log = logging.getLogger(__name__)

#: The longest a deferred window holds a cut back: the wait for a remote agent to name the
#: task a brief created.
DEFER_SECONDS: Final = 30.0
#: How long a cut turn may take to end before the cut is given again (a bug under the turn
#: dropped the cancellation): past the longest deferred window.
CUT_GRACE_SECONDS: Final = DEFER_SECONDS + 5.0


class Cut:
    """The reason a running turn is cut: the first one given, said once."""

    def __init__(self) -> None:
        self.reason: CutReason | None = None
        self._turn: asyncio.Task[Any] | None = None
        self._deferring = 0
        self._held = False
        self._bound: asyncio.TimerHandle | None = None

    def watch(self, turn: asyncio.Task[Any]) -> None:
        self._turn = turn

    def __call__(self, reason: CutReason) -> None:
        """Cut the turn for ``reason`` (a later reason changes nothing)."""
        if self.reason is not None:
            return
        self.reason = reason
        if self._deferring:
            self._held = True
            log.info(
                "turn cut (%s) while a step that must not be cut halfway runs: the cut waits "
                "for it, at most %gs",
                reason.value,
                DEFER_SECONDS,
            )
            self._bound = asyncio.get_running_loop().call_later(DEFER_SECONDS, self._deliver)
            return
        self._deliver()

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A step a cut waits for (see the module docstring). A cut given before the step
        starts is not deferred: it has been delivered already."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
            if not self._deferring and self._held:
                self._deliver()

    def _deliver(self) -> None:
        self._held = False
        if self._bound is not None:
            self._bound.cancel()
            self._bound = None
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()

    async def see_through(self, grace: float = CUT_GRACE_SECONDS) -> None:
        """Wait for the cut turn to end; give the cut again only if code under the turn
        dropped it (a bug, logged as one)."""
        turn = self._turn
        while turn is not None and not turn.done():
            await asyncio.wait({turn}, timeout=grace)
            if not turn.done():
                log.error(
                    "a turn cut (%s) has not ended %.0fs later: code under it dropped the "
                    "cancellation; cutting it again",
                    self.reason,
                    grace,
                )
                turn.cancel()
