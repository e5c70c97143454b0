"""Streams at team scale, against the real API server and gateway processes: every event has
its id, a client that resumes (``Last-Event-ID``) on another replica after its replica was
stopped is sent exactly what it missed and then the live changes, a participant's open streams
are bounded, and a first message never shows a parked state its task did not choose.

The task's changes are written here as the operator writes them (status PATCHes), so the
order of every change, of the replica's stop and of the resume is the test's own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.conftest import ModelServer, OperatorProcess
from tests.integration.gateway_support import (
    TRANSPORTS,
    Replicas,
    Users,
    agent_says,
    alices_task,
    states,
)
from tiny_harness.a2a_gateway.card import REST_PREFIX
from tiny_harness.core.extensions import TASK_EXT_KEY
from tiny_harness.kube.client import HarnessTasks

pytestmark = pytest.mark.controlplane

ALICE = {"X-Participant-Id": "alice"}


@dataclass(frozen=True)
class Sse:
    """One SSE event as the wire carries it."""

    id: str | None
    data: dict[str, Any]

    @property
    def text(self) -> str:
        """The status message's text of a status update (or of a task)."""
        item = self.data.get("statusUpdate") or self.data.get("task") or {}
        parts = ((item.get("status") or {}).get("message") or {}).get("parts") or []
        return "".join(p.get("text", "") for p in parts)

    @property
    def version(self) -> str | None:
        item = self.data.get("statusUpdate") or self.data.get("task") or {}
        return ((item.get("metadata") or {}).get(TASK_EXT_KEY) or {}).get("version")


class SseReader:
    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()

    async def next(self) -> Sse:
        event_id: str | None = None
        data: list[str] = []
        async for line in self._lines:
            if not line:
                if data:
                    return Sse(event_id, json.loads("\n".join(data)))
                continue
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        raise AssertionError("the stream ended")


@asynccontextmanager
async def subscribe(
    url: str, task: str, *, last_event_id: str | None = None, who: dict[str, str] = ALICE
) -> AsyncIterator[SseReader]:
    headers = {**who, "Accept": "text/event-stream", "A2A-Version": "1.0"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http,
        http.stream("GET", f"{url}{REST_PREFIX}/tasks/{task}:subscribe", headers=headers) as resp,
    ):
        assert resp.status_code == 200, await resp.aread()
        yield SseReader(resp)


async def test_every_event_carries_its_version_as_its_id(
    api: Any, namespace: str, gateway: Replicas
) -> None:
    replica = gateway()
    tasks = await alices_task(api, namespace, "ids")
    async with subscribe(replica.url, "ids") as stream:
        first = await stream.next()
        await agent_says(tasks, "ids", "two")
        second = await stream.next()
    assert (first.text, second.text) == ("one", "two")
    assert first.id == first.version
    assert second.id == second.version
    assert first.id is not None
    assert second.id is not None
    assert int(second.id) > int(first.id)


async def test_a_client_that_resumes_on_another_replica_loses_nothing_and_sees_nothing_twice(
    api: Any, namespace: str, gateway: Replicas
) -> None:
    first_replica, second_replica = gateway(), gateway(stream_queue_events=64)
    tasks = await alices_task(api, namespace, "talk")
    seen: list[Sse] = []
    async with subscribe(first_replica.url, "talk") as stream:
        seen.append(await stream.next())  # the task: "one"
        await agent_says(tasks, "talk", "two")
        seen.append(await stream.next())
        # The replica goes away (a pod replaced) while the agent goes on talking.
        first_replica.stop()
    await agent_says(tasks, "talk", "three")
    # A lease renewal that changes nothing a participant sees is no event to miss.
    await tasks.patch_status("talk", {"runner": None})
    await agent_says(tasks, "talk", "four")
    last = seen[-1].id
    assert last is not None
    async with subscribe(second_replica.url, "talk", last_event_id=last) as resumed:
        seen.append(await resumed.next())
        seen.append(await resumed.next())
        await agent_says(tasks, "talk", "five")
        seen.append(await resumed.next())

    assert [e.text for e in seen] == ["one", "two", "three", "four", "five"]
    ids = [int(e.id or 0) for e in seen]
    assert ids == sorted(set(ids)), "every event once, in order"


async def test_a_resume_with_nothing_missed_shows_the_task_as_the_client_has_it(
    api: Any, namespace: str, gateway: Replicas
) -> None:
    replica = gateway()
    tasks = await alices_task(api, namespace, "quiet")
    async with subscribe(replica.url, "quiet") as stream:
        first = await stream.next()
    assert first.id is not None
    async with subscribe(replica.url, "quiet", last_event_id=first.id) as resumed:
        again = await resumed.next()
        await agent_says(tasks, "quiet", "later")
        live = await resumed.next()
    assert (again.id, again.text) == (first.id, "one")
    assert live.text == "later"


async def test_a_participant_s_streams_are_bounded_and_others_are_not(
    api: Any, namespace: str, gateway: Replicas
) -> None:
    replica = gateway(max_streams_per_participant=1)
    await alices_task(api, namespace, "busy")
    await HarnessTasks(api, namespace).patch_status("busy", {"state": "TASK_STATE_WORKING"})
    async with subscribe(replica.url, "busy") as stream:
        await stream.next()
        async with httpx.AsyncClient(timeout=30) as http:
            refused = await http.get(
                f"{replica.url}{REST_PREFIX}/tasks/busy:subscribe",
                headers={**ALICE, "A2A-Version": "1.0"},
            )
        assert refused.status_code == 429
        assert "alice has 1 streams open" in refused.text
    # Closed, it frees its place.
    async with subscribe(replica.url, "busy") as again:
        assert (await again.next()).text == "one"


async def test_a_malformed_last_event_id_is_refused_naming_the_header(
    api: Any, namespace: str, gateway: Replicas
) -> None:
    replica = gateway()
    await alices_task(api, namespace, "bad-id")
    async with httpx.AsyncClient(timeout=30) as http:
        refused = await http.get(
            f"{replica.url}{REST_PREFIX}/tasks/bad-id:subscribe",
            headers={**ALICE, "A2A-Version": "1.0", "Last-Event-ID": "yesterday"},
        )
    assert refused.status_code == 400
    assert "Last-Event-ID" in refused.text


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_first_message_streams_submitted_then_working_then_its_answer(
    transport: str,
    operator: Callable[..., OperatorProcess],
    model_server: ModelServer,
    gateway: Replicas,
    users: Users,
) -> None:
    """The task is written before its first message, yet its stream never shows the empty
    conversation parked: SUBMITTED, then WORKING, then the answer."""
    await model_server.control.script([{"type": "text", "text": "Hello Alice."}])
    operator()
    alice = await users(gateway().url, "alice", transport=transport)
    seen = states(await alice.send("Hello there."))
    assert seen[0] == "TASK_STATE_SUBMITTED"
    working = seen.index("TASK_STATE_WORKING")
    assert "TASK_STATE_INPUT_REQUIRED" not in seen[:working], seen
    assert seen[-1] == "TASK_STATE_INPUT_REQUIRED"
