"""A watch on a ``HarnessTask`` as the SDK's task event stream.

a2a-sdk's :class:`~a2a.server.cluster.TaskEventStream` is how one replica hears about changes
another replica made. Here no gateway replica makes them: the operator does, by writing the
task's status, and the API server already delivers every committed write to whoever watches.
So :meth:`KubeTaskEventStream.subscribe` is a watch from the version the subscriber read, each
change rendered as a ``TaskStatusUpdateEvent`` at its ``resourceVersion``, and ``publish`` and
``destroy`` have nothing to do. Any number of gateway replicas see the same events in the same
order, with nothing shared between them but the API server.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass

from a2a.server.cluster import TaskEventStream, TaskVersion, VersionedEvent
from kubernetes_asyncio import client

from tiny_harness.a2a_gateway.rendering import (
    ResourceVersion,
    render_task,
    status_event,
    task_version,
)
from tiny_harness.kube.client import Obj
from tiny_harness.kube.names import PLURAL
from tiny_harness.kube.watching import WatchExpiredError, read_for_watch, watch_object


@dataclass(frozen=True)
class TaskChange(VersionedEvent):
    """A change as a subscriber sees it, and where the task's turns stood at it: whether the
    turn that took a message had ended *as of this change* is a question about the change,
    not about the task as it is by the time the subscriber asks
    (:func:`tiny_harness.core.reply_ids.turn_has_ended`)."""

    turn: int = 0
    running: bool = False


def change_of(obj: Obj) -> TaskChange:
    status = obj.get("status") or {}
    return TaskChange(
        status_event(render_task(obj)),
        task_version(obj),
        turn=int(status.get("turn") or 0),
        running=status.get("runner") is not None,
    )


class KubeTaskEventStream(TaskEventStream):
    """Task events from the API server's watch, for the tasks of one namespace.

    Authorization is the reader's: subscribe only after a scoped read of the task (the request
    handler reads it through :class:`~tiny_harness.a2a_gateway.store.KubeTaskStore`).
    """

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self._api = api
        self.namespace = namespace

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        """Nothing to do: the operator's status write is the publication, and the API server
        delivers it to every replica's watch."""

    async def subscribe(
        self, task_id: str, *, after: TaskVersion
    ) -> AsyncGenerator[VersionedEvent, None]:
        """One event per committed change of the task after ``after``, in commit order. Ends
        when the task is deleted. From ``TaskVersion.MISSING``, the task as it is now comes
        first."""
        version = after
        if not isinstance(version, ResourceVersion):
            obj, read_at = await read_for_watch(self._api, self.namespace, PLURAL, task_id)
            if obj is None:
                return
            version = ResourceVersion(read_at)
            yield change_of(obj)
        while True:
            try:
                async for change in watch_object(
                    self._api,
                    self.namespace,
                    PLURAL,
                    task_id,
                    resource_version=version.resource_version,
                ):
                    if change.type == "DELETED":
                        return
                    version = task_version(change.object)
                    yield change_of(change.object)
                return  # pragma: no cover - watch_object only ends when closed
            except WatchExpiredError:
                # The history since `version` is gone: read the task as it is now and watch on
                # from the read. Intermediate states are lost; the current one is not.
                obj, read_at = await read_for_watch(self._api, self.namespace, PLURAL, task_id)
                if obj is None:
                    return
                if task_version(obj).is_after(version):
                    yield change_of(obj)
                version = ResourceVersion(read_at)

    async def destroy(self, task_id: str) -> None:
        """Nothing to release: a subscription's watch ends with its subscriber."""
