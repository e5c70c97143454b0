"""The gateway's request handler over a namespace held in memory, for the unit tests of each of
its method families: no API server and no network.

What is real: the handler, its families and the one follow, the versioned task store's reads,
its writes (:class:`~tiny_harness.a2a_gateway.writes.TaskWrites`) and their quota tally, the
namespace feed (the task index and the fan-out every stream reads) and the stream limits.
What is a plain fake: the API objects the writes create (:class:`FakeTasks`,
:class:`FakeMessages`, which deliver what they create to the feed, as the watch would), the
journal a send's wait asks (:class:`FakeJournal`) and the history (the messages sent). The
operator is the test: it changes a task with :meth:`Namespace.change`, which the feed hears
as the watch would tell it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.types import Artifact, Message, Part, Role, SendMessageRequest
from kubernetes_asyncio import client

from tiny_harness.a2a_gateway import store as store_module
from tiny_harness.a2a_gateway.handler import GatewayRequestHandler
from tiny_harness.a2a_gateway.metrics import GatewayMetrics
from tiny_harness.a2a_gateway.namespace_feed import NamespaceFeed
from tiny_harness.a2a_gateway.parents import ParentCheck
from tiny_harness.a2a_gateway.rendering import pending_message
from tiny_harness.a2a_gateway.store import KubeTaskStore
from tiny_harness.a2a_gateway.stream import TaskStreams
from tiny_harness.a2a_gateway.stream_limits import StreamLimits
from tiny_harness.a2a_gateway.tally import QuotaTally
from tiny_harness.a2a_gateway.waiting import Waits
from tiny_harness.a2a_gateway.writes import TaskWrites
from tiny_harness.core.artifact_index import ArtifactChunk
from tiny_harness.core.errors import TaskNotFoundError
from tiny_harness.core.history import RecordEntry
from tiny_harness.core.inbox import MessageSpec, message_name
from tiny_harness.core.reply_ids import Fate, answered_as_of, fate_of
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.turn import DrainEntry, InboundMessage
from tiny_harness.kube.client import ConflictError, child_metadata
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.kube.participant_view import ParticipantView
from tiny_harness.kube.watching import Synced, WatchEvent

NS = "team"
#: The runner lease of a turn at work, as the operator writes it.
RUNNER = {"holder": "op-1", "renewTime": "2026-12-01T00:00:00Z", "epoch": 1}
#: Waits short enough for a test: a quiet tick every few milliseconds.
QUICK = Waits(take=0.3, idle=0.6, first_tick=0.01, tick_cap=0.02)

Obj = dict[str, Any]


class Caller(User):
    """A participant the gateway's middleware authenticated."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self.name


def as_(who: str) -> ServerCallContext:
    """The call context of a call ``who`` makes."""
    return ServerCallContext(user=Caller(who))


def text(words: str, *, task_id: str = "", message_id: str = "m-1") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=message_id, task_id=task_id, role=Role.ROLE_USER, parts=[Part(text=words)]
        )
    )


def spec(*people: tuple[str, str], goal: str = "ship") -> Obj:
    """A stored spec naming ``people`` as (id, role)."""
    return {"goal": goal, "participants": [{"id": p, "role": r} for p, r in people]}


@dataclass
class Namespace:
    """The tasks of one namespace as the feed hears them, at etcd's versions."""

    feed: NamespaceFeed
    versions: itertools.count[int] = field(default_factory=lambda: itertools.count(100))
    objects: dict[str, Obj] = field(default_factory=dict)

    def version(self) -> str:
        return str(next(self.versions))

    def put(self, obj: Obj) -> Obj:
        """An object as the API server stores it, told to the feed as its watch would."""
        name = obj["metadata"]["name"]
        added = name not in self.objects
        obj["metadata"]["resourceVersion"] = self.version()
        obj["metadata"].setdefault("uid", f"uid-{name}")
        self.objects[name] = obj
        self.feed.hear_task(WatchEvent("ADDED" if added else "MODIFIED", obj))
        return obj

    def task(self, name: str, stored_spec: Obj, **status: Any) -> Obj:
        """A task as ``kubectl apply`` and the operator would leave it."""
        obj: Obj = {"metadata": {"name": name}, "spec": stored_spec}
        if status:
            obj["status"] = status
        return self.put(obj)

    def change(self, name: str, **status: Any) -> Obj:
        """The operator's status write: ``status`` replaces the task's."""
        obj = dict(self.objects[name])
        obj["metadata"] = dict(obj["metadata"])
        obj["status"] = status
        return self.put(obj)

    def delete(self, name: str) -> None:
        obj = self.objects.pop(name)
        self.feed.hear_task(WatchEvent("DELETED", obj))


class FakeTasks:
    """``HarnessTasks`` as the gateway's writes use it: what it creates is stored and heard."""

    def __init__(self, namespace: Namespace) -> None:
        self.namespace = namespace
        self.created: list[Obj] = []
        #: The owner each create was given (None: a task of its own).
        self.owners: list[Obj | None] = []

    async def create(
        self,
        name: str,
        spec: Mapping[str, Any],
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        owner: Obj | None = None,
    ) -> Obj:
        self.owners.append(owner)
        if name in self.namespace.objects:
            raise ConflictError(f"the task {name!r} changed meanwhile")
        metadata: Obj = {"name": name, "annotations": dict(annotations or {})}
        child = child_metadata(owner) if owner is not None else {}
        metadata["labels"] = {**child.get("labels", {}), **(labels or {})}
        if owner is not None:
            metadata["ownerReferences"] = child["ownerReferences"]
        obj = self.namespace.put({"metadata": metadata, "spec": dict(spec)})
        self.created.append(obj)
        return obj


