"""A budget bounds the whole tree below it (core/usage.py tree_budget): a task's model calls
are held to the least room left by its own budget and by each ancestor's, and a budget
reached says whose it is."""

from __future__ import annotations

from tiny_harness.core.task import Budget, TaskUsage
from tiny_harness.core.usage import tree_budget

NONE = TaskUsage()


def calls(n: int) -> TaskUsage:
    return TaskUsage(model_calls=n)


def test_no_budget_anywhere_bounds_nothing() -> None:
    assert tree_budget(None, calls(5), [("lead", None, calls(9))]) is None


def test_a_task_alone_is_held_to_its_own_budget() -> None:
    held = tree_budget(Budget(max_model_calls=3), calls(1), [])
    assert held is not None
    assert held.exceeded_by(calls(2)) is None
    assert held.exceeded_by(calls(3)) == "3 of 3 model calls"


def test_a_child_gets_no_more_than_its_parent_has_left() -> None:
    # The parent may make 5 calls in all; its tree has made 4 (the child's 1 included).
    held = tree_budget(None, calls(1), [("lead", Budget(max_model_calls=5), calls(4))])
    assert held is not None
    assert held.exceeded_by(calls(1)) is None
    reached = held.exceeded_by(calls(2))
    assert reached == (
        "the budget of task lead, which its sub-tasks share: 5 model calls (when reached: park)"
    )


def test_the_tightest_of_the_ancestors_binds_and_its_on_exceeded_applies() -> None:
    above = [
        ("lead", Budget(max_model_calls=3, on_exceeded="fail"), calls(3)),
        ("root", Budget(max_model_calls=100), calls(50)),
    ]
    held = tree_budget(Budget(max_model_calls=10), NONE, above)
    assert held is not None
    assert held.on_exceeded == "fail"
    assert held.exceeded_by(NONE) is not None  # no room left at all: not one more call


def test_tokens_are_bounded_the_same_way() -> None:
    spent = TaskUsage(input_tokens=900, output_tokens=50)
    held = tree_budget(None, NONE, [("lead", Budget(max_tokens=1000), spent)])
    assert held is not None
    assert held.exceeded_by(TaskUsage(input_tokens=40, output_tokens=9)) is None
    assert held.exceeded_by(TaskUsage(input_tokens=40, output_tokens=10)) is not None


def test_a_raised_root_budget_frees_the_tree() -> None:
    before = tree_budget(None, calls(1), [("lead", Budget(max_model_calls=2), calls(2))])
    after = tree_budget(None, calls(1), [("lead", Budget(max_model_calls=20), calls(2))])
    assert before is not None
    assert before.exceeded_by(calls(1)) is not None
    assert after is not None
    assert after.exceeded_by(calls(1)) is None
