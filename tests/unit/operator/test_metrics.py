"""The tasks-by-state gauge follows each task's moves and deletion."""

from __future__ import annotations

from tiny_harness.operator.metrics import OperatorMetrics


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
