"""Artifacts out, end to end: a scripted model publishes with ``publish_artifact`` on the real
operator; an a2a-sdk client is streamed the chunks as artifact updates and reads the artifacts
back with GetTask and ListTasks; ``kubectl harness`` lists them and writes one out; a publish
past a bound is refused to the model and stores nothing; and a turn killed right after its
publish was journaled publishes it once."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import StreamResponse

from tests.conftest import ModelServer, OperatorProcess, operator_config
from tests.eventually import eventually_async
from tests.files_support import publish
from tests.integration.gateway_support import JSONRPC, REST, Replicas, Users, task_id_of
from tests.integration.kubectl_support import Harness
from tests.integration.lifecycle_support import Tasks
from tests.integration.toolserver_support import tool_outputs
from tiny_harness.a2a_gateway.card import REST_PREFIX
from tiny_harness.a2a_gateway.rendering import version_of

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]
PARKED = "TASK_STATE_INPUT_REQUIRED"
#: A chunk's text: well within the scripted model's context window, so no compaction (whose
#: summary request would take a scripted answer) runs.
BIG = 8 * 1024
PNG = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + bytes(range(256)) * 4


def report_chunks() -> list[str]:
    return [f"[part {i}]" + chr(ord("a") + i) * BIG for i in range(3)]


async def test_a_published_artifact_is_streamed_returned_listed_and_written_by_kubectl(
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
    harness: Harness,
) -> None:
    chunks = report_chunks()
    await model_server.control.script(
        [
            publish(
                "report",
                [{"text": chunks[0]}, {"data": {"rows": 3}}],
                "c0",
                description="The quarterly report",
            ),
            publish("report", [{"text": chunks[1]}], "c1", append=True),
            publish("report", [{"text": chunks[2]}], "c2", append=True),
            publish(
                "chart",
                [
                    {
                        "file": {
                            "name": "chart.png",
                            "media_type": "image/png",
                            "bytes": base64.b64encode(PNG).decode(),
                        }
                    }
                ],
                "c3",
            ),
            {"type": "text", "text": "The report and its chart are published."},
        ]
    )
    operator()
    url = gateway().url
    alice = await users(url, "alice")

    events = await alice.send("Write the quarterly report.")
    task_id = task_id_of(events)

    # The stream: one artifact update per chunk, before the status update of the turn's end.
    updates = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert [(u.artifact.name, u.append, u.last_chunk) for u in updates] == [
        ("report", False, False),
        ("report", True, False),
        ("report", True, True),
        ("chart", False, True),
    ]
    assert updates[0].artifact.parts[0].text == chunks[0]
    assert updates[0].artifact.parts[1].data.struct_value["rows"] == 3
    assert [u.artifact.parts[0].text for u in updates[1:3]] == chunks[1:]
    assert updates[3].artifact.parts[0].raw == PNG
    assert {u.task_id for u in updates} == {task_id}
    last_update = max(i for i, e in enumerate(events) if e.HasField("artifact_update"))
    assert events[last_update + 1].status_update.status.message.parts[0].text == (
        "The report and its chart are published."
    )

    # GetTask: each artifact whole, its chunks joined in order.
    task = await alice.get(task_id)
    report, chart = task.artifacts
    assert (report.name, report.description) == ("report", "The quarterly report")
    assert [p.text for p in report.parts if p.text] == chunks
    assert (chart.parts[0].raw, chart.parts[0].filename, chart.parts[0].media_type) == (
        PNG,
        "chart.png",
        "image/png",
    )
    assert report.artifact_id != chart.artifact_id

    # ListTasks returns them only when asked to.
    assert [len(t.artifacts) for t in (await alice.list(include_artifacts=True)).tasks] == [2]
    assert [len(t.artifacts) for t in (await alice.list()).tasks] == [0]

    # kubectl harness: get lists them; artifact writes one out.
    got = await harness.run("get", task_id, "--history", "0")
    assert got.returncode == 0, got.stderr
    listed = got.stdout[got.stdout.index("Artifacts (2;") :].splitlines()
    assert listed[1].split()[:2] == ["NAME", "SIZE"]
    assert listed[2].split()[0] == "report"
    assert listed[2].split()[3] == "3"
    assert listed[3].split()[0] == "chart"
    assert listed[3].split()[3] == "1"
    written = await harness.run("artifact", task_id, "report")
    assert written.returncode == 0, written.stderr
    assert written.stdout == chunks[0] + '\n{\n  "rows": 3\n}\n' + chunks[1] + chunks[2]
    raw = await asyncio.to_thread(
        subprocess.run, harness.argv("artifact", task_id, "chart"), capture_output=True, timeout=120
    )
    assert raw.returncode == 0
    assert raw.stdout == PNG
    unknown = await harness.run("artifact", task_id, "summary")
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == (
        f"Error: task {task_id!r} has no artifact named 'summary'; its artifacts: report, chart "
        f"(kubectl harness get {task_id} lists them)"
    )


async def test_a_resumed_subscription_gets_each_artifact_it_missed_whole_and_once(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [
            {"type": "text", "text": "Hello."},
            publish("notes", [{"text": "one"}], "n0"),
            publish("notes", [{"text": " two"}], "n1", append=True),
            {"type": "text", "text": "Noted."},
        ]
    )
    operator()
    url = gateway().url
    alice = await users(url, "alice")
    first = await alice.send("Hi!")
    task_id = task_id_of(first)
    # The client read up to the first turn's end, then lost its stream; the second turn
    # published two chunks while it was away.
    seen_at = version_of(first[-1].status_update)
    assert seen_at is not None
    await alice.send("Take notes.", task_id=task_id)
    headers = {
        "X-Participant-Id": "alice",
        "Accept": "text/event-stream",
        "A2A-Version": "1.0",
        "Last-Event-ID": str(seen_at),
    }
    received: list[tuple[str | None, dict[str, Any]]] = []
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(60.0)) as http,
        http.stream(
            "GET", f"{url}{REST_PREFIX}/tasks/{task_id}:subscribe", headers=headers
        ) as response,
    ):
        assert response.status_code == 200, await response.aread()
        event_id: str | None = None
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data = json.loads(line[5:])
                received.append((event_id, data))
                event_id = None
                update = data.get("statusUpdate") or {}
                if update.get("status", {}).get("state") == PARKED:
                    break
    artifacts = [(i, r["artifactUpdate"]) for i, r in received if "artifactUpdate" in r]
    assert len(artifacts) == 1  # the artifact, whole, once: not its two chunks
    ((event_id, update),) = artifacts
    assert update["artifact"]["name"] == "notes"
    assert [p["text"] for p in update["artifact"]["parts"]] == ["one", " two"]
    assert not update.get("append")
    assert update.get("lastChunk") is True
    # It has no id of its own: the status after it carries the change's, to resume from.
    assert event_id is None
    assert received[-1][0] is not None
    assert "statusUpdate" in received[-1][1]


@pytest.fixture
def wide_operator(
    kubeconfig: Path, namespace: str, tmp_path: Path, model_server: ModelServer
) -> Iterator[OperatorProcess]:
    """An operator whose model has a window a 300 KiB tool call fits in without compaction
    (whose summary request would take a scripted answer)."""
    config = operator_config(tmp_path / "wide.toml", model_server.url)
    text = config.read_text().replace(
        'model = "scripted-model"\n', 'model = "scripted-model"\ncontext_window_tokens = 1000000\n'
    )
    config.write_text(text)
    process = OperatorProcess(kubeconfig, namespace, tmp_path, config).start()
    yield process
    process.stop()


async def test_a_publish_past_a_bound_is_refused_to_the_model_naming_it_and_stores_nothing(
    tasks: Tasks, model_server: ModelServer, wide_operator: OperatorProcess
) -> None:
    await model_server.control.script(
        [
            publish("huge", [{"text": "x" * (300 * 1024)}], "h0"),
            {"type": "text", "text": "It was too large."},
        ]
    )
    await tasks.create("big")
    await tasks.wait("big", PARKED)
    await tasks.send("big", "Publish it all.")
    status = await tasks.wait("big", PARKED, turn=1)

    assert status["message"] == "It was too large."
    assert status.get("artifacts", []) == []
    requests = await model_server.control.requests()
    assert len(requests) == 2  # the refusal is the tool's result: no retry, no extra call
    (refusal,) = tool_outputs(requests[1])
    assert refusal == (
        "Error: one publish carries 300 KiB, which is too large for this installation (no file "
        "store is configured): the limit is 256 KiB per publish (ARTIFACT_CHUNK_BYTES); publish "
        "the rest in more calls with append: true. Nothing was published"
    )
    records = await tasks.records.for_task(await tasks.tasks.get("big"))
    assert not any(getattr(e, "artifact", None) for r in records for e in r.entries)


async def test_a_turn_killed_right_after_its_publish_was_journaled_publishes_it_once(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [publish("log", [{"text": "written once"}], "k0"), {"type": "text", "text": "Logged."}]
    )
    # The turn's first write holds the drain and the model's call; its second, the publish.
    first = operator(env={"TINY_HARNESS_FAILPOINT": "kill-after-write:2@killed"})
    await tasks.create("killed")
    await tasks.wait("killed", PARKED)
    await tasks.send("killed", "Log it.")
    assert first.proc is not None
    assert await asyncio.to_thread(first.proc.wait, 60) == -9  # SIGKILL, at the failpoint
    records = await tasks.records.for_task(await tasks.tasks.get("killed"))
    published = [e for r in records for e in r.entries if getattr(e, "artifact", None)]
    assert len(published) == 1  # journaled before the kill

    operator(identity="operator-b")
    status = await tasks.wait("killed", PARKED, turn=1, within=60)

    assert status["message"] == "Logged."
    (row,) = status["artifacts"]
    assert (row["name"], len(row["chunks"]), row["size"]) == ("log", 1, len("written once"))
    records = await tasks.records.for_task(await tasks.tasks.get("killed"))
    assert sum(1 for r in records for e in r.entries if getattr(e, "artifact", None)) == 1
    assert len(await model_server.control.requests()) == 2  # the publish's call was not asked again


@pytest.mark.parametrize(("transport", "protocol"), [(JSONRPC, "0.3"), (REST, "1.0")])
async def test_a_live_subscriber_is_streamed_the_artifact_and_any_protocol_reads_it(
    transport: str,
    protocol: str,
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
) -> None:
    await model_server.control.script(
        [
            {"type": "text", "text": "Hello."},
            publish("summary", [{"text": "In short: "}, {"data": {"ok": True}}], "s0"),
            {"type": "text", "text": "Summarised."},
        ]
    )
    operator()
    url = gateway().url
    alice = await users(url, "alice")
    task_id = task_id_of(await alice.send("Hi!"))
    watcher = await users(url, "alice", transport=transport, protocol=protocol)
    seen: list[StreamResponse] = []

    async def follow() -> None:
        async for event in watcher.subscribe(task_id):
            seen.append(event)

    following = asyncio.create_task(follow())
    await eventually_async(lambda: seen, within=30, what="the subscription's first event")
    await alice.send("Summarise it.", task_id=task_id)
    await alice.complete(task_id)
    await asyncio.wait_for(following, timeout=30)

    kinds = [e.WhichOneof("payload") for e in seen]
    assert kinds.count("artifact_update") == 1
    at = kinds.index("artifact_update")
    update = seen[at].artifact_update
    assert (update.artifact.name, update.append, update.last_chunk) == ("summary", False, True)
    assert update.artifact.parts[0].text == "In short: "
    assert update.artifact.parts[1].data.struct_value["ok"] is True
    assert seen[at + 1].status_update.status.message.parts[0].text == "Summarised."
    (artifact,) = (await watcher.get(task_id)).artifacts
    assert artifact.name == "summary"
    assert artifact.parts[0].text == "In short: "
    assert artifact.parts[1].data.struct_value["ok"] is True
