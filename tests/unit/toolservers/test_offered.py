"""A server's MCP tools as harness tools, against the test MCP server (the real SDK on
loopback): chosen by the allow-list, named for the model, validated before the server sees a
call, and every failure an error result saying what to do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tiny_harness.core.destinations import LOCAL_DEVELOPMENT
from tiny_harness.core.llm import ToolCall
from tiny_harness.core.tools import ToolContext, ToolInvoker, ToolRegistry
from tiny_harness.testing.mcp_server import McpServerThread, free_port
from tiny_harness.toolservers.client import Endpoint, list_tools
from tiny_harness.toolservers.offered import build_tools, select_tools


@pytest.fixture(scope="module")
def server() -> Iterator[McpServerThread]:
    running = McpServerThread().start()
    yield running
    running.stop()


Observed = list[tuple[str, str]]


def endpoint(server: str, url: str, timeout: float = 30.0) -> Endpoint:
    """The test server as an endpoint: it is on loopback, which the destination policy
    refuses unless it is listed (as ``tiny-harness up`` lists it)."""
    return Endpoint(server, url, timeout=timeout, destinations=LOCAL_DEVELOPMENT)


async def invoker_for(
    endpoint: Endpoint, observed: Observed, *, limit: int = 4096, allow: list[str] | None = None
) -> ToolInvoker:
    listing = await list_tools(endpoint)
    discovered, problems = select_tools(endpoint.server, listing.tools, allow)
    assert problems == ()
    registry = ToolRegistry()
    for tool in build_tools(
        endpoint,
        discovered,
        max_result_bytes=limit,
        observe=lambda server, outcome, _: observed.append((server, outcome)),
    ):
        registry.include(tool)
    return ToolInvoker(registry)


def call(name: str, arguments: str, call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments_json=arguments)


def context(key: str) -> ToolContext:
    return ToolContext(task_id="t1", call_id=key)


async def test_the_allow_list_chooses_and_names_the_tools(server: McpServerThread) -> None:
    listing = await list_tools(endpoint("weather", server.url))

    discovered, problems = select_tools("weather", listing.tools, ["weather", "missing"])

    assert [(t.name, t.exposed_as) for t in discovered] == [("weather", "weather__weather")]
    assert discovered[0].input_schema["required"] == ["city"]
    assert problems == ("missing: in spec.tools, but the server has no such tool",)


async def test_a_call_returns_the_servers_text_under_the_journal_key(
    server: McpServerThread,
) -> None:
    observed: Observed = []
    invoker = await invoker_for(endpoint("weather", server.url), observed)

    result = await invoker.invoke(
        call("weather__weather", '{"city": "Oslo"}'), context("t1/turn-0/tool-0-c1")
    )

    assert result.content == "Sunny in Oslo."
    assert not result.is_error
    assert [c.request_id for c in server.served("weather")][-1] == "t1/turn-0/tool-0-c1"
    assert observed == [("weather", "ok")]


async def test_a_schema_violation_never_reaches_the_server(server: McpServerThread) -> None:
    observed: Observed = []
    invoker = await invoker_for(endpoint("weather", server.url), observed)
    before = len(server.served("weather"))

    result = await invoker.invoke(call("weather__weather", '{"town": 3}'), context("k-bad"))

    assert result.is_error
    assert "do not match its schema" in result.content
    assert "'city' is a required property" in result.content
    assert len(server.served("weather")) == before
    assert observed == []


async def test_a_slow_tool_times_out_with_advice(server: McpServerThread) -> None:
    observed: Observed = []
    invoker = await invoker_for(endpoint("slowpoke", server.url, timeout=1), observed)

    result = await invoker.invoke(call("slowpoke__slow", '{"seconds": 5}'), context("k-slow"))

    assert result.is_error
    assert "did not finish calling 'slow' within 1s" in result.content
    assert "may still have run on the server" in result.content
    assert observed == [("slowpoke", "timeout")]


async def test_a_servers_error_result_is_an_error_result(server: McpServerThread) -> None:
    observed: Observed = []
    invoker = await invoker_for(endpoint("tools", server.url), observed)

    result = await invoker.invoke(call("tools__broken", "{}"), context("k-broken"))

    assert result.is_error
    assert "tool 'broken' of tool server 'tools' reported an error" in result.content
    assert observed == [("tools", "error")]


async def test_a_large_result_is_cut_to_the_limit(server: McpServerThread) -> None:
    observed: Observed = []
    invoker = await invoker_for(endpoint("tools", server.url), observed, limit=1000)

    result = await invoker.invoke(call("tools__big", '{"size": 5000}'), context("k-big"))

    assert not result.is_error
    assert result.content.startswith("x" * 1000 + "\n\n[Cut: the result was 5,000 bytes")
    assert observed == [("tools", "truncated")]


async def test_a_server_that_went_away_is_an_error_result(server: McpServerThread) -> None:
    observed: Observed = []
    gone = endpoint("gone", f"http://127.0.0.1:{free_port()}/mcp", timeout=2)
    registry = ToolRegistry()
    listing = await list_tools(endpoint("gone", server.url))
    discovered, _ = select_tools("gone", listing.tools, ["weather"])
    for tool in build_tools(
        gone, discovered, max_result_bytes=100, observe=lambda s, o, _: observed.append((s, o))
    ):
        registry.include(tool)

    result = await ToolInvoker(registry).invoke(
        call("gone__weather", '{"city": "Oslo"}'), context("k-gone")
    )

    assert result.is_error
    assert "tool server 'gone' could not be reached" in result.content
    assert "Go on without this tool" in result.content
    assert observed == [("gone", "unreachable")]


async def test_a_call_the_destination_policy_refuses_is_an_error_result_naming_why(
    server: McpServerThread,
) -> None:
    observed: Observed = []
    listing = await list_tools(endpoint("weather", server.url))
    discovered, _ = select_tools("weather", listing.tools, ["weather"])
    refusing = Endpoint("weather", server.url)  # the default policy: loopback is refused
    registry = ToolRegistry()
    for tool in build_tools(
        refusing, discovered, max_result_bytes=100, observe=lambda s, o, _: observed.append((s, o))
    ):
        registry.include(tool)

    result = await ToolInvoker(registry).invoke(
        call("weather__weather", '{"city": "Oslo"}'), context("k-blocked")
    )

    assert result.is_error
    assert "tool server 'weather' was not called: the operator refuses to connect to " in (
        result.content
    )
    assert result.content.endswith("may not connect to this tool server's address.")
    assert observed == [("weather", "blocked")]
    assert "k-blocked" not in [c.request_id for c in server.served("weather")]
