"""The reconciler and the turn supervisor against an in-memory host: the real worker, the real
supervisor, the real cache and decisions, with the task's objects kept in dicts instead of an
API server. Each race is driven by the order of events (a turn that waits on a gate, a message
put in the cache at a chosen point of the turn), so it happens the same way every run.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any

import pytest
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
from tiny_harness.operator.cache import Cache, Feed, pack
from tiny_harness.operator.lease import LeaseObserver
from tiny_harness.operator.metrics import OperatorMetrics
from tiny_harness.operator.ports import OperatorHost
from tiny_harness.operator.tool_offers import NoToolServers
from tiny_harness.operator.worker import TaskWorker

NS = "team-a"
NAME = "release"
UID = "uid-release"


class GatedLoop:
    """A turn that takes its messages, then waits on ``gate`` (its model call in flight), then
    answers. ``in_flight`` is set while it waits."""

    def __init__(self) -> None:
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
    """The task's objects, as the API would hold them; every write goes into the cache's index
    too, as kopf's watch would deliver it."""

    def __init__(self, feed: Feed, cache: Cache) -> None:
        self.feed = feed
        self.cache = cache
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
        """As the task index function does on the watch's event."""
        self.feed.indices["tasks"][("task", NS, NAME)] = [pack(self.task)]
        self.cache.indexed_task(NS, NAME, self.task["metadata"]["resourceVersion"])

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
        self.feed.indices["messages"][(NS, NAME)] = [pack(m) for m in self.messages]

    # -- HarnessTasks -----------------------------------------------------------------------

    async def get(self, name: str) -> dict[str, Any]:
        return self.task

    async def patch_status(
        self, name: str, status: Mapping[str, Any], *, resource_version: str | None = None
    ) -> dict[str, Any]:
        merged = {**self.task["status"], **status}
        self.task = {
            **self.task,
            "metadata": {**self.task["metadata"], "resourceVersion": str(next(self.rv))},
            "status": {k: v for k, v in merged.items() if v is not None},
        }
        self.index_task()
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
        return record

    def index_records(self) -> None:
        """As the turn index function does on the watch's events."""
        self.feed.indices["turns"][(NS, NAME)] = [
            pack(_record_obj(r)) for r in self.records.values()
        ]
        for record in self.records.values():
            self.cache.indexed_record(NS, record)

    async def for_task(self, task: Mapping[str, Any], turn: int | None = None) -> list[TurnRecord]:
        return [r for r in self.records.values() if turn is None or r.turn == turn]

    async def fence(self, record: TurnRecord, lease: int) -> TurnRecord:
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
            "resourceVersion": record.resource_version,
            "ownerReferences": [{"kind": "HarnessTask", "name": NAME, "uid": UID}],
        },
        "spec": spec,
    }


class InMemoryRuntime:
    """The operator process, with nothing outside this one task."""

    def __init__(self, loop: GatedLoop) -> None:
        catalog = ModelCatalog(default="m", selectable=("m",))
        self.api = client.ApiClient()
        self.loop = loop
        self.catalog = catalog
        self.settings = OperatorSettings(lease_seconds=30)
        self.metrics = OperatorMetrics()
        self.feed = Feed()
        self.feed.indices = {"tasks": {}, "messages": {}, "turns": {}}
        self.cache = Cache(self.feed)
        self.identity = "replica-a"
        self.leases = LeaseObserver(self.identity, self.settings.lease_seconds)
        self.commands = build_command_registry(catalog)
        self.remotes = None
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


Harness = tuple[GatedLoop, Objects, TaskWorker]


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    loop = GatedLoop()
    runtime = InMemoryRuntime(loop)
    objects = Objects(runtime.feed, runtime.cache)
    worker = TaskWorker(runtime, NS, NAME)  # type: ignore[arg-type]
    worker.tasks = objects  # type: ignore[assignment]
    worker.records = objects  # type: ignore[assignment]
    yield loop, objects, worker
    await runtime.api.close()


def said(objects: Objects) -> list[str]:
    return [
        getattr(e, "text", "") or ",".join(m.content for m in getattr(e, "messages", ()))
        for r in objects.records.values()
        for e in r.entries
    ]


async def test_a_cancel_while_the_model_call_is_in_flight_cuts_the_turn_and_cancels(
    harness: Harness,
) -> None:
    loop, objects, worker = harness
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    working = asyncio.create_task(worker.run())
    await asyncio.wait_for(loop.in_flight.wait(), 5)

    objects.send("c1", "alice", control="cancel")
    worker.poke()
    await asyncio.wait_for(working, 5)

    status = objects.task["status"]
    assert (status["state"], status["message"]) == ("TASK_STATE_CANCELED", "cancelled by alice")
    assert "runner" not in status
    assert loop.turns == 1  # cut, not resumed: the gate was never opened
    record = objects.records[record_name(NAME, UID, 1)]
    assert record.history is not None  # the cut turn was closed from its journal


