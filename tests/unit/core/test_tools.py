"""The validating invoker: what reaches a tool is schema-valid, and nothing a model or tool gets
wrong escapes as an exception; the intrinsics are pure and refuse bad plans with a reason."""

from __future__ import annotations

from typing import Any

import pytest

from tiny_harness.core.intrinsics import (
    INTRINSIC_NAMES,
    INTRINSIC_SPECS,
    apply_intrinsic,
)
from tiny_harness.core.llm import ToolCall, ToolSpec
from tiny_harness.core.plan import Plan, PlanStep
from tiny_harness.core.tools import (
    InvalidToolCallError,
    ToolContext,
    ToolError,
    ToolInvoker,
    ToolRegistrationError,
    ToolRegistry,
)

from .conftest import delegated

ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
CTX = ToolContext(task_id="t1", call_id="t1/turn-0/tool-0-c1")


def registry_with_add() -> tuple[ToolRegistry, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    registry = ToolRegistry()

    @registry.tool("add", "Add two integers.", ADD_SCHEMA)
    async def add(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(args)
        return str(args["a"] + args["b"])

    return registry, seen


def call(name: str, arguments_json: str) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments_json=arguments_json)


async def test_a_valid_call_runs_the_tool_and_returns_its_text() -> None:
    registry, seen = registry_with_add()
    result = await ToolInvoker(registry).invoke(call("add", '{"a": 2, "b": 3}'), CTX)
    assert (result.role, result.content, result.tool_call_id, result.is_error) == (
        "tool",
        "5",
        "c1",
        False,
    )
    assert seen == [{"a": 2, "b": 3}]


async def test_unparseable_json_is_an_error_result_and_the_tool_does_not_run() -> None:
    registry, seen = registry_with_add()
    result = await ToolInvoker(registry).invoke(call("add", '{"a": 2,'), CTX)
    assert result.is_error
    assert "not valid JSON" in result.content
    assert "one JSON object" in result.content
    assert seen == []


async def test_arguments_that_are_not_an_object_are_refused() -> None:
    registry, _ = registry_with_add()
    result = await ToolInvoker(registry).invoke(call("add", "[1, 2]"), CTX)
    assert result.is_error
    assert "must be a JSON object, not list" in result.content


async def test_a_schema_violation_names_the_field_and_what_is_wrong() -> None:
    registry, seen = registry_with_add()
    result = await ToolInvoker(registry).invoke(call("add", '{"a": "two"}'), CTX)
    assert result.is_error
    assert "$.a: 'two' is not of type 'integer'" in result.content
    assert "'b' is a required property" in result.content
    assert "call 'add' again" in result.content
    assert seen == []


async def test_an_unknown_tool_is_an_error_listing_the_available_tools() -> None:
    registry, _ = registry_with_add()
    result = await ToolInvoker(registry).invoke(call("multiply", "{}"), CTX)
    assert result.is_error
    assert "no tool named 'multiply'" in result.content
    assert "add" in result.content


async def test_a_tool_exception_is_an_error_result_not_a_crash() -> None:
    registry = ToolRegistry()

    @registry.tool("flaky", "Always fails.")
    def flaky(args: dict[str, Any], ctx: ToolContext) -> str:
        raise RuntimeError("disk full")

    result = await ToolInvoker(registry).invoke(call("flaky", "{}"), CTX)
    assert result.is_error
    assert "tool 'flaky' failed: RuntimeError: disk full" in result.content


async def test_a_tool_error_reaches_the_model_verbatim() -> None:
    registry = ToolRegistry()

    @registry.tool("lookup", "Look up a customer.")
    def lookup(args: dict[str, Any], ctx: ToolContext) -> str:
        raise ToolError("no customer with id 42; list customers first")

    result = await ToolInvoker(registry).invoke(call("lookup", ""), CTX)
    assert result.content == "Error: no customer with id 42; list customers first"


async def test_a_sync_tool_returning_data_is_sent_as_json_and_sees_its_idempotency_key() -> None:
    registry = ToolRegistry()
    keys: list[str] = []

    @registry.tool("info", "Describe the call.")
    def info(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        keys.append(ctx.call_id)
        return {"ok": True, "n": 1}

    result = await ToolInvoker(registry).invoke(call("info", "{}"), CTX)
    assert result.content == '{"ok": true, "n": 1}'
    assert keys == ["t1/turn-0/tool-0-c1"]


def test_an_invalid_schema_is_refused_at_registration() -> None:
    registry = ToolRegistry()
    spec = ToolSpec(name="bad", description="x", parameters={"type": "object", "properties": 3})
    with pytest.raises(ToolRegistrationError, match="tool 'bad': its parameters are not a valid"):
        registry.add(spec, lambda args, ctx: "")


def test_a_schema_that_is_not_an_object_is_refused() -> None:
    spec = ToolSpec(name="bad", description="x", parameters={"type": "string"})
    with pytest.raises(ToolRegistrationError, match='"type": "object"'):
        ToolRegistry().add(spec, lambda args, ctx: "")


def test_a_name_is_registered_once_and_reserved_names_are_refused() -> None:
    registry = ToolRegistry(reserved=INTRINSIC_NAMES)
    spec = ToolSpec(name="add", description="x", parameters=ADD_SCHEMA)
    registry.add(spec, lambda args, ctx: "")
    with pytest.raises(ToolRegistrationError, match="already registered"):
        registry.add(spec, lambda args, ctx: "")
    with pytest.raises(ToolRegistrationError, match="reserved for an intrinsic"):
        registry.add(spec.model_copy(update={"name": "create_plan"}), lambda args, ctx: "")


def test_every_intrinsic_schema_is_a_valid_json_schema() -> None:
    registry = ToolRegistry()
    for spec in INTRINSIC_SPECS:
        registry.add(spec, None)
    with pytest.raises(InvalidToolCallError, match="question"):
        ToolInvoker(registry).check(ToolCall(id="c", name="ask_participant", arguments_json="{}"))


def test_create_plan_with_a_cycle_is_an_error_naming_the_cycle() -> None:
    args = {
        "steps": [
            {"name": "a", "dependencies": ["c"]},
            {"name": "b", "dependencies": ["a"]},
            {"name": "c", "dependencies": ["b"]},
        ]
    }
    result = apply_intrinsic("create_plan", args, delegated(), task_id="t1", step_id="s")
    assert result.is_error
    assert result.plan is None
    assert "cycle: a -> c -> b -> a" in result.content


def test_create_plan_with_an_unknown_dependency_says_which() -> None:
    args = {"steps": [{"name": "a", "dependencies": ["ghost"]}]}
    result = apply_intrinsic("create_plan", args, delegated(), task_id="t1", step_id="s")
    assert result.is_error
    assert "unknown step(s): ghost" in result.content


def test_complete_step_without_a_plan_asks_for_one() -> None:
    result = apply_intrinsic(
        "complete_step", {"name": "a", "output": "x"}, delegated(), task_id="t1", step_id="s"
    )
    assert result.content == "Error: there is no plan yet; call create_plan first"


def test_complete_step_records_the_output_and_names_the_next_step() -> None:
    plan = Plan.create([PlanStep(name="a"), PlanStep(name="b", dependencies=("a",))])
    result = apply_intrinsic(
        "complete_step",
        {"name": "a", "output": "found 3 issues"},
        delegated(plan=plan),
        task_id="t1",
        step_id="s",
    )
    assert not result.is_error
    assert result.plan is not None
    assert result.plan.step("a").output == "found 3 issues"
    assert "(1/2)" in result.content
    assert "Next step: b" in result.content


def test_spawn_subtask_is_an_intent_linked_from_the_current_step() -> None:
    plan = Plan.create([PlanStep(name="research"), PlanStep(name="write")])
    result = apply_intrinsic(
        "spawn_subtask",
        {"goal": "Find sources"},
        delegated(plan=plan),
        task_id="t1",
        step_id="t1/turn-0/tool-0-c1",
    )
    assert result.spawn is not None
    assert (result.spawn.id, result.spawn.goal, result.spawn.step) == (
        "t1/turn-0/tool-0-c1",
        "Find sources",
        "research",
    )
