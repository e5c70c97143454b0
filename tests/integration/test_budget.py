"""A task's budget (``spec.budget``, ``/budget``), on the real control plane with the operator
and the scripted model: reached, the task waits (awaiting-budget) until a reporter raises it,
or fails when its budget says so; an assignee may not raise their own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import ModelServer, OperatorProcess
from tests.eventually import NotYet, eventually_async
from tests.integration.lifecycle_support import Tasks

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]
TEAM = [
    {"id": "alice", "role": "assignee"},
    {"id": "carol", "role": "reporter"},
]


async def test_a_task_waits_at_its_budget_until_a_reporter_raises_it(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "First answer."}, {"type": "text", "text": "Second answer."}]
    )
    operator()
    await tasks.create("thrifty", participants=TEAM, budget={"maxModelCalls": 1})
    await tasks.send("thrifty", "One.")
    await tasks.wait("thrifty", "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-next-message")

    await tasks.send("thrifty", "Two.")
    waiting = await tasks.wait("thrifty", "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-budget")
    assert "1 of 1 model calls" in waiting["message"]
    assert len(await model_server.control.requests()) == 1

    await tasks.send("thrifty", "/budget calls 5", sender="alice")
    refused = await tasks.wait_agent_message("thrifty", "may not change the budget")
    assert "alice is an assignee" in refused.text
    await tasks.send("thrifty", "/budget calls 5", sender="carol")
    await tasks.wait_agent_message("thrifty", "budget set: 5 model calls")

    resumed = await tasks.wait(
        "thrifty", "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-next-message", turn=3
    )
    assert resumed["message"] == "Second answer."
    assert resumed["budget"] == {"maxModelCalls": 5, "onExceeded": "park"}
    assert resumed["usage"]["modelCalls"] == 2


async def test_a_task_whose_budget_says_fail_fails_when_it_is_reached(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    operator()
    budget = {"maxModelCalls": 1, "onExceeded": "fail"}
    await tasks.create("strict", participants=TEAM, budget=budget)
    await tasks.send("strict", "One.")
    await tasks.wait("strict", "TASK_STATE_INPUT_REQUIRED", turn=1)

    await tasks.send("strict", "Two.")
    failed = await tasks.wait("strict", "TASK_STATE_FAILED")

    error = next(c for c in failed["conditions"] if c["type"] == "Error")
    assert error["reason"] == "BudgetExceeded"
    assert "1 of 1 model calls" in failed["message"]


async def test_a_parents_budget_bounds_its_sub_tasks_and_raising_it_frees_the_tree(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """The parent may make one model call in all: it spends it spawning a child, so the
    child waits for budget without calling the model; raising the parent's frees the child."""
    spawn = {"name": "spawn_subtask", "arguments": {"goal": "Count to three."}}
    await model_server.control.script(
        [
            {"type": "tool_calls", "calls": [spawn]},
            {"type": "text", "text": "One, two, three.", "when": "working on task lead-"},
            {"type": "text", "text": "Counted."},
            {"type": "text", "text": "Counted."},
        ]
    )
    operator()
    await tasks.create("lead", participants=TEAM, budget={"maxModelCalls": 1})
    await tasks.send("lead", "Delegate the counting.")

    [child] = await eventually_children(tasks, "lead")
    name = child["metadata"]["name"]
    waiting = await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-budget")
    assert "the budget of task lead, which its sub-tasks share" in waiting["message"]
    assert len(await model_server.control.requests()) == 1

    await tasks.send("lead", "/budget calls 10", sender="carol")
    done = await tasks.wait(name, "TASK_STATE_COMPLETED", within=60)
    assert done["message"] == "One, two, three."


async def eventually_children(tasks: Tasks, parent: str) -> list[dict[str, Any]]:
    async def some() -> list[dict[str, Any]] | NotYet:
        found = await tasks.children(parent)
        return found if found else NotYet(found)

    return await eventually_async(some, within=30, what=f"a sub-task of {parent}")


async def test_a_grandchilds_spend_counts_against_the_roots_budget_and_stops_the_tree(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """A tree three levels deep (lead, its /sub-task, that one's /sub-task): only the
    grandchild calls the model, and lead's budget of two calls stops it at its third
    message; raising lead's budget frees it."""
    await model_server.control.script(
        [
            {"type": "text", "text": "First answer."},
            {"type": "text", "text": "Second answer."},
            {"type": "text", "text": "Third answer."},
        ]
    )
    operator()
    await tasks.create("lead", participants=TEAM, budget={"maxModelCalls": 2})
    await tasks.send("lead", "/sub-task Plan the party.")
    [middle] = await eventually_children(tasks, "lead")
    mid = str(middle["metadata"]["name"])
    await tasks.send(mid, "/sub-task Plan the cake.")
    [below] = await eventually_children(tasks, mid)
    leaf = str(below["metadata"]["name"])

    for turn, text in enumerate(("One.", "Two."), start=1):
        await tasks.send(leaf, text)
        await tasks.wait(leaf, "TASK_STATE_INPUT_REQUIRED", turn=turn)
    await tasks.send(leaf, "Three.")
    waiting = await tasks.wait(leaf, "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-budget")

    assert waiting["message"] == (
        "This task has used its budget (the budget of task lead, which its sub-tasks share: "
        "2 model calls (when reached: park)) and waits: a reporter or an admin raises it with "
        "/budget tokens <n> or /budget calls <n>."
    )
    assert len(await model_server.control.requests()) == 2

    await tasks.send("lead", "/budget calls 5", sender="carol")
    resumed = await tasks.wait(
        leaf, "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-next-message", turn=4
    )
    assert resumed["message"] == "Third answer."
