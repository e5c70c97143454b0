"""What a status holds stays within its bounds however big the tree or the plan
(core/sizes.py): a row names its child with an excerpt of its goal, a spawn past the most
sub-tasks a task may have is refused to the model, and a plan's step texts are cut."""

from __future__ import annotations

from tiny_harness.core.intrinsics import create_task_for_participant, spawn_subtask
from tiny_harness.core.reach import Reach
from tiny_harness.core.sizes import MAX_SUB_TASKS, PLAN_TEXT_CHARS, ROW_GOAL_CHARS
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import SubTaskRow, TaskExtension
from tiny_harness.operator.children import row_of
from tiny_harness.operator.status_writes import bounded


def child(goal: str) -> dict[str, object]:
    return {
        "metadata": {"name": "lead-sub-1"},
        "spec": {"goal": goal},
        "status": {"state": "TASK_STATE_WORKING"},
    }


def test_a_row_carries_an_excerpt_of_a_long_goal() -> None:
    row = row_of(child("g" * 70_000), set())
    assert len(row.goal) == ROW_GOAL_CHARS
    assert row.goal.endswith("[... cut at 512 of 70000 characters]")
    assert row_of(child("Write the docs."), set()).goal == "Write the docs."


def full_task() -> TaskExtension:
    rows = tuple(
        SubTaskRow(task_id=f"lead-sub-{i}", state=TaskState.WORKING) for i in range(MAX_SUB_TASKS)
    )
    return TaskExtension(goal="Lead.", sub_tasks=rows)


def test_a_spawn_past_the_most_sub_tasks_is_refused_to_the_model() -> None:
    result = spawn_subtask(
        full_task(), {"goal": "One more."}, task_id="lead", step_id="s1", reach=Reach()
    )
    assert result.spawn is None
    assert result.is_error
    assert f"this task has {MAX_SUB_TASKS} sub-tasks, the most one task may have" in (
        result.content
    )


def test_a_question_past_the_most_sub_tasks_is_refused_too() -> None:
    args = {"participant": "alice", "goal": "Red or blue?"}
    result = create_task_for_participant(
        full_task(), args, task_id="lead", step_id="s1", reach=Reach()
    )
    assert result.spawn is None
    assert result.is_error


def test_a_plans_step_texts_are_cut_in_the_status() -> None:
    steps = [{"name": "draft", "description": "d" * 10_000, "output": "o" * 100_000}]
    patch = bounded({"plan": {"steps": steps}})
    [step] = patch["plan"]["steps"]
    assert step["name"] == "draft"
    assert len(step["description"]) == PLAN_TEXT_CHARS
    assert len(step["output"]) == PLAN_TEXT_CHARS
    assert step["output"].endswith("of 100000 characters]")
