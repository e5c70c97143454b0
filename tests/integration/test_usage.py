"""What a task has used (``core/usage.py``), on the real control plane with the operator and
the scripted model reporting token counts: the task's own usage, its sub-tasks' rolled up into
it, and both shown by ``/status``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import ModelServer, OperatorProcess
from tests.integration.lifecycle_support import Tasks
from tests.integration.test_lifecycle import of_task

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]
PARENT_CALL = {"input_tokens": 100, "output_tokens": 10}


async def test_a_tasks_usage_includes_its_sub_tasks_and_status_shows_both(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    spawn = {"name": "spawn_subtask", "arguments": {"goal": "Count to three."}}
    await model_server.control.script(
        [
            {"type": "tool_calls", "calls": [spawn], **PARENT_CALL},
            {"type": "text", "text": "One, two, three.", "input_tokens": 30,
             "output_tokens": 3, "cached_input_tokens": 12, "when": "working on task parent-"},
            *[{"type": "text", "text": "Noted.", **PARENT_CALL} for _ in range(3)],
        ]
    )  # fmt: skip
    operator()
    await tasks.create("parent")
    await tasks.send("parent", "Please delegate the counting.")
    status = await tasks.wait_children_read("parent")

    [child] = await tasks.children("parent")
    assert child["status"]["usage"] == {
        "modelCalls": 1, "inputTokens": 30, "outputTokens": 3, "cachedInputTokens": 12,
        "toolCalls": 0,
    }  # fmt: skip
    calls = len([r for r in await model_server.control.requests() if of_task(r, "parent")])
    assert status["usage"] == {
        "modelCalls": calls, "inputTokens": 100 * calls, "outputTokens": 10 * calls,
        "cachedInputTokens": 0, "toolCalls": 1,
    }  # fmt: skip
    assert status["subTaskUsage"] == child["status"]["usage"]

    await tasks.send("parent", "/status")
    reply = await tasks.wait_agent_message("parent", "usage:")
    assert f"usage: {calls} model calls, {100 * calls:,} tokens in, {10 * calls} out" in reply.text
    with_child = f"{calls + 1} model calls, {100 * calls + 30:,} tokens in (12 cached)"
    assert f"usage with sub-tasks: {with_child}" in reply.text
