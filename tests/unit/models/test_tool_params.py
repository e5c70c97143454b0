"""Tool definitions are converted once per tool set, and sent as the same JSON."""

from __future__ import annotations

from tiny_harness.core.llm import ToolSpec
from tiny_harness.models.openai_responses import function_tool
from tiny_harness.models.tool_params import MAX_SETS, ToolParams


def test_the_same_tools_are_converted_once() -> None:
    tools = (ToolSpec(name="read", description="Read."), ToolSpec(name="write", description="W."))
    converted: list[str] = []

    def convert(tool: ToolSpec) -> str:
        converted.append(tool.name)
        return tool.name

    params: ToolParams[str] = ToolParams()
    first = params.body(tools, convert)
    again = params.body(tuple(tools), convert)

    assert first == again == {"tools": ["read", "write"]}
    assert converted == ["read", "write"]


def test_no_tools_adds_nothing_to_the_body() -> None:
    assert ToolParams[str]().body((), str) is None


def test_the_body_is_the_sdk_shape_of_each_tool() -> None:
    tool = ToolSpec(name="read", description="Read a file.")
    body = ToolParams[object]().body((tool,), function_tool)
    assert body == {"tools": [function_tool(tool)]}


def test_only_a_bounded_number_of_tool_sets_is_kept() -> None:
    params: ToolParams[str] = ToolParams()
    for i in range(MAX_SETS + 5):
        params.body((ToolSpec(name=f"t{i}", description="x"),), lambda t: t.name)
    assert len(params._sets) == MAX_SETS
