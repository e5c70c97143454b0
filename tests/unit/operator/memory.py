"""An in-memory host for the operator's act layer: the real worker, the real supervisor, the
real cache and decisions, with one task's objects kept in dicts instead of an API server.

Every read and write of an object is a round trip (it yields to the event loop once, as a call
to the API server does) and a named point on the :class:`Timeline`. A race test puts an event
(a participant's message) at a chosen point, by its number, so the race happens in the same
order every run: no delay is aimed at a moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubernetes_asyncio import client

from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.commands.setup import build_command_registry
from tiny_harness.core.history import ENTRIES, HistoryDelta, RecordEntry
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.settings import OperatorSettings
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.tools import TurnTools
from tiny_harness.core.turn import DrainEntry, OutcomeKind, TurnInput, TurnOutcome
from tiny_harness.kube.journal import TurnRecord, record_name
from tiny_harness.operator.cache import Cache
from tiny_harness.operator.feed import Feed
from tiny_harness.operator.lease import LeaseObserver
from tiny_harness.operator.metrics import OperatorMetrics
from tiny_harness.operator.ports import OperatorHost, RemoteAgents
from tiny_harness.operator.tool_offers import NoToolServers
from tiny_harness.operator.worker import TaskWorker

NS = "team-a"
NAME = "release"
UID = "uid-release"


class Timeline:
    """The points a turn passes, in order (each read or write, before and after, and the
    model call). :meth:`at` puts an event at point number ``n``: it happens as the turn
    reaches that point, before the turn goes on."""

    def __init__(self) -> None:
        self.passed: list[str] = []
        self._events: dict[int, Callable[[], None]] = {}
        self._reached: dict[str, asyncio.Event] = {}

    async def reached(self, name: str) -> None:
        """Wait until the turn has passed point ``name``."""
        await self._reached.setdefault(name, asyncio.Event()).wait()

    def at(self, n: int, event: Callable[[], None]) -> None:
        self._events[n] = event

    def unreached(self) -> list[Callable[[], None]]:
        """The events whose points were never reached; they will not happen now."""
        left = [self._events[n] for n in sorted(self._events)]
        self._events.clear()
        return left

    async def point(self, name: str) -> None:
        """Pass point ``name``: its event happens, then the others run once (a round trip)."""
        self.passed.append(name)
        self._reached.setdefault(name, asyncio.Event()).set()
        event = self._events.pop(len(self.passed) - 1, None)
        if event is not None:
            event()
        await asyncio.sleep(0)


class GatedLoop:
    """A turn that takes its messages, then waits on ``gate`` (its model call in flight), then
    answers. ``in_flight`` is set while it waits."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.gate = asyncio.Event()
        self.in_flight = asyncio.Event()
        self.turns = 0

    async def run_turn(
        self, host: OperatorHost, turn: TurnInput, tools: TurnTools | None = None
    ) -> TurnOutcome:
        self.turns += 1
        taken = await host.drain()
        await host.checkpoint(DrainEntry(id=f"drain-{turn.turn}", messages=tuple(taken)))
        self.in_flight.set()
        await self.timeline.point("model call")
        await self.gate.wait()
        history = (*turn.history, *(ChatMessage(role="user", content=m.content) for m in taken))
        outcome = TurnOutcome(
            kind=OutcomeKind.WAITING_FOR_MESSAGE,
            state=TaskState.INPUT_REQUIRED,
            sub_state=SubState.AWAITING_NEXT_MESSAGE,
            text="Shipped.",
            message_id=f"reply-{turn.turn}",
            history=(*history, ChatMessage(role="assistant", content="Shipped.")),
        )
        await host.end_turn(outcome)
        return outcome


