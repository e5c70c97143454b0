"""When a finished task is deleted (``core/retention.py``): the completion time a status patch
carries, and the seconds left before the task is collected."""

from __future__ import annotations

import datetime as dt

import pytest

from tiny_harness.core.retention import expires_in, rfc3339, with_completion_time
from tiny_harness.core.states import TaskState

NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize("state", [s for s in TaskState if s.is_terminal], ids=lambda s: s.value)
def test_every_terminal_state_written_carries_its_completion_time(state: TaskState) -> None:
    patch = with_completion_time({"state": state.value, "message": "done"}, NOW)
    assert patch == {
        "state": state.value,
        "message": "done",
        "completionTime": "2026-11-30T12:00:00.000Z",
    }


def test_any_other_state_clears_it_so_a_resumed_conversation_is_not_finished() -> None:
    patch = with_completion_time({"state": TaskState.WORKING.value}, NOW)
    assert patch == {"state": TaskState.WORKING.value, "completionTime": None}


def test_a_patch_without_a_state_or_with_its_own_time_is_left_alone() -> None:
    assert with_completion_time({"subTasks": []}, NOW) == {"subTasks": []}
    own = {"state": TaskState.COMPLETED.value, "completionTime": "2026-01-01T00:00:00Z"}
    assert with_completion_time(own, NOW) == own


def test_the_time_left_counts_from_the_completion_time() -> None:
    ended = rfc3339(NOW - dt.timedelta(seconds=100))
    assert expires_in(TaskState.COMPLETED, ended, 3600, NOW) == 3500
    assert expires_in(TaskState.CANCELED, ended, 60, NOW) == -40
    assert expires_in(TaskState.FAILED, ended, 0, NOW) == -100


@pytest.mark.parametrize(
    ("state", "completion", "ttl"),
    [
        (TaskState.INPUT_REQUIRED, "2026-11-30T11:00:00Z", 1),  # parked: never collected
        (TaskState.WORKING, "2026-11-30T11:00:00Z", 1),
        (TaskState.COMPLETED, "2026-11-30T11:00:00Z", None),  # no time to live: kept
        (TaskState.COMPLETED, None, 1),  # ended before the time was recorded: kept
        (TaskState.COMPLETED, "yesterday", 1),  # unreadable: kept, never guessed
        (None, "2026-11-30T11:00:00Z", 1),
    ],
)
def test_a_task_is_never_collected_without_an_end_a_time_to_live_and_a_readable_time(
    state: TaskState | None, completion: str | None, ttl: int | None
) -> None:
    assert expires_in(state, completion, ttl, NOW) is None
