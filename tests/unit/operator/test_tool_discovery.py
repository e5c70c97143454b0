"""What a turn is offered from its task's tool servers, decided from what the operator knows:
named and default servers, missing and unready ones told to the model and in the task's
ToolServersReady condition, and a tool that would shadow a loop tool left out; and how often a
server that stays down is tried again."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.eventually import eventually_async
from tiny_harness.core.llm import ToolSpec
from tiny_harness.core.task import Condition, TaskSpec
from tiny_harness.core.tools import Tool, compile_schema
from tiny_harness.operator.endpoints import NotReadyError
from tiny_harness.operator.metrics import OperatorMetrics
from tiny_harness.operator.tool_discovery import (
    DISCOVERY_ATTEMPTS,
    ToolServers,
    _Offered,
    _Server,
)
from tiny_harness.operator.tool_offers import CONDITION


def tool(name: str) -> Tool:
    spec = ToolSpec(name=name, description="d")
    return Tool(spec=spec, function=lambda args, ctx: "ok", validator=compile_schema(spec))


def server_obj(name: str, *, default: bool = False, ready: dict[str, Any] | None = None) -> Any:
    # As the operator writes it: every condition says when it last turned.
    written = {"type": "Ready", "lastTransitionTime": "2026-11-30T15:00:00Z", **(ready or {})}
    status = {"conditions": [written]} if ready else {}
    return {
        "metadata": {"name": name, "namespace": "work", "generation": 1},
        "spec": {"url": "http://x/mcp", "default": default},
        "status": status,
    }


def servers(*entries: _Server, taken: tuple[str, ...] = ()) -> ToolServers:
    known = ToolServers(None, OperatorMetrics(), namespaces=["work"], taken=taken)  # type: ignore[arg-type]
    for entry in entries:
        known.servers[(entry.namespace, entry.name)] = entry
    known._listed["work"].set()
    return known


def ready(name: str, *tools: str, default: bool = False) -> _Server:
    entry = _Server("work", name, server_obj(name, default=default))
    entry.offered = _Offered(1, tuple(tool(t) for t in tools))
    return entry


async def test_named_and_default_servers_are_offered_with_a_note() -> None:
    known = servers(ready("search", "search__find"), ready("clock", "clock__now", default=True))

    offer = await known.offer("work", TaskSpec(goal="g", tool_servers=("search",)))

    assert [t.spec.name for t in offer.tools.tools] == ["search__find", "clock__now"]
    assert "MCP tool servers declared in this namespace (search, clock)" in offer.tools.notes[0]
    assert offer.condition is not None
    assert (offer.condition.status, offer.condition.reason) == ("True", "Ready")


async def test_a_task_with_no_servers_gets_nothing_and_no_condition() -> None:
    offer = await servers(ready("search", "search__find")).offer("work", TaskSpec(goal="g"))

    assert offer.tools.tools == ()
    assert offer.condition is None
    assert offer.conditions((), None) is None


async def test_missing_and_unready_servers_are_told_to_the_model_and_the_condition() -> None:
    down = _Server(
        "work",
        "down",
        server_obj("down", ready={"status": "False", "reason": "Unreachable", "message": "gone"}),
    )
    known = servers(down)

    offer = await known.offer("work", TaskSpec(goal="g", tool_servers=("nowhere", "down")))

    assert offer.tools.tools == ()
    assert offer.tools.notes == (
        "Tool server 'nowhere' is not available for this turn: it does not exist in namespace "
        "work. If the task needs its tools, tell the participant.",
        "Tool server 'down' is not available for this turn: it is not ready (Unreachable: "
        "gone). If the task needs its tools, tell the participant.",
    )
    assert offer.condition is not None
    assert offer.condition.type == CONDITION
    assert (offer.condition.status, offer.condition.reason) == ("False", "ToolServerNotFound")
    assert "nowhere: it does not exist" in offer.condition.message


async def test_a_server_tool_may_not_shadow_a_loop_tool() -> None:
    known = servers(ready("search", "search__find", "create_plan"), taken=("create_plan",))

    offer = await known.offer("work", TaskSpec(goal="g", tool_servers=("search",)))

    assert [t.spec.name for t in offer.tools.tools] == ["search__find"]


async def test_the_condition_is_written_only_when_it_changes() -> None:
    known = servers(ready("search", "search__find"))
    offer = await known.offer("work", TaskSpec(goal="g", tool_servers=("search",)))
    assert offer.condition is not None
    error = Condition(
        type="Error",
        status="False",
        reason="Resumed",
        message="",
        last_transition_time="2026-11-30T15:00:00Z",
    )

    first = offer.conditions((error,), None)
    assert first is not None
    assert [c["type"] for c in first] == ["Error", CONDITION]
    written = tuple(Condition.model_validate(c) for c in first)

    again = await known.offer("work", TaskSpec(goal="g", tool_servers=("search",)))
    assert again.conditions(written, None) is None


class Unreachable(ToolServers):
    """Discovery that always fails as an unreachable server does; status writes recorded."""

    def __init__(self) -> None:
        super().__init__(None, OperatorMetrics(), namespaces=["work"])  # type: ignore[arg-type]
        self._listed["work"].set()
        self.attempts = 0
        self.written: list[str] = []

    async def _find_tools(self, server: _Server) -> str:
        self.attempts += 1
        raise NotReadyError("Unreachable", "connection refused")

    async def _write_ready(self, server: _Server, *args: Any) -> None:
        self.written.append(str(args[3]))


async def test_a_server_that_stays_down_is_retried_a_bounded_number_of_times_then_on_demand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tiny_harness.operator.tool_discovery as module

    # Retries come at once here; the bound and the on-demand rule are what is tested.
    monkeypatch.setattr(module, "RETRY_CAP", 0.0)
    known = Unreachable()
    entry = _Server("work", "down", server_obj("down"))
    known.servers[("work", "down")] = entry
    known._discover_soon(entry)
    await eventually_async(
        lambda: (
            known.attempts >= DISCOVERY_ATTEMPTS
            and entry.discovering is not None
            and entry.discovering.done()
        ),
        within=5,
        what="every background attempt to be made",
        interval=0.01,
    )
    await asyncio.sleep(0.05)  # and no more after them

    assert known.attempts == DISCOVERY_ATTEMPTS  # then the background retries stop
    assert entry.retry is None
    assert "attempt 1 of 8; trying again" in known.written[0]
    assert (
        "attempt 8 of 8; tried again when a task that names it starts a turn" in (known.written[-1])
    )

    spec = TaskSpec(goal="g", tool_servers=("down",))
    entry.tried = time.monotonic()
    await known.offer("work", spec)  # too soon after the last attempt: none
    assert known.attempts == DISCOVERY_ATTEMPTS
    entry.tried -= module.ASK_AGAIN_AFTER
    await known.offer("work", spec)  # a turn wants it: one more attempt
    await asyncio.sleep(0.05)
    assert known.attempts == DISCOVERY_ATTEMPTS + 1