async def test_a_watchers_cancel_does_not_cut_the_turn_and_is_refused_after_it(
    harness: Harness,
) -> None:
    loop, objects, worker = harness
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    working = asyncio.create_task(worker.run())
    await asyncio.wait_for(loop.in_flight.wait(), 5)

    objects.send("c1", "bob", control="cancel")
    worker.poke()
    await asyncio.sleep(0)  # the watcher looks, and the turn goes on
    loop.gate.set()
    await asyncio.wait_for(working, 5)

    status = objects.task["status"]
    assert status["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert loop.turns == 1
    assert "Shipped." in said(objects) or status.get("message")
    refusals = [e for r in objects.records.values() for e in r.entries if e.id == "refused-c1"]
    assert [getattr(e, "text", "") for e in refusals] == [
        "refused: bob is a watcher and may not cancel the task"
    ]


async def test_a_cancel_after_the_turn_has_ended_is_applied_by_the_next_pass(
    harness: Harness,
) -> None:
    loop, objects, worker = harness
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    loop.gate.set()
    real_end = loop.run_turn

    async def then_cancel(
        host: OperatorHost, turn: TurnInput, tools: TurnTools | None = None
    ) -> TurnOutcome:
        outcome = await real_end(host, turn, tools)
        objects.send("c1", "alice", control="cancel")  # lands once the turn has closed
        worker.poke()
        return outcome

    loop.run_turn = then_cancel  # type: ignore[method-assign]
    await asyncio.wait_for(worker.run(), 5)

    status = objects.task["status"]
    assert (status["state"], status["message"]) == ("TASK_STATE_CANCELED", "cancelled by alice")
    record = objects.records[record_name(NAME, UID, 1)]
    reply = [m for m in (record.history.messages if record.history else ()) if m.role]
    assert reply, "the turn's answer is kept in its journal"
    assert loop.turns == 1


async def test_a_command_during_the_turn_runs_once_beside_it_and_not_again_after(
    harness: Harness,
) -> None:
    loop, objects, worker = harness
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    working = asyncio.create_task(worker.run())
    await asyncio.wait_for(loop.in_flight.wait(), 5)

    objects.send("s1", "bob", parts=[{"text": "/status"}])
    worker.poke()
    for _ in range(1000):  # yield until the watcher has run it, the model call still in flight
        if any(e.id == "cmd-s1" for r in objects.records.values() for e in r.entries):
            break
        await asyncio.sleep(0)
    replies_mid_turn = [e for r in objects.records.values() for e in r.entries if "s1" in e.id]
    loop.gate.set()
    await asyncio.wait_for(working, 5)

    entries = [e for r in objects.records.values() for e in r.entries]
    assert [e.id for e in replies_mid_turn] == ["ack-s1", "cmd-s1"]
    assert [e.id for e in entries if "s1" in e.id] == ["ack-s1", "cmd-s1"]
    assert loop.turns == 1
    assert objects.task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_a_completion_that_will_be_refused_leaves_the_turn_to_answer_first(
    harness: Harness,
) -> None:
    """Judged before it cuts: a sub-task is still open, so alice's complete would be refused;
    the turn's answer is kept, and the refusal comes after it."""
    loop, objects, worker = harness
    child = {
        "metadata": {
            "name": "release-docs",
            "namespace": NS,
            "uid": "uid-docs",
            "resourceVersion": "5",
            "ownerReferences": [{"kind": "HarnessTask", "name": NAME, "uid": UID}],
        },
        "spec": {"goal": "Write the docs.", "parent": {"taskId": NAME}},
        "status": {"state": "TASK_STATE_WORKING", "turn": 1},
    }
    objects.feed.indices["tasks"][("parent", NS, NAME)] = [pack(child)]
    objects.send("m1", "alice", parts=[{"text": "Ship it."}])
    working = asyncio.create_task(worker.run())
    await asyncio.wait_for(loop.in_flight.wait(), 5)

    objects.send("k1", "alice", control="complete")
    worker.poke()
    for _ in range(200):  # the watcher looks, and leaves the turn alone
        await asyncio.sleep(0)
    assert not working.done()
    assert loop.turns == 1
    loop.gate.set()
    await asyncio.wait_for(working, 5)

    record = objects.records[record_name(NAME, UID, 1)]
    assert record.history is not None
    assert [m.content for m in record.history.messages][-1] == "Shipped."
    status = objects.task["status"]
    assert status["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert status["message"].startswith(
        "completion requested by alice refused: the task cannot complete while sub-task(s) "
        "are unresolved: release-docs"
    )
