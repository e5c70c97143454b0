"""The built-in commands, as a participant sees them: the reply, and what the operator applies."""

from __future__ import annotations

import pytest

from tiny_harness.core.authority import BUDGET, refusal_text
from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.commands.builtins import SUB_TASK_USAGE
from tiny_harness.core.commands.context import (
    ChildSnapshot,
    CommandResult,
    SpawnRequest,
    TaskSnapshot,
)
from tiny_harness.core.commands.setup import build_command_registry
from tiny_harness.core.plan import Plan, PlanStep
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import (
    TEXT_MAX,
    Budget,
    SubTaskRow,
    TaskSpec,
    TaskStatus,
    TaskUsage,
)
from tiny_harness.core.turn import TaskSettings

from .support import ROLES, registry, send, snapshot

REGISTRY = registry()


async def answer(text: str, sender: str = "alice", **task: object) -> CommandResult:
    result = await send(REGISTRY, text, sender, task=snapshot(**task))
    assert result is not None, f"{text!r} was not a command"
    return result


# -- /model --


async def test_model_shows_the_default_and_the_selectable_models() -> None:
    result = await answer("/model")
    assert result == CommandResult(
        reply="model: gpt-4o (the default)\nselectable: gpt-4o, gpt-5, o4-mini"
    )


async def test_model_shows_the_tasks_own_model_to_a_watcher_too() -> None:
    result = await answer("/model", "bob", settings=TaskSettings(model="gpt-5"))
    assert result.reply == "model: gpt-5\nselectable: gpt-4o, gpt-5, o4-mini"
    assert result.settings is None


async def test_model_name_sets_a_selectable_model_and_keeps_the_effort() -> None:
    result = await answer("/model o4-mini", settings=TaskSettings(reasoning_effort="high"))
    assert result == CommandResult(
        reply="model set to o4-mini",
        settings=TaskSettings(model="o4-mini", reasoning_effort="high"),
    )


@pytest.mark.parametrize("name", ["gpt-6", "GPT-5", "gpt", "gpt-5-turbo", "gpt-5 o4-mini"])
async def test_model_refuses_anything_not_exactly_selectable(name: str) -> None:
    result = await answer(f"/model {name}")
    assert result.reply.startswith("refused: model ")
    assert result.reply.endswith("is not selectable; choose one of: gpt-4o, gpt-5, o4-mini")
    assert result.settings is None


async def test_model_ignores_surrounding_whitespace_only() -> None:
    result = await answer("/model   gpt-5  \n")
    assert result.settings == TaskSettings(model="gpt-5")


# -- /effort --


async def test_effort_shows_provider_default_when_nothing_is_set() -> None:
    result = await answer("/effort")
    assert result == CommandResult(reply="effort: provider default\nchoices: low, medium, high")


async def test_effort_shows_the_catalog_default_and_the_tasks_own_effort() -> None:
    catalog = ModelCatalog(default="m", selectable=("m",), default_effort="medium")
    own = build_command_registry(catalog).registry
    by_default = await send(own, "/effort")
    assert by_default is not None
    assert by_default.reply.startswith("effort: medium (the default)\n")
    explicit = await send(
        own, "/effort", task=snapshot(settings=TaskSettings(reasoning_effort="low"))
    )
    assert explicit is not None
    assert explicit.reply.startswith("effort: low\n")


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
async def test_effort_sets_one_of_the_three_and_keeps_the_model(effort: str) -> None:
    result = await answer(f"/effort {effort}", settings=TaskSettings(model="gpt-5"))
    assert result == CommandResult(
        reply=f"effort set to {effort}",
        settings=TaskSettings.model_validate({"model": "gpt-5", "reasoning_effort": effort}),
    )


@pytest.mark.parametrize("effort", ["extreme", "HIGH", "minimal", "low high"])
async def test_effort_refuses_anything_else(effort: str) -> None:
    result = await answer(f"/effort {effort}")
    assert result.reply.startswith("refused: effort ")
    assert result.reply.endswith("is not one of: low, medium, high")
    assert result.settings is None


# -- /sub-task --


async def test_sub_task_asks_for_a_child_with_the_description_as_goal() -> None:
    result = await answer("/sub-task  book the hotel\nnear the station ")
    assert result == CommandResult(
        reply="starting a sub-task", spawn=SpawnRequest(goal="book the hotel\nnear the station")
    )


async def test_sub_task_without_a_description_replies_with_its_usage() -> None:
    for text in ("/sub-task", "/sub-task   ", "/sub-task \n\t"):
        assert await answer(text) == CommandResult(reply=SUB_TASK_USAGE)


