"""Commands on the real operator: they answer without the model, never change the task's
state, and their settings reach the next model request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.integration.lifecycle_support import Tasks

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


async def reply_to(tasks: Tasks, task: str, message_id: str, within: float = 20) -> Any:
    """The agent's reply to one command message."""

    async def replied() -> Any:
        said = await tasks.transcript(task)
        ids = [m.message_id for m in said]
        after = said[ids.index(message_id) + 1 :] if message_id in ids else []
        return next((m for m in after if m.role == "agent" and m.metadata.get("command")), None)

    return await eventually_async(replied, within=within, what=f"a reply to {message_id} in {task}")


async def parked(tasks: Tasks, operator: Operator, name: str = "steer") -> dict[str, Any]:
    operator()
    await tasks.create(name)
    return await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED")


async def test_status_answers_without_the_model_and_leaves_the_state_as_it_was(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    before = await parked(tasks, operator)

    reply = await reply_to(tasks, "steer", await tasks.send("steer", "/status"))

    assert reply.metadata == {"command": "status"}
    for expected in ("steer", "input-required (awaiting-next-message)", "scripted-model"):
        assert expected in reply.text
    after = await tasks.status("steer")
    assert (after["state"], after.get("subState")) == (before["state"], before.get("subState"))
    assert after["turn"] == before.get("turn", 0)
    assert await model_server.control.requests() == []


async def test_model_and_effort_change_the_next_model_request(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await parked(tasks, operator)

    await reply_to(tasks, "steer", await tasks.send("steer", "/model scripted-large"))
    await reply_to(tasks, "steer", await tasks.send("steer", "/effort high"))
    status = await tasks.status("steer")
    await tasks.send("steer", "Go on.")
    await tasks.wait("steer", "TASK_STATE_INPUT_REQUIRED", turn=1)

    assert status["model"] == "scripted-large"
    assert status["reasoningEffort"] == "high"
    [request] = await model_server.control.requests()
    assert request.body["model"] == "scripted-large"
    assert request.body["reasoning"] == {"effort": "high"}


async def test_an_unlisted_model_is_refused_and_nothing_changes(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await parked(tasks, operator)

    reply = await reply_to(tasks, "steer", await tasks.send("steer", "/model gpt-evil"))

    assert "scripted-model" in reply.text
    assert "scripted-large" in reply.text
    assert (await tasks.status("steer"))["model"] == "scripted-model"


async def test_a_watcher_may_not_change_the_model(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await parked(tasks, operator)

    reply = await reply_to(
        tasks, "steer", await tasks.send("steer", "/model scripted-large", sender="bob")
    )

    assert reply.text.startswith("refused:")
    assert (await tasks.status("steer"))["model"] == "scripted-model"


async def test_sub_task_creates_a_parked_conversation_child_that_inherits_the_settings(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await parked(tasks, operator)
    await reply_to(tasks, "steer", await tasks.send("steer", "/effort low"))

    reply = await reply_to(tasks, "steer", await tasks.send("steer", "/sub-task Draft an outline"))

    child = reply.metadata["task_ref"]
    assert reply.text.endswith(f"Created sub-task {child}")
    status = await tasks.wait(child, "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-next-message")
    assert status["lifecycle"] == "conversation"
    assert status["reasoningEffort"] == "low"
    spec = (await tasks.tasks.get(child))["spec"]
    assert spec["goal"] == "Draft an outline"
    assert {"id": "alice", "role": "reporter"} in spec["participants"]
    assert spec["parent"] == {"taskId": "steer"}
    assert await model_server.control.requests() == []
    parent = await tasks.status("steer")
    assert parent["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_an_unregistered_slash_name_reaches_the_model_as_text(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await parked(tasks, operator)

    await tasks.send("steer", "/unknown hi")
    await tasks.wait("steer", "TASK_STATE_INPUT_REQUIRED", turn=1)

    [request] = await model_server.control.requests()
    assert "/unknown hi" in str(request.body["input"])


async def test_a_command_during_a_turn_runs_at_once_and_applies_from_the_next_request(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "delay_seconds": 2,
                "calls": [{"name": "create_plan", "arguments": {"steps": [{"name": "one"}]}}],
            },
            {"type": "text", "text": "Planned."},
        ]
    )
    await parked(tasks, operator)
    await tasks.send("steer", "Plan it.")
    await eventually_async(
        model_server.control.requests, within=10, what="the turn to call the model", interval=0.02
    )

    reply = await reply_to(tasks, "steer", await tasks.send("steer", "/model scripted-large"))
    assert (await tasks.status("steer"))["state"] == "TASK_STATE_WORKING"

    await tasks.wait("steer", "TASK_STATE_INPUT_REQUIRED", turn=1)
    first, second = await model_server.control.requests()
    assert "scripted-large" in reply.text
    assert first.body["model"] == "scripted-model"
    assert second.body["model"] == "scripted-large"
