"""Model errors from the scripted server end where a participant sees them: a permanent error
fails the task at once with the setting to fix, a transient one is retried with backoff, and a
persistent one fails the task once the retry budget is spent. Real operator, real control
plane, the real OpenAI SDK against the scripted server; model calls are counted each time."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.integration.lifecycle_support import Tasks
from tiny_harness.kube.crd import REPO_ROOT

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


def error_condition(status: dict[str, Any]) -> dict[str, Any]:
    [condition] = [c for c in status.get("conditions", []) if c["type"] == "Error"]
    return condition


@pytest.mark.parametrize(
    ("turn", "reason", "names"),
    [
        ({"status": 400, "message": "bad field"}, "ModelRequestInvalid", "bad field"),
        ({"status": 401, "message": "no"}, "ModelUnauthorized", "TINY_HARNESS_TEST_MODEL_KEY"),
        ({"status": 404, "message": "no such model"}, "ModelNotFound", "openai.model"),
        ({"status": 400, "context_too_long": True}, "ContextTooLong", "context window"),
    ],
)
async def test_a_permanent_model_error_fails_the_task_within_one_call(
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    kubectl: Kubectl,
    turn: dict[str, Any],
    reason: str,
    names: str,
) -> None:
    await model_server.control.script([{"type": "error", **turn}])
    operator()
    await tasks.create("broken")
    await tasks.wait("broken", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("broken", "Hello?")

    status = await tasks.wait("broken", "TASK_STATE_FAILED", turn=1)

    assert len(await model_server.control.requests()) == 1
    assert names in status["message"]
    assert "Send a message to try again" in status["message"]
    condition = error_condition(status)
    assert condition["status"] == "True"
    assert condition["reason"] == reason
    table = kubectl.run("get", "ht", "broken").stdout
    assert "FAILED" in table


async def test_a_failed_conversation_resumes_on_the_next_message(
    tasks: Tasks, operator: Operator, model_server: ModelServer, kubectl: Kubectl
) -> None:
    await model_server.control.script(
        [{"type": "error", "status": 404, "message": "gone"}, {"type": "text", "text": "Back."}]
    )
    operator()
    await tasks.create("phoenix")
    await tasks.wait("phoenix", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("phoenix", "First try.")
    await tasks.wait("phoenix", "TASK_STATE_FAILED", turn=1)

    # Sent as a participant does, with kubectl harness: a failed conversation takes messages.
    sent = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "tiny_harness.cli.kubectl_plugin",
            "send",
            "phoenix",
            "Second try.",
            f"--kubeconfig={kubectl.kubeconfig}",
            "-n",
            kubectl.namespace,
            "--as-participant",
            "alice",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert sent.returncode == 0, sent.stderr
    status = await tasks.wait("phoenix", "TASK_STATE_INPUT_REQUIRED", turn=2)

    assert status["message"] == "Back."
    assert error_condition(status)["status"] == "False"
    requests = await model_server.control.requests()
    assert len(requests) == 2
    # The failed turn's message is kept in the history the next turn starts from.
    assert "First try." in str(requests[1].body)
    said = [(m.role, m.text) for m in await tasks.transcript("phoenix")]
    assert said == [("user", "First try."), ("user", "Second try."), ("agent", "Back.")]


@pytest.mark.parametrize(
    "transient",
    [
        {"status": 429, "message": "slow down", "retry_after_seconds": 0.3},
        {"status": 503, "message": "overloaded"},
    ],
)
async def test_a_transient_model_error_is_retried_then_the_turn_succeeds(
    tasks: Tasks, operator: Operator, model_server: ModelServer, transient: dict[str, Any]
) -> None:
    await model_server.control.script(
        [{"type": "error", **transient}, {"type": "text", "text": "Made it."}]
    )
    operator()
    await tasks.create("flaky")
    await tasks.wait("flaky", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("flaky", "Try hard.")

    status = await tasks.wait("flaky", "TASK_STATE_INPUT_REQUIRED", turn=1)

    assert status["message"] == "Made it."
    assert len(await model_server.control.requests()) == 2
    assert not [c for c in status.get("conditions", []) if c["type"] == "Error"]


async def test_a_persistent_server_error_fails_the_task_after_the_retry_budget(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    # The test settings allow one retry (openai.max_retries = 1): two calls in all.
    await model_server.control.script(
        [{"type": "error", "status": 503, "message": "down"} for _ in range(5)]
    )
    operator()
    await tasks.create("down")
    await tasks.wait("down", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("down", "Anyone?")

    status = await tasks.wait("down", "TASK_STATE_FAILED", turn=1)

    assert len(await model_server.control.requests()) == 2
    assert error_condition(status)["reason"] == "ModelUnavailable"
    assert "openai.max_retries" in status["message"]


async def test_a_failed_delegated_child_wakes_its_parent(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "calls": [{"name": "spawn_subtask", "arguments": {"goal": "Count."}}],
            },
            # The parent's next call and the child's first race each other: each turn names
            # the request it answers.
            {"type": "text", "text": "Delegated.", "when": "Delegate it."},
            {"type": "error", "status": 404, "message": "no model for the child", "when": "Count."},
            {"type": "text", "text": "The child failed; I will tell Alice."},
        ]
    )
    operator()
    await tasks.create("lead")
    await tasks.wait("lead", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("lead", "Delegate it.")

    await tasks.wait_agent_message("lead", "The child failed", within=40)
    [child] = await tasks.children("lead")
    assert child["status"]["state"] == "TASK_STATE_FAILED"
    status = await tasks.status("lead")
    [row] = status["subTasks"]
    assert row["state"] == "TASK_STATE_FAILED"
