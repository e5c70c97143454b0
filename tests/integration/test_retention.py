"""Finished tasks are deleted with everything they own once their time to live after the end
has passed (``core/retention.py``), on the real control plane with its garbage collector: the
operator deletes the task, and its turn records, sub-tasks and messages follow."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import NotYet, eventually_async
from tests.integration.lifecycle_support import Tasks
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.kube.names import API_VERSION, MESSAGE_KIND

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


def leftovers(kubectl: Kubectl) -> dict[str, list[str]]:
    """Every task, message and turn record left in the namespace, by kind."""
    return {
        kind: sorted(o["metadata"]["name"] for o in kubectl.get_json(kind)["items"])
        for kind in ("harnesstasks", "harnessmessages", "harnessturns")
    }


async def until_empty(kubectl: Kubectl, within: float = 60.0) -> None:
    """Until nothing is left in the namespace."""

    async def collected() -> bool | NotYet:
        left = await asyncio.to_thread(leftovers, kubectl)
        return NotYet(left) if any(left.values()) else True

    await eventually_async(collected, within=within, what="everything collected", interval=0.2)


async def until_gone(kubectl: Kubectl, task: str, within: float = 30.0) -> None:
    """Until the task of that name is collected."""

    async def gone() -> bool | NotYet:
        left = await asyncio.to_thread(leftovers, kubectl)
        return NotYet(left) if task in left["harnesstasks"] else True

    await eventually_async(gone, within=within, what=f"{task} to be collected", interval=0.1)


def unowned_message(task: str, sender: str = "alice") -> str:
    """A message as ``kubectl apply`` of a manifest writes it: no owner reference to its task."""
    name = f"by-hand-{uuid.uuid4().hex[:6]}"
    return (
        f"apiVersion: {API_VERSION}\nkind: {MESSAGE_KIND}\nmetadata:\n  name: {name}\n"
        f"spec:\n  task: {task}\n  messageId: {name}\n  sender: {sender}\n"
        "  parts:\n  - text: And one more thing.\n"
    )


async def test_a_finished_task_is_deleted_with_its_messages_records_and_sub_tasks(
    tasks: Tasks, operator: Operator, model_server: ModelServer, kubectl: Kubectl
) -> None:
    await model_server.control.script(
        [
            {"type": "text", "text": "Hello."},
            {"type": "text", "text": "Still thinking.", "delay_seconds": 30, "when": "outline"},
        ]
    )
    operator()
    task = await tasks.create("release", ttlSecondsAfterFinished=2)
    await tasks.messages.send(
        MessageSpec(
            task="release", message_id="m-1", sender="alice", parts=(MessagePart(text="Hi"),)
        ),
        task=task,
    )
    await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED", turn=1)
    await tasks.send("release", "/sub-task Draft an outline")
    await tasks.wait_agent_message("release", "Created sub-task")
    assert kubectl.apply(unowned_message("release")).returncode == 0
    await tasks.control("release", "cancel")

    ended = await tasks.wait("release", "TASK_STATE_CANCELED")
    assert ended["completionTime"]
    assert ended["startTime"]
    left = leftovers(kubectl)
    assert len(left["harnesstasks"]) == 2  # the task and its sub-task
    assert left["harnessturns"]
    assert len(left["harnessmessages"]) >= 4  # owned ones, and three written without an owner

    await until_empty(kubectl)


async def test_the_operators_default_collects_a_finished_task_and_never_a_parked_one(
    tasks: Tasks, operator: Operator, model_server: ModelServer, kubectl: Kubectl
) -> None:
    operator(ttl_seconds_after_finished=0)
    await tasks.create("parked")
    await tasks.create("cancelled")
    await tasks.wait("parked", "TASK_STATE_INPUT_REQUIRED")
    await tasks.control("cancelled", "cancel")

    await until_gone(kubectl, "cancelled")

    assert leftovers(kubectl)["harnesstasks"] == ["parked"]
    status = await tasks.status("parked")
    assert status["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "completionTime" not in status


async def test_a_spec_ttl_overrides_the_default_and_a_rejected_task_is_collected_too(
    tasks: Tasks, operator: Operator, kubectl: Kubectl
) -> None:
    operator(ttl_seconds_after_finished=3600)
    rejected = {
        "apiVersion": API_VERSION,
        "kind": "HarnessTask",
        "metadata": {"name": "broken"},
        # A plan with a cycle: the CRD takes it, the operator rejects it.
        "spec": {
            "goal": "Go round.",
            "ttlSecondsAfterFinished": 0,
            "plan": {
                "steps": [
                    {"name": "a", "dependencies": ["b"]},
                    {"name": "b", "dependencies": ["a"]},
                ]
            },
        },
    }
    assert kubectl.apply(json.dumps(rejected)).returncode == 0

    await until_gone(kubectl, "broken")
    events = kubectl.get_json("events")["items"]
    assert sorted(e["reason"] for e in events if e["involvedObject"]["name"] == "broken") == [
        "Expired",
        "Rejected",
    ]


async def test_a_finished_task_of_500_turns_is_collected_completely(
    tasks: Tasks, operator: Operator, model_server: ModelServer, kubectl: Kubectl
) -> None:
    """Every one of its 500 turn records and 500 messages goes, not just the task."""
    turns = 500
    operator()
    task = await tasks.create("long", ttlSecondsAfterFinished=1)
    await tasks.wait("long", "TASK_STATE_INPUT_REQUIRED")
    started = time.monotonic()
    for turn in range(1, turns + 1):
        if turn % 100 == 0:
            print(f"turn {turn}: {time.monotonic() - started:.1f}s")
        said = MessageSpec(
            task="long", message_id=f"m-{turn}", sender="alice", parts=(MessagePart(text="Hi"),)
        )
        await tasks.messages.send(said, task=task)
        # Polled often: 500 turns run here.
        await tasks.wait("long", "TASK_STATE_INPUT_REQUIRED", turn=turn, interval=0.005)
    left = leftovers(kubectl)
    assert len(left["harnessturns"]) == turns
    assert len(left["harnessmessages"]) == turns

    await tasks.control("long", "cancel")
    started = time.monotonic()
    await until_empty(kubectl, within=120)
    print(f"collected in {time.monotonic() - started:.1f}s")
