"""Participant tasks end to end: an agent puts a question to a person with
``create_task_for_participant``; the task shows in that person's ``kubectl harness list`` and
over A2A, waits for their answer, and the answer (through kubectl or the gateway) completes it
and wakes the parent, whose model reads it. Anyone else's words leave it waiting. Real control
plane, operator, gateway and scripted model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from a2a.types import TaskState as A2AState

from tests.conftest import ModelServer, OperatorProcess
from tests.integration.gateway_support import Replicas, Users, states
from tests.integration.kubectl_support import Harness
from tests.integration.lifecycle_support import Tasks
from tests.integration.question_support import carol_is_asked

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


def inputs(request: Any) -> str:
    return json.dumps((request.body or {}).get("input", []))


async def test_the_person_answers_with_kubectl_and_the_answer_wakes_the_parent(
    harness: Harness, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    child = await carol_is_asked(
        model_server, operator, tasks, approved="Carol approved: going ahead."
    )

    listed = await harness.run("list", participant="carol")
    assert listed.returncode == 0, listed.stderr
    [row] = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert row[:5] == [child, "INPUT_REQUIRED", "awaiting-answer", "participant", "assignee"]

    answered = await harness.run("send", child, "Approved,", "up to 40k.", participant="carol")
    assert answered.returncode == 0, answered.stderr

    done = await tasks.wait(child, "TASK_STATE_COMPLETED")
    assert done["message"] == "answered by carol: Approved, up to 40k."
    parent = await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED", turn=2)
    assert parent["message"] == "Carol approved: going ahead."
    [row_seen] = parent["subTasks"]
    assert (row_seen["taskId"], row_seen["state"]) == (child, "TASK_STATE_COMPLETED")
    last = (await model_server.control.requests())[-1]
    assert "answered by carol: Approved, up to 40k." in inputs(last)
    # No model call was made for the participant task itself.
    assert len(await model_server.control.requests()) == 3


async def test_a_watchers_answer_is_refused_and_the_task_waits_on_for_its_person(
    harness: Harness, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    child = await carol_is_asked(model_server, operator, tasks, approved=None)

    refused = await harness.run("send", child, "I approve it myself.", "--wait")

    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "Error: refused: this task waits for carol's answer; a message from alice does not "
        "answer it"
    )
    status = await tasks.wait(child, "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-answer")
    assert status["turn"] == 0  # no turn took alice's words
    assert (await tasks.status("release"))["turn"] == 1  # and the parent was not woken


async def test_the_person_answers_over_a2a_and_sees_the_task_in_their_list(
    gateway: Replicas, users: Users, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    child = await carol_is_asked(model_server, operator, tasks, approved=None)
    carol = await users(gateway().url, "carol")

    page = await carol.list()
    assert [t.id for t in page.tasks] == [child]
    events = await asyncio.wait_for(carol.send("Approved.", task_id=child), 20)

    assert states(events)[-1] == "TASK_STATE_COMPLETED"
    final = events[-1].status_update.status
    assert final.state == A2AState.TASK_STATE_COMPLETED
    assert final.message.parts[0].text == "answered by carol: Approved."
    await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED", turn=2)
