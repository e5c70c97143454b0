"""``SubscribeToTask``: the task as it is now, then every visible change, until it ends.

A client that sends ``Last-Event-ID`` (the version of the last event it read, from any
replica) is sent the changes it missed instead (:meth:`.stream.TaskStreams.missed`), then the
live ones: what the subscription shows first is its :class:`~.stream.Opening`, read after the
subscription was opened, and the rest is the one follow (:func:`.follow.follow`). An ended
task is not followed: its subscription is refused (code ``task_ended``) and the client reads
it instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator

from a2a.server.context import ServerCallContext
from a2a.types import SubscribeToTaskRequest, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent
from a2a.utils.errors import TaskNotFoundError

from tiny_harness.a2a_gateway.artifacts import ArtifactFollower
from tiny_harness.a2a_gateway.follow import Followed, Start, follow
from tiny_harness.a2a_gateway.policy import refuse_if_ended
from tiny_harness.a2a_gateway.rendering import (
    ProgressKey,
    StatusKey,
    artifacts_of,
    change_of,
    is_terminal,
    progress_key,
    status_key,
)
from tiny_harness.a2a_gateway.store import KubeTaskStore
from tiny_harness.a2a_gateway.stream import Opening, TaskStreams
from tiny_harness.core.artifact_index import ArtifactRow
from tiny_harness.core.reason_codes import ReasonCode, coded


class Subscriptions:
    """``SubscribeToTask`` over ``store`` and ``streams``."""

    def __init__(self, store: KubeTaskStore, streams: TaskStreams) -> None:
        self._store = store
        self._streams = streams

    async def subscribe(
        self,
        params: SubscribeToTaskRequest,
        context: ServerCallContext,
        *,
        resume: int | None,
        until: float,
    ) -> AsyncGenerator[Task | Followed, None]:
        """The task's opening events, then its live changes (the module says which)."""
        with self._streams.follow(params.id) as subscription:
            opening = await self.opening(params.id, context, resume)
            artifacts = ArtifactFollower(
                self._store.contents.artifact_chunks, params.id, opening.context_id, opening.shown
            )
            if opening.index is not None and opening.events:
                # A resume: what changed of the artifacts since the client's version, whole,
                # before the last change it missed.
                updates = await artifacts.whole_updates(opening.index)
                opening.events[-1:-1] = updates
            while opening.events:
                first = opening.events.pop(0)
                yield first
                if not isinstance(first, TaskArtifactUpdateEvent) and is_terminal(first):
                    return
                del first
            # A stream may stay open for hours: its frame keeps the versions and keys it
            # compares with, not the task (and its history) it started from.
            start = Start(subscription, opening.held, opening.key, opening.progress)
            del opening
            changes = follow(self._streams, start, until=until, artifacts=artifacts)
            async with contextlib.aclosing(changes):
                async for event in changes:
                    yield event

    async def opening(
        self, task_id: str, context: ServerCallContext, resume: int | None
    ) -> Opening:
        """What a subscription shows first, read after it was opened: the task as it is now,
        or, resuming from ``resume``, the visible changes the client missed."""
        task = await self._store.read(task_id, context)
        if task is None:
            raise coded(TaskNotFoundError, ReasonCode.TASK_NOT_FOUND, f"task {task_id!r} not found")
        stored = await self._store.whole(task)
        held = int(task.resource_version)
        if resume is None:
            refuse_if_ended(task)
            return Opening(
                [stored.task],
                held,
                status_key(stored.task),
                progress_key(stored.task),
                shown=artifacts_of(stored.task),
                context_id=stored.task.context_id,
            )
        key: StatusKey | None = None
        progress: ProgressKey = (0, 0)
        shown: tuple[ArtifactRow, ...] = ()
        resumed = await self._streams.missed(task_id, since=resume, held=held)
        if resumed.baseline is not None:
            base = change_of(resumed.baseline)
            key, progress, shown = base.key, base.progress, base.artifacts
        if not resumed.changes:
            # Nothing missed: the task as the client last saw it, for the SDK's stream starts
            # with an event.
            return Opening(
                [stored.task],
                held,
                key,
                progress,
                shown=artifacts_of(stored.task),
                context_id=stored.task.context_id,
            )
        events: list[Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent] = []
        upto = resume
        for change in resumed.changes:
            upto = max(upto, change.revision)
            new_key, moved = change.key, change.progress
            if new_key == key and moved == progress and not resumed.gap:
                continue
            key, progress = new_key, moved
            events.append(change.event)
        index = resumed.changes[-1].artifacts
        if not events and index != shown:
            # Only the artifacts changed: the last status follows their updates, with its id.
            events.append(resumed.changes[-1].event)
        return Opening(
            events,
            max(held, upto),
            key,
            progress,
            shown=shown,
            index=index,
            context_id=stored.task.context_id,
        )
