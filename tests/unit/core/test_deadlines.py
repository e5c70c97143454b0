"""How long a task may work and wait (``core/deadlines.py``): the times every status write
carries, and the time left before each bound."""

from __future__ import annotations

import datetime as dt

import pytest

from tiny_harness.core.deadlines import (
    active_seconds,
    deadline_left,
    first_message_left,
    input_time_left,
    stamped,
)
from tiny_harness.core.states import TaskState

NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
TEN_AGO = "2026-11-30T11:59:50Z"


def test_a_turn_that_ends_adds_its_time_to_the_working_time() -> None:
    running = {"activeSeconds": 5.0, "turnStartTime": TEN_AGO, "runner": {"holder": "op"}}

    patch = stamped({"state": "TASK_STATE_INPUT_REQUIRED", "runner": None}, running, NOW)

    assert patch["activeSeconds"] == 15.0
    assert patch["turnStartTime"] is None
    assert patch["waitingSince"] == "2026-11-30T12:00:00.000Z"
    assert patch["completionTime"] is None


def test_parked_time_is_not_working_time() -> None:
    parked = {"activeSeconds": 15.0, "waitingSince": TEN_AGO, "state": "TASK_STATE_INPUT_REQUIRED"}
    assert active_seconds(parked, NOW) == 15.0
    assert deadline_left(20, parked, NOW) == 5.0
    assert deadline_left(None, parked, NOW) is None


def test_the_running_turn_counts_while_it_runs() -> None:
    running = {"activeSeconds": 5.0, "turnStartTime": TEN_AGO, "runner": {"holder": "op"}}
    assert active_seconds(running, NOW) == 15.0
    assert deadline_left(12, running, NOW) == -3.0


def test_a_write_that_clears_no_runner_leaves_the_working_time_alone() -> None:
    assert stamped({"subTasks": []}, {"turnStartTime": TEN_AGO}, NOW) == {"subTasks": []}
    assert "activeSeconds" not in stamped({"runner": None}, {"activeSeconds": 3}, NOW)


@pytest.mark.parametrize("state", ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"])
def test_leaving_the_wait_clears_waiting_since(state: str) -> None:
    assert stamped({"state": state}, {}, NOW)["waitingSince"] is None


def test_the_input_timeout_counts_from_waiting_since_and_only_while_waiting() -> None:
    waiting = {"state": TaskState.INPUT_REQUIRED.value, "waitingSince": TEN_AGO}
    assert input_time_left(60, waiting, NOW) == 50.0
    assert input_time_left(5, waiting, NOW) == -5.0
    assert input_time_left(None, waiting, NOW) is None
    working = {"state": TaskState.WORKING.value, "waitingSince": TEN_AGO}
    assert input_time_left(5, working, NOW) is None
    assert input_time_left(5, {"state": TaskState.INPUT_REQUIRED.value}, NOW) is None


def test_the_wait_for_an_announced_first_message_counts_from_the_tasks_start() -> None:
    accepted = {"state": "TASK_STATE_SUBMITTED", "startTime": TEN_AGO}

    assert first_message_left(30.0, accepted, NOW) == 20.0
    assert first_message_left(4.0, accepted, NOW) == -6.0


def test_a_status_without_a_start_has_waited_long_enough_for_its_first_message() -> None:
    assert first_message_left(30.0, {"state": "TASK_STATE_SUBMITTED"}, NOW) == 0.0