class Objects:
    """The task's objects, as the API would hold them; every write goes into the cache's feed
    too, as kopf's watch would deliver it."""

    def __init__(self, feed: Feed, cache: Cache, timeline: Timeline) -> None:
        self.feed = feed
        self.cache = cache
        self.timeline = timeline
        #: Told of every message, as the operator's watch tells the task's worker.
        self.on_message: Callable[[], None] = lambda: None
        self.rv = itertools.count(100)
        self.task: dict[str, Any] = {
            "apiVersion": "tiny-harness.madarauchiha-314.github.io/v1alpha1",
            "kind": "HarnessTask",
            "metadata": {
                "name": NAME,
                "namespace": NS,
                "uid": UID,
                "resourceVersion": "1",
                "creationTimestamp": "2026-12-01T10:00:00Z",
            },
            "spec": {
                "goal": "Ship the release.",
                "participants": [
                    {"id": "alice", "role": "assignee"},
                    {"id": "bob", "role": "watcher"},
                ],
            },
            "status": {
                "state": "TASK_STATE_INPUT_REQUIRED",
                "subState": "awaiting-next-message",
                "lifecycle": "conversation",
                "turn": 0,
            },
        }
        self.records: dict[str, TurnRecord] = {}
        self.messages: list[dict[str, Any]] = []
        self.index_task()

    def index_task(self) -> None:
        """As the task handler does on the watch's event."""
        self.cache.saw(self.feed, "tasks", self.task)

    def send(self, message_id: str, sender: str, **spec: Any) -> None:
        """A participant's message, as the watch delivers it."""
        obj = {
            "metadata": {
                "name": f"m-{message_id}",
                "namespace": NS,
                "resourceVersion": str(next(self.rv)),
                "creationTimestamp": "2026-12-01T10:00:01Z",
                "ownerReferences": [{"kind": "HarnessTask", "name": NAME, "uid": UID}],
            },
            "spec": {"task": NAME, "messageId": message_id, "sender": sender, **spec},
        }
        self.messages.append(obj)
        self.cache.saw(self.feed, "messages", obj)
        self.on_message()

    # -- HarnessTasks -----------------------------------------------------------------------

    async def get(self, name: str) -> dict[str, Any]:
        await self.timeline.point("get task")
        return self.task

    async def patch_status(
        self, name: str, status: Mapping[str, Any], *, resource_version: str | None = None
    ) -> dict[str, Any]:
        await self.timeline.point("patch status")
        merged = {**self.task["status"], **status}
        self.task = {
            **self.task,
            "metadata": {**self.task["metadata"], "resourceVersion": str(next(self.rv))},
            "status": {k: v for k, v in merged.items() if v is not None},
        }
        self.index_task()
        await self.timeline.point("status patched")
        return self.task

    # -- TurnRecords ------------------------------------------------------------------------

    async def append(
        self,
        task: str,
        turn: int,
        entries: tuple[RecordEntry, ...],
        *,
        last: TurnRecord | None,
        owner: Mapping[str, Any],
        history: HistoryDelta | None = None,
        lease: int | None = None,
    ) -> TurnRecord:
        await self.timeline.point("append record")
        name = record_name(task, UID, turn)
        have = self.records.get(name)
        added = tuple(ENTRIES.validate_python(ENTRIES.dump_python(entries, mode="json")))
        record = TurnRecord(
            name=name,
            task=task,
            turn=turn,
            chunk=0,
            entries=(*(have.entries if have else ()), *added),
            history=history or (have.history if have else None),
            size=0,
            lease=lease,
            resource_version=str(next(self.rv)),
            owners=(UID,),
        )
        self.records[name] = record
        self.index_records()
        await self.timeline.point("record appended")
        return record

    def index_records(self) -> None:
        """As the turn record handler does on the watch's events."""
        for record in self.records.values():
            self.cache.saw(self.feed, "turns", _record_obj(record))

    async def for_task(self, task: Mapping[str, Any], turn: int | None = None) -> list[TurnRecord]:
        await self.timeline.point("list records")
        return [r for r in self.records.values() if turn is None or r.turn == turn]

    async def fence(self, record: TurnRecord, lease: int) -> TurnRecord:
        await self.timeline.point("fence record")
        fenced = replace(record, lease=lease, resource_version=str(next(self.rv)))
        self.records[record.name] = fenced
        self.index_records()
        return fenced


def _record_obj(record: TurnRecord) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "task": record.task,
        "turn": record.turn,
        "chunk": record.chunk,
        "entries": ENTRIES.dump_python(record.entries, mode="json"),
    }
    if record.history is not None:
        spec["history"] = record.history.model_dump(mode="json")
    if record.lease is not None:
        spec["lease"] = record.lease
    return {
        "metadata": {
            "name": record.name,
            "namespace": NS,
            "resourceVersion": record.resource_version,
            "ownerReferences": [{"kind": "HarnessTask", "name": NAME, "uid": UID}],
        },
        "spec": spec,
    }


class InMemoryRuntime:
    """The operator process, with nothing outside this one task."""

    def __init__(self, loop: GatedLoop, remotes: RemoteAgents | None = None) -> None:
        catalog = ModelCatalog(default="m", selectable=("m",))
        self.api = client.ApiClient()
        self.loop = loop
        self.catalog = catalog
        self.settings = OperatorSettings(lease_seconds=30)
        self.metrics = OperatorMetrics()
        self.feed = Feed()
        self.cache = Cache(self.feed)
        self.identity = "replica-a"
        self.leases = LeaseObserver(self.identity, self.settings.lease_seconds)
        self.commands = build_command_registry(catalog)
        self.remotes = remotes
        self.tool_servers = NoToolServers()
        self.events: list[tuple[str, str]] = []

    def owns(self, namespace: str, name: str) -> bool:
        return True

    def wake_later(self, namespace: str, name: str, delay: float) -> None:
        pass

    def written(self, namespace: str, name: str, resource_version: str) -> None:
        pass

    def written_record(self, namespace: str, record: TurnRecord) -> None:
        pass

    async def event(
        self, obj: dict[str, Any], reason: str, message: str, *, warning: bool = False
    ) -> None:
        self.events.append((reason, message))


@dataclass
class Harness:
    """One task's worker, its objects, its turn's timeline and the loop its turns run."""

    loop: GatedLoop
    objects: Objects
    worker: TaskWorker
    runtime: InMemoryRuntime
    timeline: Timeline


def build(remotes: RemoteAgents | None = None) -> Harness:
    timeline = Timeline()
    loop = GatedLoop(timeline)
    runtime = InMemoryRuntime(loop, remotes)
    objects = Objects(runtime.feed, runtime.cache, timeline)
    worker = TaskWorker(runtime, NS, NAME)  # type: ignore[arg-type]
    worker.tasks = objects  # type: ignore[assignment]
    worker.records = objects  # type: ignore[assignment]
    objects.on_message = worker.poke
    return Harness(loop, objects, worker, runtime, timeline)


@contextlib.asynccontextmanager
async def in_memory(remotes: RemoteAgents | None = None) -> AsyncIterator[Harness]:
    """A :class:`Harness` for the length of a test (its API client closed after)."""
    harness = build(remotes)
    try:
        yield harness
    finally:
        await harness.runtime.api.close()


def entries(objects: Objects) -> list[RecordEntry]:
    """Every entry of the task's journal, in order."""
    return [e for r in objects.records.values() for e in r.entries]