async def test_sub_task_refuses_a_description_too_long_for_a_goal() -> None:
    result = await answer("/sub-task " + "x" * (TEXT_MAX + 1))
    assert result.reply == f"refused: the description is longer than {TEXT_MAX} characters"
    assert result.spawn is None


# -- /status --


async def test_status_reports_the_task_settings_plan_children_and_usage() -> None:
    used = TaskUsage(model_calls=4, input_tokens=12_500, output_tokens=800, tool_calls=3)
    by_children = TaskUsage(model_calls=1, input_tokens=500, output_tokens=50)
    result = await answer("/status", "bob", usage=used, sub_task_usage=by_children)
    assert result == CommandResult(
        reply="\n".join(
            [
                "task t1 (trip)",
                "state: input-required (awaiting-next-message)",
                "model: gpt-4o (the default)",
                "effort: provider default",
                "plan: 1/3 steps done",
                "sub-tasks:",
                "  t1.1: working",
                "  t1.2: completed",
                "usage: 4 model calls, 12,500 tokens in, 800 out, 3 tool calls",
                "usage with sub-tasks: 5 model calls, 13,000 tokens in, 850 out, 3 tool calls",
            ]
        )
    )


async def test_status_of_a_task_without_plan_or_children() -> None:
    result = await answer(
        "/status",
        name="",
        state=TaskState.WORKING,
        sub_state=None,
        settings=TaskSettings(model="gpt-5", reasoning_effort="low"),
        steps_done=0,
        steps_total=0,
        children=(),
    )
    assert result.reply == "\n".join(
        [
            "task t1",
            "state: working",
            "model: gpt-5",
            "effort: low",
            "plan: none",
            "sub-tasks: none",
            "usage: 0 model calls, 0 tokens in, 0 out, 0 tool calls",
        ]
    )
    assert not result.has_intents


def test_a_snapshot_is_cut_from_the_stored_task() -> None:
    spec = TaskSpec(name="trip", goal="plan a trip")
    status = TaskStatus(
        state=TaskState.WORKING,
        model="gpt-5",
        reasoning_effort="high",
        plan=Plan(steps=(PlanStep(name="a", done=True), PlanStep(name="b"))),
        sub_tasks=(SubTaskRow(task_id="t1.1", state=TaskState.FAILED),),
    )
    assert TaskSnapshot.of("t1", spec, status) == TaskSnapshot(
        id="t1",
        name="trip",
        state=TaskState.WORKING,
        settings=TaskSettings(model="gpt-5", reasoning_effort="high"),
        steps_done=1,
        steps_total=2,
        children=(ChildSnapshot(task_id="t1.1", state=TaskState.FAILED),),
    )


# -- /budget --


async def test_budget_shows_the_limits_and_what_is_used_with_the_sub_tasks() -> None:
    used = TaskUsage(model_calls=3, input_tokens=900, output_tokens=100)
    result = await answer(
        "/budget",
        "bob",
        usage=used,
        sub_task_usage=TaskUsage(model_calls=1, input_tokens=50),
        budget=Budget(max_tokens=5_000),
    )
    assert result == CommandResult(
        reply="budget: 5,000 tokens (when reached: park)\n"
        "used: 4 model calls, 950 tokens in, 100 out, 0 tool calls"
    )


async def test_budget_sets_one_limit_and_keeps_the_others() -> None:
    current = Budget(max_tokens=5_000, on_exceeded="fail")
    result = await answer("/budget calls 40", "alice", budget=current)
    assert result.budget == Budget(max_tokens=5_000, max_model_calls=40, on_exceeded="fail")
    assert result.reply == "budget set: 5,000 tokens and 40 model calls (when reached: fail)"


@pytest.mark.parametrize(
    "arguments", ["tokens", "tokens -5", "tokens 0", "cups 5", "tokens 5 6", f"calls {10**13}"]
)
async def test_budget_refuses_what_is_not_a_limit_and_a_number(arguments: str) -> None:
    result = await answer(f"/budget {arguments}", "alice")
    assert result.reply.startswith("refused: ")
    assert "usage: /budget" in result.reply
    assert result.budget is None


@pytest.mark.parametrize(
    ("sender", "allowed"), [("agent", False), ("bob", False), ("alice", True), ("root", True)]
)
async def test_only_a_reporter_or_an_admin_changes_the_budget(sender: str, allowed: bool) -> None:
    result = await answer("/budget tokens 100", sender)
    assert (result.budget is not None) is allowed
    if not allowed:
        assert result.reply == "refused: " + refusal_text(BUDGET, sender, ROLES[sender], "t1")
