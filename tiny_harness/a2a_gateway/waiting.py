"""How long a send waits for its answer, and how the wait ends when no answer comes.

``SendMessage`` and ``SendStreamingMessage`` follow the task's watch after writing the message.
The wait ends at the first of these (the first three are read from the status events, the rest
from quiet ticks of the watch):

1. the task ends (a terminal state);
2. the status message is the message's answer outside a turn: the command's reply
   (``cmd-<id>``) or a refused completion's notice (``refused-<id>``);
3. the task waits for a participant again after the turn that took the message has ended, as of
   that status (:func:`tiny_harness.core.reply_ids.turn_has_ended`);
4. the watch has been quiet for a while (:data:`QUIET_FIRST` seconds, doubling to
   :data:`QUIET_CAP`), and the journal, read once, says the message was answered outside a turn
   without a status event (a refusal the operator keeps out of the status, or a command reply
   whose status write was lost when the operator stopped between its two writes): the answer,
   as a status event with the task's state as last seen;
5. at a quiet tick, no turn has taken the message ``take_seconds`` after it was written (no
   operator runs the namespace, or it is far behind): a note saying so. The message stays and is
   answered when an operator takes it; ``SubscribeToTask`` and ``GetTask`` show it;
6. at a quiet tick, nothing visible has changed for ``idle_seconds`` (a turn that stopped with
   no operator left to take its lease over): a note saying the task is still at work.

**Races.** A status event and a quiet tick never race: the one follow loop takes them in order,
and a tick happens only when no event is waiting. A journal read at a tick may miss an answer
written just after it; records only grow, so the next tick (or the status event, which the
operator writes after the journal entry) sees it. An event that arrives after a tick ended the
wait is not lost: it is in the task, for ``GetTask`` and ``SubscribeToTask``. The watch and the
tick share one pending read of the watch, which a tick never cancels.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Final, TypeVar

from tiny_harness.core.reason_codes import ReasonCode
from tiny_harness.core.reply_ids import Fate
from tiny_harness.core.settings import GatewaySettings

T = TypeVar("T")

#: The first quiet tick comes this long after the last event (an operator answers a command or
#: refuses a message within milliseconds, so a short first tick ends such waits quickly).
QUIET_FIRST: Final = 1.0
#: Quiet ticks double up to this interval: one journal read per open send per interval at most.
QUIET_CAP: Final = 30.0


@dataclass(frozen=True)
class Quiet:
    """A tick: nothing arrived on the watch for a while."""


@dataclass(frozen=True)
class Note:
    """Why the gateway ended a wait that no status event ended: the status message it shows,
    and the code a client reads instead of its text (under ``reason`` in the task extension
    of the event that carries it)."""

    message_id: str
    text: str
    reason: ReasonCode


@dataclass(frozen=True)
class Waits:
    """The bounds of a send's wait, in seconds (``[gateway]`` settings)."""

    take: float = GatewaySettings.model_fields["send_take_seconds"].default
    idle: float = GatewaySettings.model_fields["send_idle_seconds"].default
    first_tick: float = QUIET_FIRST
    tick_cap: float = QUIET_CAP


def at_quiet_tick(
    fate: Fate, message_id: str, *, since_written: float, since_change: float, waits: Waits
) -> Note | None:
    """How a quiet tick ends the wait for ``message_id`` (rules 4 to 6), or None: wait on."""
    if fate.answer is not None:
        return Note(fate.answer.id, fate.answer.text, ReasonCode.ANSWERED)
    if fate.taken is None and since_written >= waits.take:
        return Note(
            f"waiting-{message_id}",
            f"message {message_id} has waited {since_written:.0f}s and no operator has taken it "
            "(is the tiny-harness operator running for this namespace?). It stays queued and is "
            "answered when an operator takes it: subscribe to the task to follow it.",
            ReasonCode.NOT_TAKEN,
        )
    if since_change >= waits.idle:
        return Note(
            f"working-{message_id}",
            f"nothing has changed for {since_change:.0f}s; the task is still at work on message "
            f"{message_id}: subscribe to the task to follow it.",
            ReasonCode.STILL_WORKING,
        )
    return None


async def with_quiet_ticks(
    source: AsyncGenerator[T, None], *, first: float = QUIET_FIRST, cap: float = QUIET_CAP
) -> AsyncGenerator[T | Quiet, None]:
    """The items of ``source``, with a :class:`Quiet` tick whenever none arrived for a while
    (``first`` seconds after the last item, then doubling up to ``cap``). A tick leaves the
    pending read of ``source`` in place; ``source`` is closed when this iterator is."""
    pending: asyncio.Future[T] | None = None
    wait = first
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(source))
            done, _ = await asyncio.wait({pending}, timeout=wait)
            if not done:
                wait = min(wait * 2, cap)
                yield Quiet()
                continue
            finished, pending = pending, None
            try:
                item = finished.result()
            except StopAsyncIteration:
                return
            wait = first
            yield item
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending
        await source.aclose()
