"""Tools a turn gets on top of the loop's own (a task's tool servers): offered to the model with
their notes, validated and run through the same invoker, and never needed for replay."""

from __future__ import annotations

from typing import Any

import pytest

from tiny_harness.core.compaction import FixedContextWindow
from tiny_harness.core.llm import ToolSpec
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.tools import (
    Tool,
    ToolContext,
    ToolRegistrationError,
    ToolRegistry,
    TurnTools,
    compile_schema,
)
from tiny_harness.core.turn import TurnInput

from .conftest import HostCrashed, MemoryHost, ScriptedModel, calls, delegated, reply

WINDOW = FixedContextWindow(200_000)
SCHEMA = {
    "type": "object",
    "properties": {"q": {"type": "string"}},
    "required": ["q"],
    "additionalProperties": False,
}


class Search:
    """A per-turn tool that records the calls it served."""

    def __init__(self, name: str = "search__find") -> None:
        self.calls: list[tuple[dict[str, Any], str]] = []
        spec = ToolSpec(name=name, description="Find things.", parameters=SCHEMA)
        self.tool = Tool(spec=spec, function=self.run, validator=compile_schema(spec))

    async def run(self, args: dict[str, Any], context: ToolContext) -> str:
        self.calls.append((args, context.call_id))
        return f"found {args['q']}"


def turn_input(journal: Any = ()) -> TurnInput:
    return TurnInput(task_id="t1", turn=0, task=delegated(), journal=journal)


async def test_a_turns_own_tool_is_offered_called_and_its_result_reaches_the_model() -> None:
    search = Search()
    model = ScriptedModel(calls(("search__find", {"q": "cats"})), reply("Found cats."))
    tools = TurnTools(tools=(search.tool,), notes=("Tools named server__tool are MCP tools.",))

    outcome = await CoreLoop(model, WINDOW).run_turn(MemoryHost(), turn_input(), tools)

    first = model.requests[0]
    assert "search__find" in [t.name for t in first.tools]
    assert "create_plan" in [t.name for t in first.tools]
    assert first.system.endswith("Tools named server__tool are MCP tools.")
    assert search.calls == [({"q": "cats"}, "t1/turn-0/tool-0-call-0")]
    assert model.requests[1].messages[-1].content == "found cats"
    assert outcome.text == "Found cats."


async def test_a_schema_violation_is_caught_before_the_turns_tool_runs() -> None:
    search = Search()
    model = ScriptedModel(calls(("search__find", {"q": 3})), reply("Gave up."))

    await CoreLoop(model, WINDOW).run_turn(
        MemoryHost(), turn_input(), TurnTools(tools=(search.tool,))
    )

    error = model.requests[1].messages[-1]
    assert error.is_error
    assert "$.q: 3 is not of type 'string'" in error.content
    assert search.calls == []


async def test_the_loops_other_turns_do_not_see_one_turns_tools() -> None:
    search = Search()
    model = ScriptedModel(reply("one"), reply("two"))
    loop = CoreLoop(model, WINDOW)

    await loop.run_turn(MemoryHost(), turn_input(), TurnTools(tools=(search.tool,)))
    await loop.run_turn(MemoryHost(), turn_input())

    assert "search__find" in [t.name for t in model.requests[0].tools]
    assert "search__find" not in [t.name for t in model.requests[1].tools]


async def test_a_resumed_turn_replays_a_recorded_result_even_if_the_tool_is_gone() -> None:
    search = Search()
    host = MemoryHost(crash_after=2)  # the model call and the tool result are recorded
    model = ScriptedModel(
        calls(("search__find", {"q": "cats"})), reply("lost in the crash"), reply("Found cats.")
    )
    loop = CoreLoop(model, WINDOW)
    with pytest.raises(HostCrashed):
        await loop.run_turn(host, turn_input(), TurnTools(tools=(search.tool,)))
    assert len(search.calls) == 1

    resumed = MemoryHost()
    outcome = await loop.run_turn(resumed, turn_input(host.journal))  # no tools this time

    assert len(search.calls) == 1
    assert model.requests[-1].messages[-1].content == "found cats"
    assert outcome.text == "Found cats."


@pytest.mark.parametrize("name", ["create_plan", "add_to_total"])
def test_a_turns_tool_may_not_take_a_name_already_offered(name: str) -> None:
    registry = ToolRegistry()
    registry.tool("add_to_total", "Add.")(lambda args, ctx: "ok")
    loop = CoreLoop(ScriptedModel(), WINDOW, registry)

    with pytest.raises(ToolRegistrationError, match="already registered"):
        loop.registry.extended([Search(name).tool])
