"""The one stream that follows a task, whichever method follows it.

A send's wait (``SendMessage``, ``SendStreamingMessage``), ``SubscribeToTask`` and
``CancelTask``'s wait each follow a task the same way, through :func:`follow`: a subscription
opened before the read the follow starts from (:class:`Start`), its changes after the version
that read showed (:meth:`.stream.TaskStreams.changes`), each one a participant can see
(:func:`.stream.visible`), with the artifact chunks it adds before it when the stream shows
artifacts (:class:`.artifacts.ArtifactFollower`). It ends:

- when the task ends (a terminal state): the last thing sent is that change;
- when its :class:`Ending` says so (a send's wait: the message is answered, or a quiet tick
  finds a note to end on, which is sent last: :class:`.send.SendWait`);
- when its subscription ends (:class:`.fanout.Ended`): quietly for the task deleted, the
  gateway stopping or the stream's lifetime reached, and with a
  :class:`~.stream.StreamCut` error (code ``stream_behind``) for a reader that fell behind.

Each end is tested without a network, over plain fakes (``tests/unit/a2a_gateway/``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

from a2a.server.cluster import TaskVersion
from a2a.types import TaskArtifactUpdateEvent, TaskStatusUpdateEvent

from tiny_harness.a2a_gateway.artifacts import ArtifactFollower
from tiny_harness.a2a_gateway.fanout import Subscription
from tiny_harness.a2a_gateway.rendering import ProgressKey, StatusKey, TaskChange, is_terminal
from tiny_harness.a2a_gateway.stream import TaskStreams, VisibleChange, visible
from tiny_harness.a2a_gateway.waiting import Quiet, with_quiet_ticks

#: What a follow sends: each visible change's status, after the artifact chunks it added.
Followed = TaskStatusUpdateEvent | TaskArtifactUpdateEvent


def number(version: TaskVersion) -> int:
    """A version as a number to order changes by (0: none, before every change)."""
    return 0 if version.is_missing else int(str(version._value))


@dataclass(frozen=True)
class Start:
    """Where a follow starts: its subscription (opened before the read), the version the read
    showed (changes at or before it are not shown again), and the status and progress keys
    the first change is compared with (``key`` None: any change is news)."""

    subscription: Subscription[TaskChange]
    after: int
    key: StatusKey | None = None
    progress: ProgressKey = (0, 0)


class Ending(Protocol):
    """What ends a follow before its task ends: asked of each visible change once it is sent,
    and at each quiet tick (none arrived for a while, :func:`.waiting.with_quiet_ticks`)."""

    first_tick: float
    tick_cap: float

    async def at_change(self, change: VisibleChange) -> bool:
        """Whether the follow ends after ``change``."""
        ...

    async def at_quiet(self) -> TaskStatusUpdateEvent | None:
        """The event to end the follow on at a quiet tick (sent last), or None: follow on."""
        ...


async def follow(
    streams: TaskStreams,
    start: Start,
    *,
    until: float | None = None,
    artifacts: ArtifactFollower | None = None,
    ending: Ending | None = None,
) -> AsyncGenerator[Followed, None]:
    """The task's visible changes after ``start`` until it ends, ``ending`` ends the follow,
    its subscription ends, or ``until`` (the event loop's clock) passes (the module says how
    each ends). With ``artifacts``, each change's new artifact chunks come before it."""
    source = streams.changes(start.subscription, after=start.after, until=until)
    shown = artifacts.shown if artifacts is not None else None
    seen = visible(source, start.key, start.progress, shown)
    changes = (
        seen
        if ending is None
        else with_quiet_ticks(seen, first=ending.first_tick, cap=ending.tick_cap)
    )
    async with contextlib.aclosing(changes):
        async for change in changes:
            if isinstance(change, Quiet):
                assert ending is not None  # ticks come only with an ending
                last = await ending.at_quiet()
                if last is not None:
                    yield last
                    return
                continue
            if artifacts is not None:
                for update in await artifacts.updates(change.artifacts):
                    yield update
            yield change.event
            if is_terminal(change.event):
                return
            if ending is not None and await ending.at_change(change):
                return
