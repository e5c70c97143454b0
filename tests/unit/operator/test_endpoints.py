"""The one loop behind agents and tool servers (operator/endpoints.py): attempts per spec,
bounded and numbered in the Ready message, a new spec in place of the attempt in flight, and
the status written only when it says something new, on the version read (a conflict reads the
object again). A kind of its own drives the loop here; the status goes to a stand-in API
server on loopback (tests/unit/kube/fake_api.py)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from tests.eventually import eventually_async
from tests.unit.kube.fake_api import FakeCollection, serving
from tiny_harness.core.backoff import Backoff
from tiny_harness.core.tool_server import ToolServerStatus
from tiny_harness.kube.client import Obj
from tiny_harness.operator.endpoints import (
    Declared,
    Endpoints,
    NotReadyError,
    kept_transition,
    ready_condition,
    unchanged,
)

NS = "work"
PLURAL = "harnesstoolservers"


class Probe(Endpoints[Declared, ToolServerStatus]):
    """A kind whose attempts fail, pass or wait as the test says."""

    plural = PLURAL
    max_attempts = 3
    gave_up = "tried again when its spec changes"
    times = frozenset({"discovery_time"})

    def __init__(self, api: Any = None) -> None:
        super().__init__(api, [NS])
        self.outcomes: list[NotReadyError | None] = []
        self.gate: asyncio.Event | None = None
        self.started: list[int] = []
        self.finished: list[int] = []
        self.messages: list[str] = []
        self.dropped_keys: list[tuple[str, str]] = []

    def declared(self, namespace: str, name: str, obj: Obj) -> Declared:
        return Declared(namespace, name, obj)

    def parse_status(self, obj: Obj) -> ToolServerStatus:
        return ToolServerStatus.model_validate(obj.get("status") or {})

    def backoff(self) -> Backoff:
        return Backoff(first=0.0, cap=0.0, jitter=0.0)

    async def resolve(self, entry: Declared) -> None:
        self.started.append(entry.generation)
        if self.gate is not None:
            await self.gate.wait()
        self.finished.append(entry.generation)
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome

    async def not_ready(self, entry: Declared, error: NotReadyError, message: str) -> None:
        self.messages.append(message)

    async def dropped(self, entry: Declared) -> None:
        self.dropped_keys.append(entry.key)


def obj(generation: int = 1, status: dict[str, Any] | None = None) -> Obj:
    return {
        "metadata": {"name": "search", "namespace": NS, "generation": generation},
        "spec": {"url": "http://x/mcp"},
        "status": status or {},
    }


async def settle(probe: Probe) -> None:
    """Until no attempt is in flight or waiting."""
    await asyncio.sleep(0)
    await eventually_async(
        lambda: not any(e.resolving or e.retry is not None for e in probe.entries.values()),
        within=5,
        what="no attempt in flight or waiting",
        interval=0.01,
    )


def down() -> NotReadyError:
    return NotReadyError("Unreachable", "connection refused")


# -- attempts -------------------------------------------------------------------------------------


async def test_a_failing_endpoint_is_tried_a_bounded_number_of_times_each_one_numbered() -> None:
    probe = Probe()
    probe.outcomes = [down(), down(), down(), down()]

    await probe.seen(obj())
    await settle(probe)
    await asyncio.sleep(0.05)  # and no more after them

    assert probe.messages == [
        "connection refused (attempt 1 of 3; trying again in 0s)",
        "connection refused (attempt 2 of 3; trying again in 0s)",
        "connection refused (attempt 3 of 3; tried again when its spec changes)",
    ]
    assert probe.entries[(NS, "search")].retry is None


async def test_a_lasting_failure_is_not_tried_again() -> None:
    probe = Probe()
    probe.outcomes = [NotReadyError("SecretNotAllowed", "not allowed", lasting=True)]

    await probe.seen(obj())
    await settle(probe)

    assert probe.messages == ["not allowed (attempt 1 of 3; tried again when its spec changes)"]
    assert probe.started == [1]


async def test_a_new_spec_takes_the_place_of_the_attempt_in_flight_and_starts_afresh() -> None:
    probe = Probe()
    probe.gate = asyncio.Event()
    await probe.seen(obj(generation=1))
    await asyncio.sleep(0.01)

    await probe.seen(obj(generation=2))
    await asyncio.sleep(0.01)
    probe.gate.set()
    await settle(probe)

    assert probe.started == [1, 2]
    assert probe.finished == [2]  # the first spec's attempt never finished: it was cancelled
    assert probe.entries[(NS, "search")].failures == 0


async def test_an_event_of_the_same_spec_starts_no_attempt() -> None:
    probe = Probe()
    await probe.seen(obj())
    await settle(probe)

    await probe.seen(obj(status={"toolCount": 1}))  # a status write: ours or another's
    await settle(probe)

    assert probe.started == [1]


async def test_a_deleted_endpoint_is_tried_no_more_and_released() -> None:
    probe = Probe()
    probe.gate = asyncio.Event()
    await probe.seen(obj())
    await asyncio.sleep(0.01)

    await probe.gone((NS, "search"))
    probe.gate.set()
    await asyncio.sleep(0.05)

    assert probe.entries == {}
    assert probe.dropped_keys == [(NS, "search")]
    assert probe.finished == []


# -- the status -----------------------------------------------------------------------------------


def status(
    ready: Literal["True", "False"], reason: str, message: str, **fields: Any
) -> ToolServerStatus:
    return ToolServerStatus(
        conditions=(ready_condition(ready, reason, message, 1),), observed_generation=1, **fields
    )


def test_a_status_that_differs_only_in_its_times_is_unchanged() -> None:
    before = status("True", "Discovered", "2 tool(s) offered", discovery_time="2026-01-01T00:00Z")
    after = status("True", "Discovered", "2 tool(s) offered", discovery_time="2026-06-01T00:00Z")
    after = after.model_copy(
        update={
            "conditions": (
                after.conditions[0].model_copy(update={"last_transition_time": "2026-06-01"}),
            )
        }
    )

    assert unchanged(before, after, {"discovery_time"})
    assert not unchanged(before, status("False", "Unreachable", "gone"), {"discovery_time"})


def test_a_condition_keeps_the_time_it_turned_while_its_status_stays() -> None:
    old = status("False", "Unreachable", "gone").model_copy(
        update={
            "conditions": (
                ready_condition("False", "Unreachable", "gone", 1).model_copy(
                    update={"last_transition_time": "2026-01-01T00:00:00Z"}
                ),
            )
        }
    )

    still_down = kept_transition(old, status("False", "Timeout", "slow"))
    back_up = kept_transition(old, status("True", "Discovered", "1 tool(s) offered"))

    assert still_down.conditions[0].last_transition_time == "2026-01-01T00:00:00Z"
    assert back_up.conditions[0].last_transition_time != "2026-01-01T00:00:00Z"


async def test_the_status_is_written_on_the_version_read_and_again_after_a_conflict() -> None:
    collection = FakeCollection(NS, PLURAL)
    seen = collection.put("search", spec={"url": "http://x/mcp"})
    collection.put("search", spec={"url": "http://x/mcp"})  # another writer, unseen so far
    async with serving(collection) as api:
        probe = Probe(api)
        entry = probe.declared(NS, "search", seen)

        await probe.write_status(entry, status("True", "Discovered", "1 tool(s) offered"))

    versions = [body["metadata"]["resourceVersion"] for _, body in collection.patches]
    assert versions == ["101", "102"]  # refused on the stale version, then on the fresh one
    written = collection.objects["search"]
    assert written["status"]["conditions"][0]["reason"] == "Discovered"
    assert entry.obj == written


async def test_a_status_that_already_says_it_is_not_written() -> None:
    collection = FakeCollection(NS, PLURAL)
    wanted = status("False", "Unreachable", "gone")
    stored = collection.put("search", status=wanted.model_dump(mode="json", by_alias=True))
    async with serving(collection) as api:
        probe = Probe(api)

        await probe.write_status(probe.declared(NS, "search", stored), wanted)

    assert collection.patches == []
