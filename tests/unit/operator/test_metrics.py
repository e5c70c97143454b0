"""The tasks-by-state gauge follows each task's moves and deletion; tool calls are timed."""

from __future__ import annotations

import inspect

from tiny_harness.core.llm import ToolSpec
from tiny_harness.core.tools import ToolContext, ToolRegistry
from tiny_harness.operator.metrics import OperatorMetrics, metered_tools


def gauge(metrics: OperatorMetrics, state: str) -> float | None:
    return metrics.registry.get_sample_value("tiny_harness_tasks", {"state": state})


def test_a_task_is_counted_once_in_its_current_state() -> None:
    metrics = OperatorMetrics()
    metrics.task_state("ns", "a", "TASK_STATE_SUBMITTED")
    metrics.task_state("ns", "b", "TASK_STATE_SUBMITTED")
    metrics.task_state("ns", "a", "TASK_STATE_WORKING")
    metrics.task_state("ns", "a", "TASK_STATE_WORKING")

    assert gauge(metrics, "TASK_STATE_SUBMITTED") == 1
    assert gauge(metrics, "TASK_STATE_WORKING") == 1


def test_a_deleted_task_leaves_the_count() -> None:
    metrics = OperatorMetrics()
    metrics.task_state("ns", "a", "TASK_STATE_COMPLETED")
    metrics.task_state("ns", "a", None)
    metrics.task_state("ns", "gone-already", None)

    assert gauge(metrics, "TASK_STATE_COMPLETED") == 0


async def test_each_tool_call_is_timed_by_the_tools_name_and_still_answers() -> None:
    metrics = OperatorMetrics()
    registry = ToolRegistry()
    registry.add(
        ToolSpec(name="look", description="Look.", parameters={"type": "object"}),
        lambda args, context: "seen",
    )
    [look] = list(metered_tools(registry, metrics))
    assert look.function is not None

    result = look.function({}, ToolContext(task_id="t", call_id="c"))
    answered = await result if inspect.isawaitable(result) else result

    assert answered == "seen"
    count = metrics.registry.get_sample_value(
        "tiny_harness_tool_call_duration_seconds_count", {"tool": "look"}
    )
    assert count == 1
