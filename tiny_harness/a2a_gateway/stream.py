"""A task's changes as a stream reads them: from the fan-out, and, on a resume, from history.

No gateway replica writes a task's state: the operator does, and the API server delivers each
committed write to the namespace's one watch (:mod:`.namespace_feed`), which queues it for the
task's subscriptions (:mod:`.fanout`). A stream here is such a subscription, opened *before*
the read its first event is cut from, so nothing between the read and the subscription is
missed: :meth:`TaskStreams.follow`, then the read, then :meth:`TaskStreams.changes`.

**Versions.** Every change carries its ``resourceVersion`` (``version`` in the task extension,
and the SSE event id). A stream yields a change only if it is after every version it has
already shown (``after``): a change that reached the index before the read, or one the
subscription queued that a read from the API server had already shown, is never shown twice.

**Resuming** (``Last-Event-ID``: the version a client last read, from any replica). When the
task has changed since (the index holds a later version), the changes in between are read from
the API server's history (:func:`~tiny_harness.kube.watching.changes_between`): the task as it
was at that version, to tell what a participant sees change, and each change after it, up to
the version held. Then the subscription's own changes follow, those already shown skipped.
When etcd has compacted that history, the task as it is now is all there is to show
(:attr:`Resumed.gap`), and the stream says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from a2a.types import Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent
from a2a.utils.errors import UnsupportedOperationError
from kubernetes_asyncio import client

from tiny_harness.a2a_gateway.fanout import Ended, Subscription
from tiny_harness.a2a_gateway.namespace_feed import NamespaceFeed
from tiny_harness.a2a_gateway.rendering import (
    ProgressKey,
    StatusKey,
    TaskChange,
    change_of,
    is_terminal,
)
from tiny_harness.core.artifact_index import ArtifactRow
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.kube.client import Obj
from tiny_harness.kube.names import PLURAL
from tiny_harness.kube.watching import WatchExpiredError, changes_between


class StreamCut(UnsupportedOperationError):
    """A stream ended by the gateway, not by its task: the A2A error its client reads last,
    which says why and where to resume from, in words and in its data (code ``stream_behind``
    and ``last_event_id``). FAILED_PRECONDITION, as a quota's refusal: A2A has no
    RESOURCE_EXHAUSTED, and the message names the remedy."""


def behind(task: str, version: int, bound: int) -> StreamCut:
    return coded(
        StreamCut,
        ReasonCode.STREAM_BEHIND,
        f"the stream of task {task!r} was ended: {bound} changes waited unread (the client "
        f"reads too slowly). Subscribe again with the header Last-Event-ID: {version} to be "
        "sent what followed",
        last_event_id=str(version),
    )


@dataclass(frozen=True)
class Resumed:
    """What a resumed stream starts with: the task as it was at the client's version (None:
    not known), and the changes since, up to the version the index holds. ``gap``: the
    history was compacted, so ``changes`` is only the task as it is now."""

    baseline: Obj | None
    changes: tuple[TaskChange, ...]
    gap: bool = False


class TaskStreams:
    """The streams of one namespace's tasks, over its feed; ``api`` reads history on resume."""

    def __init__(self, feed: NamespaceFeed, api: client.ApiClient) -> None:
        self.feed = feed
        self._api = api

    def follow(self, task_id: str) -> Subscription[TaskChange]:
        """A subscription to the task's changes, from now: open it before the read."""
        return self.feed.fanout.subscribe(task_id)

    async def missed(self, task_id: str, *, since: int, held: int) -> Resumed:
        """What a client that last read version ``since`` missed, up to version ``held``."""
        if held <= since:
            return Resumed(None, ())
        try:
            baseline, objects = await changes_between(
                self._api, self.feed.namespace, PLURAL, task_id, after=str(since), upto=held
            )
        except WatchExpiredError:
            now = self.feed.index.get(task_id)
            return Resumed(None, (change_of(now),) if now is not None else (), gap=True)
        return Resumed(baseline, tuple(change_of(obj) for obj in objects))

    async def changes(
        self,
        subscription: Subscription[TaskChange],
        *,
        after: int,
        until: float | None = None,
    ) -> AsyncGenerator[TaskChange, None]:
        """The subscription's changes after version ``after``, in order, until its task is
        deleted or ``until`` (the event loop's clock) passes; raises :class:`StreamCut` when
        its reader fell behind, and ends quietly when the gateway stops (the client resumes
        on another replica)."""
        shown = after
        while True:
            item = await subscription.next(until)
            if isinstance(item, Ended):
                if item is Ended.BEHIND:
                    raise behind(subscription.task, shown, subscription.bound)
                return
            version = item.revision
            if version <= shown:
                continue
            shown = version
            yield item


@dataclass(frozen=True)
class VisibleChange:
    """A visible change, the version it was cut from, and where the task's turns stood at it.
    ``progress_only``: nothing but the running turn's progress changed
    (:func:`.rendering.progress_key`)."""

    event: TaskStatusUpdateEvent
    revision: int
    turn: int
    running: bool
    progress_only: bool = False
    artifacts: tuple[ArtifactRow, ...] = ()


async def visible(
    source: AsyncGenerator[TaskChange, None],
    key: StatusKey | None,
    progress: ProgressKey,
    artifacts: tuple[ArtifactRow, ...] | None = None,
) -> AsyncGenerator[VisibleChange, None]:
    """Each change of ``source`` a participant can see (state, sub-state, status message or
    sub-task rows differ from the last one seen, starting from ``key``, None: anything is
    seen; the artifact index differs from ``artifacts``, when the stream shows artifacts; or
    only the running turn's progress), with where the task's turns stood at it. A
    lease renewal that changed nothing of these is not a change. ``source`` is closed with
    this iterator. The keys compared are the change's own, read once for all its subscribers
    (:class:`.rendering.TaskChange`)."""
    async with contextlib.aclosing(source):
        async for change in source:
            event = change.event
            if not isinstance(event, TaskStatusUpdateEvent):
                continue
            new_key, moved = change.key, change.progress
            published = artifacts is not None and change.artifacts != artifacts
            visible = new_key != key or is_terminal(event) or published
            if not visible and moved == progress:
                continue
            key, progress = new_key, moved
            if artifacts is not None:
                artifacts = change.artifacts
            yield VisibleChange(
                event,
                change.revision,
                change.turn,
                change.running,
                progress_only=not visible,
                artifacts=change.artifacts,
            )


@dataclass(frozen=True)
class Opening:
    """What a subscription shows before its live changes, and where it then stands: the
    version shown up to, and the status and progress keys it compares changes with."""

    events: list[Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent]
    held: int
    key: StatusKey | None
    progress: ProgressKey
    #: The artifact index the client holds (the task's; on a resume, as of its version) ...
    shown: tuple[ArtifactRow, ...] = ()
    #: ... and, on a resume that missed changes, the index to bring it to before the last event.
    index: tuple[ArtifactRow, ...] | None = None
    context_id: str = ""
