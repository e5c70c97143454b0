"""SIGKILL of the operator mid-delegation to a remote agent, at each of the sub-task's journal
writes: 1, the brief taken (not yet sent); 2, the send recorded with the remote task's id (the
remote agent at work); 3, the remote task's answer recorded (the sub-task's end not yet
written). After a restart the sub-task ends with the remote answer, and nothing was sent to
the remote agent twice: one remote task, one message."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.integration.lifecycle_support import Tasks
from tests.integration.remote_support import RemoteHarness
from tests.integration.test_remote_agents import declare, spawn_on
from tests.reliability.test_faults import died
from tiny_harness.operator.host import child_name

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

BOUNDARIES = (1, 2, 3)


@pytest.fixture
def remote(kubeconfig: Path, tmp_path: Path, model_server: ModelServer) -> Iterator[RemoteHarness]:
    harness = RemoteHarness(kubeconfig, tmp_path / "remote", model_server.url)
    yield harness
    harness.stop()


@pytest.mark.parametrize("boundary", BOUNDARIES)
async def test_a_killed_operator_never_sends_a_remote_agent_anything_twice(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    remote: RemoteHarness,
    boundary: int,
) -> None:
    child = child_name("research", "research/turn-1/tool-0-call-spawn")
    await model_server.control.script(
        [
            spawn_on("market", "Summarise the market"),
            {"type": "text", "text": "Delegated.", "when": "Spawned sub-task"},
            {
                "type": "text",
                "text": "The market grew 5%.",
                "when": "Goal: Summarise the market",
                "delay_seconds": 2,
            },
        ]
    )
    doomed = operator(env={"TINY_HARNESS_FAILPOINT": f"kill-after-write:{boundary}@{child}"})
    await declare(kubectl, "market", remote.card_url)
    await tasks.create("research")
    await tasks.send("research", "Research the market.")
    died(doomed, within=60)

    operator()
    done = await tasks.wait(child, "TASK_STATE_COMPLETED", within=90)

    assert done["message"] == "The market grew 5%."
    [there] = remote.tasks()
    assert there["status"]["state"] == "TASK_STATE_COMPLETED"
    messages = [m["spec"] for m in remote.messages()]
    assert len(messages) == 1, messages  # the brief, once, whatever the moment of the kill
    said = [(m.role, m.text) for m in await tasks.transcript(child)]
    assert said == [("user", "Summarise the market"), ("agent", "The market grew 5%.")]
    remote_calls = [
        r
        for r in await model_server.control.requests()
        if "Goal: Summarise the market" in str(r.body)
    ]
    assert len(remote_calls) == 1  # the remote agent did the work once
