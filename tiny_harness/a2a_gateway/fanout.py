"""One watch's changes handed to every stream that follows the task: the gateway's fan-out.

A stream (``SubscribeToTask``, ``SendStreamingMessage``, a unary send's wait, a cancel's wait)
is a :class:`Subscription`: a bounded queue of the task's changes, and nothing else. The
namespace's one watch of tasks (:mod:`.namespace_feed`) gives each change to :meth:`Fanout.tell`
once; it is rendered once (:func:`.rendering.change_of`), however many streams follow the task,
and appended to each of their queues in the same step of the event loop.

**The rules.**

- *Order.* A subscription's items are its task's changes in commit order: the one watch
  delivers them in that order and :meth:`Fanout.tell` appends to every queue before it returns.
- *No gap at the start.* A subscription made in the same step of the event loop as a read of
  the task (:class:`~.task_index.TaskIndex`) receives every change after that read: there is
  no await between the two.
- *A slow reader never slows the others.* :meth:`Fanout.tell` never waits: a queue that is
  full (:attr:`Subscription.bound` changes unread) is not grown; its subscription ends,
  :attr:`Ended.BEHIND`, and its stream says so; the client resumes from the last change it
  read (:mod:`.resume`).
- *An end is final and said once.* A subscription ends for one reason, the first
  (:class:`Ended`): the task deleted, the reader behind, the gateway stopping, the stream's
  lifetime reached. What was queued
  before the end is read first; then :meth:`Subscription.next` returns the reason.
"""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from tiny_harness.kube.client import Obj

C = TypeVar("C")


class Ended(enum.Enum):
    """Why a subscription ended."""

    #: The task was deleted.
    DELETED = "deleted"
    #: The reader left its queue full: resume from the last change read.
    BEHIND = "behind"
    #: The gateway is stopping: resume on another replica.
    STOPPING = "stopping"
    #: The stream reached its lifetime (``gateway.stream_lifetime_seconds``): resume.
    LIFETIME = "lifetime"


class Subscription(Generic[C]):
    """One reader's queue of a task's changes: at most ``bound`` unread, then it ends."""

    __slots__ = ("_fanout", "_items", "_waiter", "bound", "ended", "task")

    def __init__(self, fanout: Fanout[C], task: str, bound: int) -> None:
        self.task = task
        self.bound = bound
        self._items: deque[C] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.ended: Ended | None = None
        self._fanout = fanout

    def _put(self, change: C) -> None:
        if self.ended is not None:
            return
        if len(self._items) >= self.bound:
            self._end(Ended.BEHIND)
            return
        self._items.append(change)
        self._wake()

    def _end(self, reason: Ended) -> None:
        if self.ended is None:
            self.ended = reason
            self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def next(self, until: float | None = None) -> C | Ended:
        """The next change, waiting for one; once the queue is read, the reason it ended. At
        ``until`` (the event loop's clock) the subscription ends, :attr:`Ended.LIFETIME`."""
        while not self._items:
            if self.ended is not None:
                return self.ended
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout_at(until):
                    await self._waiter
            except TimeoutError:
                self._end(Ended.LIFETIME)
            finally:
                self._waiter = None
        return self._items.popleft()

    def close(self) -> None:
        """The reader is done: it is told nothing more."""
        self._fanout._leave(self)

    def __enter__(self) -> Subscription[C]:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Fanout(Generic[C]):
    """Subscriptions by task name, each change rendered once by ``render``."""

    def __init__(self, render: Callable[[Obj], C], *, bound: int) -> None:
        self._render = render
        self.bound = bound
        self._by_task: dict[str, set[Subscription[C]]] = {}

    def __len__(self) -> int:
        return sum(len(s) for s in self._by_task.values())

    def subscribe(self, task: str) -> Subscription[C]:
        subscription = Subscription(self, task, self.bound)
        self._by_task.setdefault(task, set()).add(subscription)
        return subscription

    def _leave(self, subscription: Subscription[C]) -> None:
        readers = self._by_task.get(subscription.task)
        if readers is None:
            return
        readers.discard(subscription)
        if not readers:
            del self._by_task[subscription.task]

    def followed(self, task: str) -> bool:
        return task in self._by_task

    def tell(self, obj: Obj) -> None:
        """A change of ``obj``'s task: rendered once, queued for each of its readers."""
        readers = self._by_task.get(str(obj["metadata"]["name"]))
        if not readers:
            return
        change = self._render(obj)
        for subscription in list(readers):
            subscription._put(change)

    def gone(self, task: str) -> None:
        """The task was deleted: its subscriptions end."""
        self._end(self._by_task.pop(task, set()), Ended.DELETED)

    def stop(self) -> None:
        """The gateway stops: every subscription ends."""
        readers = [s for group in self._by_task.values() for s in group]
        self._by_task.clear()
        self._end(readers, Ended.STOPPING)

    @staticmethod
    def _end(readers: Iterable[Subscription[C]], reason: Ended) -> None:
        for subscription in readers:
            subscription._end(reason)
