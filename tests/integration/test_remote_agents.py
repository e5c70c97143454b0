"""Sub-tasks on remote A2A agents, end to end: the harness under test (this test's namespace,
its operator) delegates to a second tiny-harness (another namespace of the same control plane,
with its own operator and gateway) and to a foreign agent built with the a2a-sdk's own server,
both declared as ``HarnessAgent`` objects. Real control plane, real processes, scripted model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.integration.lifecycle_support import Tasks
from tests.integration.remote_support import (
    CALLER,
    ForeignAgent,
    RemoteHarness,
    agent_manifest,
    ready_condition,
    wait_ready,
)
from tiny_harness.core.extensions import TASK_EXT_URI

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


@pytest.fixture
def remote(kubeconfig: Path, tmp_path: Path, model_server: ModelServer) -> Iterator[RemoteHarness]:
    harness = RemoteHarness(kubeconfig, tmp_path / "remote", model_server.url)
    yield harness
    harness.stop()


@pytest.fixture
async def foreign() -> AsyncIterator[ForeignAgent]:
    agent = ForeignAgent()
    async with agent.running():
        yield agent


def declare(kubectl: Kubectl, name: str, card_url: str, **spec: Any) -> dict[str, Any]:
    applied = kubectl.apply(agent_manifest(name, card_url, **spec))
    assert applied.returncode == 0, applied.stderr
    return wait_ready(lambda: kubectl.get_json("harnessagent", name))


def spawn_on(agent: str, goal: str, call_id: str = "call-spawn") -> dict[str, Any]:
    return {
        "type": "tool_calls",
        "calls": [
            {
                "id": call_id,
                "name": "spawn_subtask",
                "arguments": {"goal": goal, "agent": agent},
            }
        ],
    }


def inputs(request: Any) -> str:
    return json.dumps((request.body or {}).get("input", []))


async def the_child(tasks: Tasks, parent: str) -> dict[str, Any]:
    for _ in range(400):
        children = await tasks.children(parent)
        if children:
            return children[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"{parent} spawned no sub-task")


async def test_an_agents_card_is_read_into_its_status_and_the_model_is_offered_it(
    kubectl: Kubectl,
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    remote: RemoteHarness,
) -> None:
    operator()
    agent = declare(kubectl, "market", remote.card_url, description="Knows the market.", skills=[])

    status = agent["status"]
    assert status["name"] == "tiny-harness"
    assert status["url"] == f"{remote.gateway.url}/"
    assert (status["protocolBinding"], status["protocolVersion"]) == ("JSONRPC", "1.0")
    assert status["streaming"] is True
    assert TASK_EXT_URI in status["extensions"]
    assert ready_condition(agent)["reason"] == "CardRead"
    listed = kubectl.run("get", "harnessagents").stdout.split("\n")
    assert listed[0].split()[:3] == ["NAME", "READY", "AGENT"]
    assert listed[1].split()[:3] == ["market", "True", "tiny-harness"]

    await model_server.control.script([{"type": "text", "text": "Noted."}])
    await tasks.create("chat")
    await tasks.send("chat", "What can you hand work to?")
    await tasks.wait("chat", "TASK_STATE_INPUT_REQUIRED", turn=1)
    [request] = await model_server.control.requests()
    [spawn] = [t for t in request.body["tools"] if t["name"] == "spawn_subtask"]
    assert spawn["parameters"]["properties"]["agent"]["enum"] == ["market"]
    assert "- market (tiny-harness): An agent harness" in spawn["description"]
    assert "Knows the market." in spawn["description"]


async def test_a_parent_delegates_to_a_remote_harness_and_completes_after_reading_its_result(
    kubectl: Kubectl,
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    remote: RemoteHarness,
) -> None:
    await model_server.control.script(
        [
            spawn_on("market", "Summarise the market"),
            {"type": "text", "text": "Delegated.", "when": "Spawned sub-task"},
            {"type": "text", "text": "The market grew 5%.", "when": "Goal: Summarise the market"},
            {"type": "text", "text": "Read it: 5% growth.", "when": "The market grew 5%"},
        ]
    )
    operator()
    declare(kubectl, "market", remote.card_url)
    await tasks.create("research")
    await tasks.send("research", "Research the market.")

    child = await the_child(tasks, "research")
    name = child["metadata"]["name"]
    done = await tasks.wait(name, "TASK_STATE_COMPLETED", within=60)
    parent = await tasks.wait("research", "TASK_STATE_INPUT_REQUIRED", turn=2, within=60)

    assert child["spec"]["agent"] == "market"
    assert done["message"] == "The market grew 5%."
    [row] = parent["subTasks"]
    assert (row["taskId"], row["agent"], row["state"]) == (name, "market", "TASK_STATE_COMPLETED")
    assert parent["message"] == "Read it: 5% growth."
    said = [(m.role, m.text) for m in await tasks.transcript(name)]
    assert said == [("user", "Summarise the market"), ("agent", "The market grew 5%.")]
    # On the remote harness: one task, delegated by this one, and one message sent to it.
    [there] = remote.tasks()
    assert there["spec"]["parent"] == {"taskId": name, "agent": "tiny-harness"}
    assert there["status"]["state"] == "TASK_STATE_COMPLETED"
    assert there["status"]["lifecycle"] == "delegated"
    assert {"id": CALLER, "role": "assignee"} in there["spec"]["participants"]
    assert [m["spec"]["task"] for m in remote.messages()] == [there["metadata"]["name"]]
    last = (await model_server.control.requests())[-1]
    assert "The market grew 5%." in inputs(last)
