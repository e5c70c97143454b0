"""Task lifecycle on the real operator: turns, conversations, participants, sub-tasks,
durability and metrics. Real control plane, real operator process, scripted model server."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ModelServer, OperatorProcess, free_port
from tests.eventually import NotYet, eventually_async
from tests.integration.lifecycle_support import Tasks

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


def instructions(request: Any) -> str:
    return str((request.body or {}).get("instructions", ""))


def of_task(request: Any, task: str) -> bool:
    return instructions(request).startswith(f"You are the agent working on task {task}.")


def inputs(request: Any) -> str:
    return json.dumps((request.body or {}).get("input", []))


async def test_a_reply_leaves_the_conversation_awaiting_the_next_message_and_a_second_resumes(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "Hello Alice."}, {"type": "text", "text": "Two is 2."}]
    )
    operator()
    await tasks.create("chat")
    await tasks.wait("chat", "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-next-message")

    await tasks.send("chat", "Hi!")
    first = await tasks.wait("chat", "TASK_STATE_INPUT_REQUIRED", turn=1)
    await tasks.send("chat", "And two?")
    second = await tasks.wait("chat", "TASK_STATE_INPUT_REQUIRED", turn=2)

    assert first["subState"] == "awaiting-next-message"
    assert first["message"] == "Hello Alice."
    assert second["message"] == "Two is 2."
    requests = await model_server.control.requests()
    assert len(requests) == 2
    # The second turn's request carries the whole conversation so far.
    assert "Hi!" in inputs(requests[1])
    assert "Hello Alice." in inputs(requests[1])
    said = [(m.role, m.text) for m in await tasks.transcript("chat")]
    assert said == [
        ("user", "Hi!"),
        ("agent", "Hello Alice."),
        ("user", "And two?"),
        ("agent", "Two is 2."),
    ]


async def test_a_delegated_sub_task_completes_on_its_own_and_wakes_its_parent(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "calls": [{"name": "spawn_subtask", "arguments": {"goal": "Count to three."}}],
            },
        ]
    )
    operator()
    await tasks.create("parent")
    await tasks.send("parent", "Please delegate the counting.")

    status = await tasks.wait_children_read("parent")

    [child] = await tasks.children("parent")
    name = child["metadata"]["name"]
    assert child["metadata"]["ownerReferences"][0]["name"] == "parent"
    assert child["status"]["state"] == "TASK_STATE_COMPLETED"
    assert child["status"]["lifecycle"] == "delegated"
    assert child["status"]["model"] == status["model"]
    [row] = status["subTasks"]
    assert row["taskId"] == name
    assert row["state"] == "TASK_STATE_COMPLETED"
    assert not row.get("resultUnread")
    # The child's ending became a note for the parent's model: in the same turn when it
    # ended during the turn, or in a turn it woke.
    parent_requests = [r for r in await model_server.control.requests() if of_task(r, "parent")]
    noted = [r for r in parent_requests if f"Note: sub-task {name}" in inputs(r)]
    assert noted
    assert noted[-1] is parent_requests[-1]
    assert "Count to three." in inputs(parent_requests[-1])


async def test_a_participant_completes_a_conversation(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    operator()
    await tasks.create("done")
    await tasks.send("done", "Thanks.")
    await tasks.wait("done", "TASK_STATE_INPUT_REQUIRED", turn=1)

    await tasks.control("done", "complete", sender="alice")

    status = await tasks.wait("done", "TASK_STATE_COMPLETED")
    assert status["message"] == "completed by alice"
    assert "subState" not in status


async def parent_with_asking_child(
    tasks: Tasks, operator: Operator, model_server: ModelServer, parent: str, goal: str
) -> OperatorProcess:
    """A parked parent with a delegated child ``<parent>-child`` that asked a question, so the
    child stays open (unresolved) until someone answers it; the operator that runs them."""
    running = operator()
    await tasks.create(parent)
    await tasks.wait(parent, "TASK_STATE_INPUT_REQUIRED")
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "calls": [{"name": "ask_participant", "arguments": {"question": "Which?"}}],
            },
        ]
    )
    await tasks.create_child(parent, f"{parent}-child", goal)
    await tasks.wait(f"{parent}-child", "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-answer")
    return running


async def test_completion_is_refused_while_a_sub_task_is_open(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await parent_with_asking_child(tasks, operator, model_server, "holder", "Ask something.")

    # A delegated child's question is news: the parent's row shows it and the parent wakes.
    async def question_shown() -> bool | NotYet:
        row = (await tasks.status("holder"))["subTasks"][0]
        return True if row.get("subState") == "awaiting-answer" else NotYet(row)

    await eventually_async(question_shown, within=20, what="the parent's row to show the question")
    await tasks.wait("holder", "TASK_STATE_INPUT_REQUIRED", turn=1)

    await tasks.control("holder", "complete", sender="alice")

    notice = await tasks.wait_agent_message("holder", "cannot complete")
    assert "holder-child" in notice.text
    status = await tasks.wait("holder", "TASK_STATE_INPUT_REQUIRED")
    assert status["subState"] == "awaiting-next-message"
    assert (await tasks.status("holder-child"))["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_ask_participant_parks_awaiting_an_answer_and_the_answer_resumes(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "calls": [{"name": "ask_participant", "arguments": {"question": "Red or blue?"}}],
            },
            {"type": "text", "text": "Blue it is."},
        ]
    )
    operator()
    await tasks.create("asker")
    await tasks.send("asker", "Pick a colour with me.")

    asked = await tasks.wait("asker", "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-answer")
    assert asked["message"] == "Red or blue?"

    await tasks.send("asker", "Blue.")
    answered = await tasks.wait(
        "asker", "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-next-message", turn=2
    )
    assert answered["message"] == "Blue it is."


async def test_cancelling_a_parent_cancels_its_children(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await parent_with_asking_child(tasks, operator, model_server, "boss", "Wait for me.")

    await tasks.control("boss", "cancel", sender="alice")

    assert (await tasks.wait("boss", "TASK_STATE_CANCELED"))["message"] == "cancelled by alice"
    child = await tasks.wait("boss-child", "TASK_STATE_CANCELED")
    assert child["message"] == "cancelled: its parent task boss has ended (canceled)"


async def test_a_parent_that_ends_while_the_operator_is_away_ends_its_children_after(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """Level-triggered: the parent's end is written and the operator stops before anything
    reaches the child; the next operator sees a child whose parent has ended, and ends it."""
    first = await parent_with_asking_child(tasks, operator, model_server, "lead", "Wait.")
    await tasks.wait("lead", "TASK_STATE_INPUT_REQUIRED")
    first.stop(signal.SIGKILL)
    lead = await tasks.tasks.get("lead")
    await tasks.tasks.patch_status(
        "lead",
        {"state": "TASK_STATE_FAILED", "message": "failed while nobody watched"},
        resource_version=lead["metadata"]["resourceVersion"],
    )
    assert (await tasks.status("lead-child"))["state"] == "TASK_STATE_INPUT_REQUIRED"

    operator()

    child = await tasks.wait("lead-child", "TASK_STATE_CANCELED")
    assert child["message"] == "cancelled: its parent task lead has ended (failed)"


async def test_a_watchers_complete_is_refused_and_the_running_turn_keeps_running(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "Slow answer.", "delay_seconds": 3}]
    )
    operator()
    await tasks.create("slow")
    await tasks.wait("slow", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("slow", "Take your time.")

    async def working() -> bool:
        return (await tasks.status("slow")).get("state") == "TASK_STATE_WORKING"

    await eventually_async(working, within=10, what="the turn to start")

    await tasks.control("slow", "complete", sender="bob")

    status = await tasks.wait("slow", "TASK_STATE_INPUT_REQUIRED", turn=1)
    assert status["message"] == "Slow answer."
    await tasks.wait_agent_message(
        "slow", "refused: bob is a watcher and may not complete the task"
    )
    assert (await tasks.status("slow"))["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_a_participants_complete_cuts_the_running_turn(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "An answer nobody waits for.", "delay_seconds": 6}]
    )
    operator()
    await tasks.create("cut")
    await tasks.wait("cut", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("cut", "Think for a long time.")
    await eventually_async(
        model_server.control.requests, within=10, what="the turn to call the model", interval=0.02
    )

    started = time.monotonic()
    await tasks.control("cut", "complete", sender="alice")
    status = await tasks.wait("cut", "TASK_STATE_COMPLETED", within=20)

    # Completed while the model was still thinking: the turn was cut, not waited for.
    assert time.monotonic() - started < 5
    assert status["message"] == "completed by alice"
    said = [(m.role, m.text) for m in await tasks.transcript("cut")]
    assert ("user", "Think for a long time.") in said
    assert ("agent", "An answer nobody waits for.") not in said


async def test_a_terminal_task_refuses_messages_naming_its_state(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    operator()
    await tasks.create("over")
    await tasks.wait("over", "TASK_STATE_INPUT_REQUIRED")
    await tasks.control("over", "complete")
    await tasks.wait("over", "TASK_STATE_COMPLETED")

    await tasks.send("over", "Anyone there?")

    await tasks.wait_agent_message("over", "the task is in a terminal state (TASK_STATE_COMPLETED)")
    assert (await tasks.status("over"))["state"] == "TASK_STATE_COMPLETED"
    assert await model_server.control.requests() == []


async def test_a_turn_killed_after_a_checkpointed_tool_result_finishes_without_repeats(
    tasks: Tasks, operator: Operator, model_server: ModelServer, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    ledger.touch()
    await model_server.control.script(
        [
            {"type": "tool_calls", "calls": [{"name": "record", "arguments": {"note": "once"}}]},
            {"type": "text", "text": "Recorded.", "delay_seconds": 4},
        ]
    )
    tools = ["tests.integration.sidefx_tools:TOOLS"]
    env = {"TINY_HARNESS_TEST_SIDEFX": str(ledger)}
    first = operator(env=env, tools=tools)
    await tasks.create("durable")
    await tasks.wait("durable", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("durable", "Record it.")

    # Wait until the tool ran, its result is checkpointed, and the next model call is in flight.
    async def second_call() -> object:
        return (await model_server.control.requests())[1]

    await eventually_async(second_call, within=20, what="the second model call", interval=0.02)

    first.stop(signal.SIGKILL)
    await model_server.control.script([{"type": "text", "text": "Recorded."}])
    operator(env=env, tools=tools)

    status = await tasks.wait("durable", "TASK_STATE_INPUT_REQUIRED", turn=1, within=40)
    assert status["message"] == "Recorded."
    assert ledger.read_text().count("once") == 1
    requests = await model_server.control.requests()
    # The first call's response was checkpointed: it is never asked again. The call in
    # flight at the kill had no checkpoint, so it is asked once more.
    first_calls = [r for r in requests if '"recorded"' not in inputs(r)]
    assert len(first_calls) == 1
    assert len(requests) == 3


async def test_two_operator_replicas_never_run_the_same_turn(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    operator(identity="replica-a")
    operator(identity="replica-b")
    names = [f"pair-{i}" for i in range(6)]
    for name in names:
        await tasks.create(name)
    for name in names:
        await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED")

    for name in names:
        await tasks.send(name, "One.")
    for name in names:
        await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED", turn=1)

    requests = await model_server.control.requests()
    per_task = {n: sum(of_task(r, n) for r in requests) for n in names}
    assert per_task == dict.fromkeys(names, 1)


async def test_messages_sent_while_the_operator_writes_status_are_all_taken(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    operator()
    await tasks.create("busy")
    await tasks.wait("busy", "TASK_STATE_INPUT_REQUIRED")

    sent = [await tasks.send("busy", f"message {i}") for i in range(15)]

    async def all_taken() -> bool | NotYet:
        seen = {m.message_id for m in await tasks.transcript("busy") if m.role == "user"}
        lost = set(sent) - seen
        return NotYet({"lost": sorted(lost)}) if lost else True

    await eventually_async(all_taken, within=60, what="all 15 in the transcript", interval=0.1)
    await tasks.wait("busy", "TASK_STATE_INPUT_REQUIRED")
    order = [m.text for m in await tasks.transcript("busy") if m.role == "user"]
    assert order == [f"message {i}" for i in range(15)]


async def test_metrics_count_the_turns_a_conversation_caused(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    port = free_port()
    operator(metrics_bind=f"127.0.0.1:{port}")
    await tasks.create("counted")
    await tasks.send("counted", "One.")
    await tasks.wait("counted", "TASK_STATE_INPUT_REQUIRED", turn=1)
    await tasks.send("counted", "Two.")
    await tasks.wait("counted", "TASK_STATE_INPUT_REQUIRED", turn=2)

    def scrape() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    text = ""

    def value(prefix: str) -> float:
        for line in text.splitlines():
            if line.startswith(prefix):
                return float(line.rsplit(" ", 1)[1])
        raise KeyError(f"{prefix} not in /metrics")  # not yet, while it polls below

    # The counters move just after the status write the test saw: poll briefly.
    finished = 'tiny_harness_turns_finished_total{outcome="waiting_for_message"}'

    async def both_counted() -> bool:
        nonlocal text
        text = await asyncio.to_thread(scrape)
        return value(finished) >= 2

    await eventually_async(both_counted, within=10, what="both turns in /metrics")

    assert value("tiny_harness_turns_started_total") == 2
    assert value('tiny_harness_turns_finished_total{outcome="waiting_for_message"}') == 2
    assert value('tiny_harness_model_request_duration_seconds_count{model="scripted-model"}') == 2
    assert value('tiny_harness_model_tokens_total{direction="input",model="scripted-model"}') > 0
    assert value('tiny_harness_tasks{state="TASK_STATE_INPUT_REQUIRED"}') == 1
