"""Tools from MCP servers, end to end: a HarnessToolServer declared with kubectl, the real
operator discovering it, the scripted model calling its tools through the validating invoker,
and an MCP server built with the ``mcp`` SDK (on 127.0.0.1) counting what it really ran."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess, free_port
from tests.integration.kubectl_support import Harness
from tests.integration.lifecycle_support import Tasks
from tests.integration.toolserver_support import (
    declare,
    instructions,
    task_condition,
    tool_names,
    tool_outputs,
    wait_ready,
)
from tiny_harness.core.secret_destinations import origin_of
from tiny_harness.core.tool_server import SECRET_ANNOTATION
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.testing.mcp_server import CHART_PNG, McpServerThread

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]
#: Where examples/toolserver.yaml expects the test tools (tiny_harness.testing.mcp_server).
EXAMPLE_URL = "http://127.0.0.1:8765/mcp"


@pytest.fixture
def weather(operator: Operator, kubectl: Kubectl, mcp: McpServerThread) -> McpServerThread:
    """The operator running, and the test MCP server declared as tool server ``weather``,
    discovered and ready."""
    operator()
    declare(kubectl, "weather", mcp.url)
    wait_ready(kubectl, "weather")
    return mcp


def weather_call(arguments: dict[str, Any] | str, call_id: str = "call_w1") -> dict[str, Any]:
    return {
        "type": "tool_calls",
        "calls": [{"name": "weather__weather", "arguments": arguments, "id": call_id}],
    }


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


async def ask(tasks: Tasks, name: str, text: str, **spec: Any) -> dict[str, Any]:
    """Create a conversation, send it ``text`` and wait for the turn to park."""
    await tasks.create(name, **spec)
    await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED")
    await tasks.send(name, text)
    return await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED", turn=1, within=60)


async def test_the_operator_discovers_a_servers_tools_into_its_status(
    operator: Operator, kubectl: Kubectl, mcp: McpServerThread
) -> None:
    operator()
    declare(kubectl, "tools", mcp.url, tools=["weather", "slow", "nowhere"])

    status = wait_ready(kubectl, "tools")

    assert [(t["name"], t["exposedAs"]) for t in status["tools"]] == [
        ("weather", "tools__weather"),
        ("slow", "tools__slow"),
    ]
    assert status["toolCount"] == 2
    assert status["tools"][0]["inputSchema"]["required"] == ["city"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "Discovered"
    assert "nowhere: in spec.tools, but the server has no such tool" in ready["message"]
    assert status["observedGeneration"] == 1
    table = kubectl.run("get", "htool").stdout
    assert table.split()[:6] == ["NAME", "URL", "READY", "TOOLS", "DEFAULT", "AGE"]
    assert mcp.url in table
    assert "True" in table


async def test_a_tool_call_reaches_the_server_and_its_result_the_models_next_request(
    tasks: Tasks, model_server: ModelServer, weather: McpServerThread
) -> None:
    await model_server.control.script(
        [weather_call({"city": "Oslo"}), {"type": "text", "text": "It is sunny in Oslo."}]
    )

    status = await ask(tasks, "trip", "What is the weather in Oslo?", toolServers=["weather"])

    assert status["message"] == "It is sunny in Oslo."
    first, second = await model_server.control.requests()
    assert {"weather__weather", "weather__slow", "create_plan"} <= set(tool_names(first))
    assert "Tools named <server>__<tool> come from MCP tool servers" in instructions(first)
    assert tool_outputs(second) == ["Sunny in Oslo."]
    served = weather.served("weather")
    assert [(c.arguments, c.request_id) for c in served] == [
        ({"city": "Oslo"}, "trip/turn-1/tool-0-call_w1")
    ]
    assert task_condition(status)["status"] == "True"


async def test_an_image_a_tool_returns_is_kept_as_an_artifact_and_the_model_told_so(
    tasks: Tasks, model_server: ModelServer, weather: McpServerThread, harness: Harness
) -> None:
    chart = {
        "type": "tool_calls",
        "calls": [{"name": "weather__chart", "arguments": {"title": "rain"}, "id": "call_c1"}],
    }
    await model_server.control.script([chart, {"type": "text", "text": "The chart is kept."}])

    status = await ask(tasks, "charts", "Chart the rain.", toolServers=["weather"])

    assert status["message"] == "The chart is kept."
    [row] = status["artifacts"]
    assert row["name"] == "weather__chart-call_c1"
    _, second = await model_server.control.requests()
    assert tool_outputs(second) == [
        "The chart of rain.\n\n[an image (image/png)]\n\n"
        "[Kept as the artifact 'weather__chart-call_c1': image-1.png (image/png, 72 B).]"
    ]
    argv = harness.argv("artifact", "charts", "weather__chart-call_c1")
    written = await asyncio.to_thread(subprocess.run, argv, capture_output=True, timeout=120)
    assert written.returncode == 0, written.stderr
    assert written.stdout == CHART_PNG


async def test_a_default_server_is_offered_to_a_task_that_names_none(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    operator()
    declare(kubectl, "weather", mcp.url, default=True)
    wait_ready(kubectl, "weather")
    await model_server.control.script([weather_call({"city": "Rome"})])

    await ask(tasks, "plain", "Weather in Rome?")

    assert [c.arguments for c in mcp.served("weather")] == [{"city": "Rome"}]


async def test_a_schema_violation_is_caught_by_the_invoker_and_never_reaches_the_server(
    tasks: Tasks, model_server: ModelServer, weather: McpServerThread
) -> None:
    await model_server.control.script([weather_call({"town": 7}), weather_call({"city": "Oslo"})])

    await ask(tasks, "sloppy", "Weather?", toolServers=["weather"])

    requests = await model_server.control.requests()
    refused = tool_outputs(requests[1])[-1]
    assert "the arguments for tool 'weather__weather' do not match its schema" in refused
    assert "'city' is a required property" in refused
    assert tool_outputs(requests[2])[-1] == "Sunny in Oslo."
    assert [c.arguments for c in weather.served("weather")] == [{"city": "Oslo"}]


async def test_a_slow_tool_times_out_as_an_error_result_and_the_turn_goes_on(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    metrics = f"127.0.0.1:{free_port()}"
    operator(metrics_bind=metrics)
    declare(kubectl, "tools", mcp.url, timeoutSeconds=1)
    wait_ready(kubectl, "tools")
    await model_server.control.script(
        [
            {"type": "tool_calls", "calls": [{"name": "tools__slow", "arguments": {"seconds": 8}}]},
            {"type": "text", "text": "The tool was too slow."},
        ]
    )

    status = await ask(tasks, "patient", "Wait for it.", toolServers=["tools"])

    assert status["message"] == "The tool was too slow."
    timed_out = tool_outputs((await model_server.control.requests())[1])[-1]
    assert timed_out.startswith("Error: tool server 'tools' did not finish calling 'slow'")
    assert "within 1s" in timed_out
    assert "may still have run on the server" in timed_out
    scraped = await asyncio.to_thread(scrape, f"http://{metrics}/metrics")
    server = f"{kubectl.namespace}/tools"
    assert f'tool_server_calls_total{{outcome="timeout",server="{server}"}} 1.0' in scraped


async def test_a_server_that_went_down_is_an_error_result_then_not_ready(
    kubectl: Kubectl, tasks: Tasks, model_server: ModelServer, weather: McpServerThread
) -> None:
    weather.stop()
    await model_server.control.script(
        [weather_call({"city": "Oslo"}), {"type": "text", "text": "The weather service is down."}]
    )

    status = await ask(tasks, "stormy", "Weather?", toolServers=["weather"])

    assert status["message"] == "The weather service is down."
    failed = tool_outputs((await model_server.control.requests())[1])[-1]
    assert failed.startswith("Error: tool server 'weather' could not be reached")
    assert "Go on without this tool" in failed
    # The failed call asked for a new discovery, which finds the server down.
    gone = wait_ready(kubectl, "weather", "False")
    ready = next(c for c in gone["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "Unreachable"
    assert gone["toolCount"] == 0


async def test_a_task_naming_a_missing_or_unready_server_is_told_and_goes_on(
    operator: Operator, kubectl: Kubectl, tasks: Tasks, model_server: ModelServer
) -> None:
    operator()
    declare(kubectl, "dead", f"http://127.0.0.1:{free_port()}/mcp")
    wait_ready(kubectl, "dead", "False")
    await model_server.control.script([{"type": "text", "text": "I cannot use those tools."}])

    status = await ask(tasks, "hopeful", "Use your tools.", toolServers=["nowhere", "dead"])

    assert status["message"] == "I cannot use those tools."
    (request,) = await model_server.control.requests()
    assert not [n for n in tool_names(request) if "__" in n]
    said = instructions(request)
    assert "Tool server 'nowhere' is not available for this turn: it does not exist" in said
    assert "Tool server 'dead' is not available for this turn: it is not ready (Unreachable" in (
        said
    )
    condition = task_condition(status)
    assert condition["status"] == "False"
    assert condition["reason"] == "ToolServerNotFound"
    assert f"nowhere: it does not exist in namespace {kubectl.namespace}" in condition["message"]
    assert "dead: it is not ready (Unreachable" in condition["message"]


async def test_headers_come_from_a_secret_that_allows_the_server_and_are_never_shown(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    op = operator()
    token = "Bearer t-0123456789"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "weather-auth", "annotations": {SECRET_ANNOTATION: "other"}},
        "data": {"token": base64.b64encode(token.encode()).decode()},
    }
    assert kubectl.apply(json.dumps(secret)).returncode == 0
    source = {"secretKeyRef": {"name": "weather-auth", "key": "token"}}
    headers = [{"name": "Authorization", "valueFrom": source}]
    declare(kubectl, "weather", mcp.url, headers=headers)

    refused = wait_ready(kubectl, "weather", "False")
    assert "SecretNotAllowed" in json.dumps(refused)
    where = origin_of(mcp.url)
    secret["metadata"]["annotations"] = {SECRET_ANNOTATION: f"other, weather@{where}"}
    assert kubectl.apply(json.dumps(secret)).returncode == 0
    # A new generation is discovered at once (without it, the retry's backoff gets there).
    kubectl.run(
        "patch", "htool", "weather", "--type=merge", "-p", '{"spec": {"timeoutSeconds": 20}}'
    )
    wait_ready(kubectl, "weather")
    await model_server.control.script([weather_call({"city": "Oslo"})])
    await ask(tasks, "private", "Weather?", toolServers=["weather"])

    assert [c.authorization for c in mcp.served("weather")] == [token]
    assert "t-0123456789" not in kubectl.run("get", "htool", "weather", "-o", "yaml").stdout
    assert "t-0123456789" not in op.log()


async def test_the_example_manifests_declare_a_server_whose_tool_the_task_calls(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    operator()
    manifests = (REPO_ROOT / "examples" / "toolserver.yaml").read_text()
    assert kubectl.apply(manifests.replace(EXAMPLE_URL, mcp.url)).returncode == 0
    wait_ready(kubectl, "weather")
    await tasks.wait("trip-planner", "TASK_STATE_INPUT_REQUIRED")
    await model_server.control.script(
        [weather_call({"city": "Oslo"}), {"type": "text", "text": "Sunny in Oslo: pack light."}]
    )

    await tasks.send("trip-planner", "I am off to Oslo. What should I pack?")
    await tasks.wait("trip-planner", "TASK_STATE_INPUT_REQUIRED", turn=1, within=60)

    said = [(m.role, m.text) for m in await tasks.transcript("trip-planner")]
    assert said == [
        ("user", "I am off to Oslo. What should I pack?"),
        ("agent", "Sunny in Oslo: pack light."),
    ]
    (record,) = await tasks.records_of("trip-planner")
    (called,) = [e for e in record.entries if getattr(e, "kind", "") == "tool"]
    assert (called.name, called.content) == ("weather__weather", "Sunny in Oslo.")
    assert [c.request_id for c in mcp.served("weather")] == [called.id]
