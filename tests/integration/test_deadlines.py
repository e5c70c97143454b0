"""How long a task may work and wait (``core/deadlines.py``), on the real control plane with
the real operator and the scripted model: a turn past ``activeDeadlineSeconds`` is cut, parked
time does not count, and ``inputTimeoutSeconds`` fails or completes a task nobody answers."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.integration.lifecycle_support import Tasks
from tiny_harness.core.retention import parse_time

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


def error_condition(status: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == "Error")


async def test_a_turn_past_the_active_deadline_is_cut_and_the_task_fails(
    tasks: Tasks, operator: Operator, model_server: ModelServer, kubectl: Kubectl
) -> None:
    await model_server.control.script([{"type": "text", "text": "Slow.", "delay_seconds": 60}])
    operator()
    await tasks.create("slow", activeDeadlineSeconds=2)
    await tasks.wait("slow", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("slow", "Think for a minute.")

    failed = await tasks.wait("slow", "TASK_STATE_FAILED", within=30)

    assert error_condition(failed)["reason"] == "DeadlineExceeded"
    assert "activeDeadlineSeconds (2s)" in failed["message"]
    assert 2 <= failed["activeSeconds"] < 20
    assert "turnStartTime" not in failed
    events = kubectl.get_json("events")["items"]
    assert "DeadlineExceeded" in [e["reason"] for e in events]


async def test_parked_time_does_not_count_against_the_active_deadline(
    tasks: Tasks, operator: Operator, model_server: ModelServer, kubectl: Kubectl
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}]
    )
    operator()
    await tasks.create("patient", activeDeadlineSeconds=4)
    await tasks.send("patient", "First.")
    first = await tasks.wait("patient", "TASK_STATE_INPUT_REQUIRED", turn=1)
    parked_at = parse_time(first["waitingSince"])
    assert parked_at is not None
    # Wall time passes while it waits for a participant, more than the whole deadline.
    waited = (dt.datetime.now(dt.UTC) - parked_at).total_seconds()
    await asyncio.sleep(max(5 - waited, 0))

    await tasks.send("patient", "Second.")
    second = await tasks.wait("patient", "TASK_STATE_INPUT_REQUIRED", turn=2)

    assert second["activeSeconds"] < 4
    assert (await tasks.wait_agent_message("patient", "Two.")).text == "Two."
    wide = kubectl.run("get", "ht", "patient", "-o", "wide").stdout
    header, row = wide.splitlines()
    assert "ACTIVE-S" in header
    assert "DEADLINE-S" in header
    assert " 4 " in f" {row} "


@pytest.mark.parametrize("on_timeout", ["fail", "complete"])
async def test_a_task_nobody_answers_within_its_input_timeout_fails_or_completes(
    on_timeout: str, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    operator()
    await tasks.create("quiet", inputTimeoutSeconds=1, onTimeout=on_timeout)
    started = time.monotonic()

    if on_timeout == "fail":
        ended = await tasks.wait("quiet", "TASK_STATE_FAILED", within=30)
        assert error_condition(ended)["reason"] == "InputTimeout"
        assert "inputTimeoutSeconds (1s)" in ended["message"]
    else:
        ended = await tasks.wait("quiet", "TASK_STATE_COMPLETED", within=30)
        assert ended["message"] == "completed: no participant answered within 1s (onTimeout)"
    assert time.monotonic() - started >= 1
    assert "waitingSince" not in ended
    assert ended["completionTime"]


@pytest.mark.parametrize("on_idle", ["complete", "cancel"])
async def test_a_conversation_with_no_next_message_within_its_idle_timeout_ends(
    on_idle: str, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Done for now."}])
    operator()
    await tasks.create("idle", idleTimeoutSeconds=2, onIdle=on_idle)
    await tasks.send("idle", "One thing.")
    await tasks.wait("idle", "TASK_STATE_INPUT_REQUIRED", turn=1)
    started = time.monotonic()

    if on_idle == "complete":
        ended = await tasks.wait("idle", "TASK_STATE_COMPLETED", within=30)
        assert ended["message"] == "completed: no message for 2s (idle timeout)"
    else:
        ended = await tasks.wait("idle", "TASK_STATE_CANCELED", within=30)
        assert ended["message"] == "cancelled: no message for 2s (idle timeout)"
    assert time.monotonic() - started >= 1
    assert ended["completionTime"]


async def test_the_input_timeout_counts_from_a_turn_that_parks_the_task(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """The pass after a turn schedules the timeout the turn's park starts; nothing else needs
    to happen to the task for it to run out."""
    await model_server.control.script([{"type": "text", "text": "Anything else?"}])
    operator()
    await tasks.create("after", inputTimeoutSeconds=2)
    await tasks.send("after", "One thing.")
    await tasks.wait("after", "TASK_STATE_INPUT_REQUIRED", turn=1)

    ended = await tasks.wait("after", "TASK_STATE_FAILED", within=30)
    assert error_condition(ended)["reason"] == "InputTimeout"
