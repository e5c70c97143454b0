"""``CancelTask``: record a cancel request, and wait a bounded time for the operator to apply it.

As the SDK's cluster design has a remote replica do, the request is written through the
versioned store's ``save`` (the state moved to CANCELED, :mod:`.writes`), then the task is
followed (:func:`.follow.follow`) until it ends, at most ``cancel_wait`` seconds. A task still
running when the wait ends is answered as it is: the request stays recorded and the operator
applies it. A task that ended otherwise first is refused (``TaskNotCancelableError``, code
``task_ended``), and so is one that had ended before.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from a2a.server.cluster import ConcurrentTaskModificationError
from a2a.server.context import ServerCallContext
from a2a.types import CancelTaskRequest, Task, TaskState
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

from tiny_harness.a2a_gateway.follow import Start, follow, number
from tiny_harness.a2a_gateway.policy import caller, refuse_if_ended, require_ending_role
from tiny_harness.a2a_gateway.rendering import is_terminal, render_task, task_version
from tiny_harness.a2a_gateway.store import KubeTaskStore
from tiny_harness.a2a_gateway.stream import TaskStreams
from tiny_harness.core.reason_codes import ReasonCode, coded

#: How long CancelTask waits for the operator to apply the cancel before answering.
CANCEL_WAIT_SECONDS: Final = 30.0


class Cancels:
    """``CancelTask`` over ``store`` and ``streams``, waiting at most ``wait`` seconds."""

    def __init__(
        self, store: KubeTaskStore, streams: TaskStreams, wait: float = CANCEL_WAIT_SECONDS
    ) -> None:
        self._store = store
        self._streams = streams
        self._wait = wait

    async def cancel(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        """Request the cancel, wait for it, and answer with the task (the module says how)."""
        participant = caller(context)
        with self._streams.follow(params.id) as subscription:
            found = await self._store.read(params.id, context)
            if found is None:
                raise coded(
                    TaskNotFoundError, ReasonCode.TASK_NOT_FOUND, f"task {params.id!r} not found"
                )
            refuse_if_ended(found, TaskNotCancelableError)
            require_ending_role(found, participant, "cancel")
            task, version = render_task(found), task_version(found.obj)
            cancelled = Task()
            cancelled.CopyFrom(task)
            cancelled.status.state = TaskState.TASK_STATE_CANCELED
            # A conflict means the task ended meanwhile; the read below says how.
            with contextlib.suppress(ConcurrentTaskModificationError):
                await self._store.save(
                    cancelled, event=None, prev=task, prev_version=version, context=context
                )
            changes = follow(self._streams, Start(subscription, number(version)))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._wait), contextlib.aclosing(changes):
                    async for _ in changes:
                        pass  # the follow ends when the task has ended
        final = await self._store.get(params.id, context)
        if final is None:
            raise coded(
                TaskNotFoundError, ReasonCode.TASK_NOT_FOUND, f"task {params.id!r} was deleted"
            )
        state = final.task.status.state
        if is_terminal(final.task) and state != TaskState.TASK_STATE_CANCELED:
            raise coded(
                TaskNotCancelableError,
                ReasonCode.TASK_ENDED,
                f"the task ended as {TaskState.Name(state)} before it was cancelled",
            )
        return final.task
