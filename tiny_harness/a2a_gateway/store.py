"""Kubernetes behind the SDK's versioned task store: ``HarnessTask`` objects read as A2A tasks,
and the only writes a participant makes (a new task, a message, a cancel request) as objects.

:class:`KubeTaskStore` implements a2a-sdk's :class:`~a2a.server.cluster.VersionedTaskStore`,
the gateway's outer shape for storage; its parts each have a module of their own:

- **reads** (here): a task is read from the namespace feed's index, or from the API server
  when the index has not heard of it yet, once per request, as a typed
  :class:`~tiny_harness.kube.participant_view.ParticipantView` that every later step takes
  (:meth:`KubeTaskStore.read`). A version is a ``resourceVersion``: a task read here carries
  the one it was read at, so a subscription opened before the read misses nothing after it.
  Reads are scoped to the caller, as the SDK's own stores scope them to an owner: a task the
  caller does not participate in is absent (``get`` returns None, ``list`` leaves it out);
- what a task holds besides its status, its history and artifacts (:mod:`.contents`);
- ``ListTasks`` (:mod:`.listing`);
- what became of a message a send wrote, as the journal says (:mod:`.answers`);
- the writes, ``save`` among them (:mod:`.writes`, which says what each write creates), and
  whether a first message may name its parent (:mod:`.parents`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from a2a.server.cluster import StoredTask, TaskVersion, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.types import ListTasksRequest, ListTasksResponse, Task
from a2a.utils.errors import InvalidRequestError, UnsupportedOperationError
from kubernetes_asyncio import client

from tiny_harness.a2a_gateway.answers import Answers
from tiny_harness.a2a_gateway.contents import TaskContents
from tiny_harness.a2a_gateway.identity import participant_of
from tiny_harness.a2a_gateway.listing import list_tasks
from tiny_harness.a2a_gateway.namespace_feed import NamespaceFeed
from tiny_harness.a2a_gateway.parents import ParentCheck
from tiny_harness.a2a_gateway.rendering import render_task, task_version
from tiny_harness.a2a_gateway.writes import TaskWrites
from tiny_harness.core.reach import DEFAULT_MAX_SUB_TASK_DEPTH
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.kube.client import HarnessTasks
from tiny_harness.kube.journal import TurnRecords
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import PLURAL
from tiny_harness.kube.participant_view import ParticipantView
from tiny_harness.kube.unreadable import Skipped, uncounted
from tiny_harness.kube.watching import read_for_watch

OwnerResolver = Callable[[ServerCallContext], str | None]


class KubeTaskStore(VersionedTaskStore):
    """The ``HarnessTask`` objects of one namespace as an a2a-sdk versioned task store: read
    from ``feed``'s index, written through the API server, the writes admitted by the feed's
    tally (the quotas of that namespace)."""

    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        *,
        feed: NamespaceFeed,
        owner_resolver: OwnerResolver = participant_of,
        skipped: Skipped = uncounted,
        max_sub_task_depth: int = DEFAULT_MAX_SUB_TASK_DEPTH,
    ) -> None:
        self.namespace = namespace
        self._feed = feed
        self._api = api
        self._owner = owner_resolver
        turns = TurnRecords(api, namespace, skipped=skipped)
        messages = HarnessMessages(api, namespace, skipped=skipped)
        self.contents = TaskContents(turns, messages, self.current)
        self.answers = Answers(turns, self.current)
        parents = ParentCheck(self.current, feed.index.get, max_depth=max_sub_task_depth)
        self.writes = TaskWrites(
            HarnessTasks(api, namespace), messages, feed.tally, parents, self.current
        )

    # -- reads -------------------------------------------------------------------------------

    async def current(self, task_id: str) -> ParticipantView | None:
        """The task as this replica holds it, or as the API server has it when the index has
        not heard of it yet (a task created a moment ago, here or on another replica): a
        participant reads what they just wrote. None: there is no such task."""
        await self._feed.ready()
        obj = self._feed.index.get(task_id)
        if obj is None:
            obj, _ = await read_for_watch(self._api, self.namespace, PLURAL, task_id)
        return None if obj is None else ParticipantView(obj)

    async def read(self, task_id: str, context: ServerCallContext) -> ParticipantView | None:
        """The task, read once for the request, or None when it does not exist or the caller
        is not on it (or its spec does not read, which shows it to no one)."""
        task = await self.current(task_id)
        if task is None or task.role_of(self._owner(context)) is None:
            return None
        return task

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        """The task with its history, or None when it does not exist or the caller is not on it.

        The version is the task's own: a subscription opened before this read
        (:meth:`.stream.TaskStreams.follow`) shows every change after it.
        """
        task = await self.read(task_id, context)
        return None if task is None else await self.whole(task)

    async def whole(self, task: ParticipantView) -> StoredTask:
        """``task`` (read once, :meth:`read`) rendered whole: with its history and artifacts."""
        history, artifacts = await asyncio.gather(
            self.contents.history(task), self.contents.artifacts(task)
        )
        return StoredTask(render_task(task, history, artifacts), task_version(task.obj))

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The tasks the caller is on, newest change first, filtered and paged (:mod:`.listing`)."""
        await self._feed.ready()
        return await list_tasks(
            self._feed.index,
            self._owner(context),
            params,
            history=self.contents.history,
            artifacts=self.contents.artifacts,
        )

    # -- writes ------------------------------------------------------------------------------

    async def save(
        self,
        task: Task,
        *,
        event: Event | None,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        """Write what a participant owns of ``task`` (:mod:`.writes` says what each write is)."""
        sender = self._owner(context)
        if sender is None:
            raise coded(
                InvalidRequestError,
                ReasonCode.UNAUTHENTICATED,
                "a write needs a participant identity",
            )
        return await self.writes.save(task, prev=prev, prev_version=prev_version, sender=sender)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        raise coded(
            UnsupportedOperationError,
            ReasonCode.NOT_OFFERED,
            "the gateway does not delete tasks; an administrator deletes one with "
            f"kubectl delete {PLURAL} {task_id}",
        )
