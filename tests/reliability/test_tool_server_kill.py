"""SIGKILL of the operator around an MCP tool call: killed right after the model's tool call
was journaled (before the call), or right after the tool's result was journaled. After a
restart the turn ends, and the MCP server ran the tool exactly once, under the journal key."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.integration.lifecycle_support import Tasks
from tests.integration.toolserver_support import declare, tool_outputs, wait_ready
from tests.reliability.test_faults import died, first_calls
from tiny_harness.testing.mcp_server import McpServerThread

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

#: The task's journal writes in its turn: 1 is the drain with the model's call asking for the
#: tool (the tool has not run), 2 the tool's result (the model has not seen it).
BOUNDARIES = (1, 2)


@pytest.mark.parametrize("boundary", BOUNDARIES)
async def test_a_killed_operator_never_calls_a_journaled_tool_twice(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    mcp: McpServerThread,
    boundary: int,
) -> None:
    declare(kubectl, "weather", mcp.url)
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "calls": [{"name": "weather__weather", "arguments": {"city": "Oslo"}, "id": "c1"}],
            },
            {"type": "text", "text": "Sunny, they say."},
        ]
    )
    doomed = operator(env={"TINY_HARNESS_FAILPOINT": f"kill-after-write:{boundary}@trip"})
    wait_ready(kubectl, "weather")
    await tasks.create("trip", toolServers=["weather"])
    await tasks.wait("trip", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("trip", "Weather in Oslo?")
    died(doomed)
    ran_before_restart = len(mcp.served("weather"))

    operator()
    status = await tasks.wait("trip", "TASK_STATE_INPUT_REQUIRED", turn=1, within=60)

    assert status["message"] == "Sunny, they say."
    assert ran_before_restart == (1 if boundary == 2 else 0)
    served = mcp.served("weather")
    assert [(c.arguments, c.request_id) for c in served] == [
        ({"city": "Oslo"}, "trip/turn-1/tool-0-c1")
    ]
    requests = await model_server.control.requests()
    assert len(first_calls(requests, "trip")) == 1  # the journaled model call is not repeated
    assert tool_outputs(requests[-1]) == ["Sunny in Oslo."]