class FakeMessages:
    """``HarnessMessages`` as the writes use it: each message sent once, by its name."""

    def __init__(self, namespace: Namespace) -> None:
        self.namespace = namespace
        self.stored: dict[str, StoredMessage] = {}
        #: Each message as it is first stored: the operator (the test) waits here for one.
        self.arrivals: asyncio.Queue[MessageSpec] = asyncio.Queue()

    async def send(self, spec: MessageSpec, *, task: Obj) -> StoredMessage:
        name = message_name(spec.task, str(task["metadata"]["uid"]), spec.message_id)
        if name not in self.stored:
            self.stored[name] = StoredMessage(
                name=name,
                spec=spec,
                created="",
                resource_version=self.namespace.version(),
                owners=(str(task["metadata"]["uid"]),),
            )
            self.arrivals.put_nowait(spec)
        return self.stored[name]

    async def get(self, name: str) -> StoredMessage | None:
        if name not in self.stored:
            raise TaskNotFoundError(name)
        return self.stored[name]

    def to(self, task: str) -> list[MessageSpec]:
        """The messages sent to ``task``, in order."""
        return [m.spec for m in self.stored.values() if m.spec.task == task]


@dataclass
class Record:
    turn: int
    entries: list[RecordEntry] = field(default_factory=list)


class FakeJournal:
    """The turn journals a send's wait asks, as the operator (the test) writes them."""

    def __init__(self) -> None:
        self.records: list[Record] = []

    def drained(self, turn: int, message_id: str) -> None:
        """Turn ``turn`` gave the message to the model."""
        inbound = InboundMessage(id=message_id, sender="alice", content="hi")
        self.records.append(
            Record(turn, [DrainEntry(id=f"drain-{message_id}", messages=(inbound,))])
        )

    def _from(self, since: int | None) -> list[Record]:
        return [r for r in self.records if since is None or r.turn >= since]

    async def answered(
        self, task_id: str, message_id: str, *, turn: int, running: bool, since: int | None
    ) -> bool:
        return answered_as_of(self._from(since), message_id, turn=turn, running=running)

    async def fate(self, task_id: str, message_id: str, *, since: int | None) -> Fate:
        return fate_of(self._from(since), message_id)

    async def turn_stand(self, task_id: str) -> tuple[int, bool] | None:
        return max((r.turn for r in self.records), default=0), False


class FakeContents:
    """A task's history (the messages sent to it, none taken yet) and no artifacts."""

    def __init__(self, messages: FakeMessages) -> None:
        self.messages = messages

    async def history(self, task: ParticipantView) -> list[Message]:
        return [pending_message(task.name, task.context_id, m) for m in self.messages.to(task.name)]

    async def artifacts(self, task: ParticipantView) -> list[Artifact]:
        return []

    async def artifact_chunks(
        self, task_id: str, turns: Collection[int]
    ) -> dict[tuple[int, str], ArtifactChunk]:
        return {}


@dataclass
class Gateway:
    """The handler, and the fakes a test drives or reads."""

    handler: GatewayRequestHandler
    store: KubeTaskStore
    namespace: Namespace
    tasks: FakeTasks
    messages: FakeMessages
    journal: FakeJournal


@asynccontextmanager
async def gateway(
    monkeypatch: pytest.MonkeyPatch,
    *,
    waits: Waits = QUICK,
    limits: StreamLimits | None = None,
    queue_bound: int = 16,
    cancel_wait_seconds: float = 2.0,
    settings: GatewaySettings | None = None,
) -> AsyncIterator[Gateway]:
    """A handler over an empty namespace, listed."""

    async def nothing_there(*_: object) -> tuple[None, str]:
        return None, "0"  # a name the index has not heard of is not on the API server either

    monkeypatch.setattr(store_module, "read_for_watch", nothing_there)
    settings = settings or GatewaySettings(namespace=NS)
    feed = NamespaceFeed(NS, QuotaTally(settings), queue_bound=queue_bound, ready_seconds=1)
    feed.hear_task(Synced())
    feed.tally.messages.synced.set()
    namespace = Namespace(feed)
    # Never contacted: every part that would talk to the API is a fake below.
    api = client.ApiClient(configuration=client.Configuration(host="http://127.0.0.1:9"))
    try:
        store = KubeTaskStore(api, NS, feed=feed)
        tasks, messages, journal = FakeTasks(namespace), FakeMessages(namespace), FakeJournal()
        parents = ParentCheck(store.current, feed.index.get)
        store.writes = TaskWrites(tasks, messages, feed.tally, parents, store.current)  # type: ignore[arg-type]
        store.answers = journal  # type: ignore[assignment]
        store.contents = FakeContents(messages)  # type: ignore[assignment]
        handler = GatewayRequestHandler(
            store,
            TaskStreams(feed, api),
            GatewayMetrics(),
            waits=waits,
            limits=limits,
            cancel_wait_seconds=cancel_wait_seconds,
        )
        yield Gateway(handler, store, namespace, tasks, messages, journal)
    finally:
        feed.fanout.stop()
        await api.close()


async def collect(events: AsyncIterator[Any], *, seconds: float = 5.0) -> list[Any]:
    """Every event of a stream, to its end (bounded: a stream that does not end fails)."""
    out: list[Any] = []
    async with asyncio.timeout(seconds):
        async for event in events:
            out.append(event)
    return out


def texts(items: Sequence[Any]) -> list[str]:
    """What each status event of a stream says, as a client shows it."""
    return ["".join(p.text for p in e.status.message.parts) for e in items if hasattr(e, "status")]
