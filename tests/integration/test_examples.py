"""The example manifest set (examples/reach-out.yaml) as a user applies it: an MCP tool
server, a remote agent (a second tiny-harness) and a task that uses both. The conversation it
gives with the scripted model is written to docs/screens/reach-out.txt, which the README shows."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.integration.kubectl_support import Harness
from tests.integration.lifecycle_support import Tasks
from tests.integration.remote_support import RemoteHarness, wait_ready
from tests.integration.toolserver_support import wait_ready as tool_server_ready
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.operator.host import child_name
from tiny_harness.testing.mcp_server import McpServerThread

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

EXAMPLE = REPO_ROOT / "examples" / "reach-out.yaml"
CAPTURE = REPO_ROOT / "docs" / "screens" / "reach-out.txt"


async def test_the_reach_out_example_calls_a_tool_and_delegates_to_a_remote_agent(
    kubectl: Kubectl,
    tasks: Tasks,
    harness: Harness,
    operator: Operator,
    model_server: ModelServer,
    mcp: McpServerThread,
    remote: RemoteHarness,
) -> None:
    operator()
    manifests = (
        EXAMPLE.read_text()
        .replace("http://127.0.0.1:8765/mcp", mcp.url)
        .replace("http://127.0.0.1:8081/.well-known/agent-card.json", remote.card_url)
    )
    applied = kubectl.apply(manifests)
    assert applied.returncode == 0, applied.stderr
    tool_server_ready(kubectl, "weather")
    await wait_ready(lambda: kubectl.get_json("harnessagent", "travel-desk"))
    await tasks.wait("weekend-trip", "TASK_STATE_INPUT_REQUIRED")
    child = child_name("weekend-trip", "weekend-trip/turn-1/tool-1-call-book")
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "calls": [
                    {"id": "call-sky", "name": "weather__weather", "arguments": {"city": "Oslo"}},
                    {
                        "id": "call-book",
                        "name": "spawn_subtask",
                        "arguments": {
                            "goal": "Book a train to Oslo for Saturday and a hotel for one night",
                            "agent": "travel-desk",
                        },
                    },
                ],
            },
            {
                "type": "text",
                "text": "It is sunny in Oslo: pack light. The travel desk is booking the train.",
                "when": "Spawned sub-task",
            },
            {
                "type": "text",
                "text": "Booked: the 08:05 train on Saturday, and one night at the Fjord Hotel.",
                "when": "Goal: Book a train to Oslo",
            },
            {
                "type": "text",
                "text": "All set: sunny weather, the 08:05 train on Saturday, one night at the "
                "Fjord Hotel.",
                "when": "Booked: the 08:05 train",
            },
        ]
    )

    sent = await harness.run("send", "weekend-trip", "Plan my weekend in Oslo, please.", "--wait")
    assert sent.returncode == 0, sent.stderr
    await tasks.wait(child, "TASK_STATE_COMPLETED", within=60)
    final = await tasks.wait("weekend-trip", "TASK_STATE_INPUT_REQUIRED", turn=2, within=60)

    assert final["message"].startswith("All set: sunny weather")
    [row] = final["subTasks"]
    assert (row["agent"], row["state"]) == ("travel-desk", "TASK_STATE_COMPLETED")
    assert [c.arguments for c in mcp.served("weather")] == [{"city": "Oslo"}]
    shown = await harness.run("get", "weekend-trip")
    assert shown.returncode == 0, shown.stderr
    child_shown = await harness.run("get", child)
    capture = (
        "$ kubectl harness get weekend-trip\n"
        + shown.stdout
        + f"\n$ kubectl harness get {child}\n"
        + child_shown.stdout
    )
    CAPTURE.parent.mkdir(parents=True, exist_ok=True)
    # As in the default namespace, where a reader would apply the example.
    CAPTURE.write_text(capture.replace(kubectl.namespace, "default"))
    assert "Agent:          travel-desk (a remote A2A agent does the work)" in child_shown.stdout
    assert "Tool servers:         weather" in shown.stdout
    assert "Fjord Hotel" in shown.stdout
    assert "travel-desk" in shown.stdout
