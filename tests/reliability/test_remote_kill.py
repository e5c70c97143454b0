"""SIGKILL of the operator mid-delegation to a remote agent, at each of the sub-task's journal
writes: 1, the brief taken (not yet sent); 2, the send recorded with the remote task's id (the
remote agent at work); 3, the remote task's answer recorded (the sub-task's end not yet
written). After a restart the sub-task ends with the remote answer, and nothing was sent to
the remote agent twice: one remote task, one message."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.integration.lifecycle_support import Tasks
from tests.integration.remote_support import (
    CHILD,
    ON_REMOTE,
    RemoteHarness,
    delegating,
    start_delegating,
)
from tests.reliability.test_faults import died

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

BOUNDARIES = (1, 2, 3)


@pytest.mark.parametrize("boundary", BOUNDARIES)
async def test_a_killed_operator_never_sends_a_remote_agent_anything_twice(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    remote: RemoteHarness,
    boundary: int,
) -> None:
    child = CHILD
    await model_server.control.script(
        delegating({"type": "text", "text": "The market grew 5%.", "delay_seconds": 2})
    )
    doomed = operator(env={"TINY_HARNESS_FAILPOINT": f"kill-after-write:{boundary}@{child}"})
    await start_delegating(kubectl, tasks, remote.card_url)
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
    remote_calls = [r for r in await model_server.control.requests() if ON_REMOTE in str(r.body)]
    assert len(remote_calls) == 1  # the remote agent did the work once
