"""Participant tasks: the person's answer completes the task with no model call, anyone
else's words are left alone, and a turn killed after taking the answer ends the same way; and
a parent's reply to a sub-task's question (reply_to_subtask)."""

from __future__ import annotations

from tiny_harness.core.intrinsics import (
    CREATE_TASK_FOR_PARTICIPANT,
    REPLY_TO_SUBTASK,
    apply_intrinsic,
)
from tiny_harness.core.participant_turn import AnsweringLoop, answer_text
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import Lifecycle, Participant, Role, TaskExtension
from tiny_harness.core.turn import DrainEntry, OutcomeKind, TurnInput

from .conftest import MemoryHost, ScriptedModel, calls, child_row, delegated, reply
from .test_loop import loop_for, turn

QUESTION = TaskExtension(
    goal="Approve the budget of 40k?",
    lifecycle=Lifecycle.PARTICIPANT,
    participants=(
        Participant(id="bob", role=Role.ASSIGNEE),
        Participant(id="alice", role=Role.WATCHER),
    ),
)


def answering_turn(journal: tuple[DrainEntry, ...] = ()) -> TurnInput:
    return TurnInput(task_id="q1", turn=1, task=QUESTION, journal=journal)


async def test_the_assignees_answer_completes_the_task_with_the_answer_as_its_result() -> None:
    host = MemoryHost()
    host.send("Not now, this is for you.", sender="alice")
    host.send("Approved, up to 40k.", sender="bob")

    outcome = await AnsweringLoop().run_turn(host, answering_turn())

    assert outcome.kind is OutcomeKind.COMPLETED
    assert outcome.state is TaskState.COMPLETED
    assert outcome.text == answer_text("bob", "Approved, up to 40k.")
    assert outcome.text == "answered by bob: Approved, up to 40k."
    [drain] = host.journal
    assert isinstance(drain, DrainEntry)
    assert [m.sender for m in drain.messages] == ["bob"]  # alice's words stay untaken
    assert [m.content for m in outcome.history] == ["Approved, up to 40k."]


async def test_with_no_answer_the_task_stays_waiting_for_it() -> None:
    host = MemoryHost()
    host.send("Any news?", sender="alice")

    outcome = await AnsweringLoop().run_turn(host, answering_turn())

    assert (outcome.state, outcome.sub_state) == (
        TaskState.INPUT_REQUIRED,
        SubState.AWAITING_ANSWER,
    )
    assert outcome.text == QUESTION.goal
    assert host.journal == []


async def test_a_turn_killed_after_taking_the_answer_resumes_to_the_same_end() -> None:
    first = MemoryHost()
    first.send("Approved.", sender="bob")
    await AnsweringLoop().run_turn(first, answering_turn())
    [drain] = first.journal

    again = MemoryHost(journal=first.journal)
    again.send("A later word.", sender="bob")  # the journal, not the inbox, says what was taken
    outcome = await AnsweringLoop().run_turn(again, answering_turn(journal=(drain,)))

    assert outcome.text == "answered by bob: Approved."
    assert again.drains == 0


async def test_create_task_for_participant_asks_the_host_for_a_participant_child() -> None:
    host = MemoryHost()
    model = ScriptedModel(
        calls((CREATE_TASK_FOR_PARTICIPANT, {"participant": "bob", "goal": "Approve?"})),
        reply("Asked bob."),
    )

    team = (Participant(id="alice", role=Role.ASSIGNEE), Participant(id="bob", role=Role.WATCHER))
    outcome = await loop_for(model).run_turn(host, turn(delegated(participants=team)))

    [intent] = host.spawn_requests
    assert (intent.lifecycle, intent.assignee, intent.goal) == (
        Lifecycle.PARTICIPANT,
        "bob",
        "Approve?",
    )
    [row] = outcome.sub_tasks
    assert (row.state, row.sub_state) == (TaskState.INPUT_REQUIRED, "awaiting-answer")
    assert outcome.kind is OutcomeKind.WAITING_FOR_SUBTASKS  # it cannot complete before bob
    assert "Their answer arrives as a note" in model.requests[1].messages[-1].content


def test_a_participant_task_is_for_a_person_not_an_agent_or_the_system() -> None:
    for who in ("task:other", "system"):
        result = apply_intrinsic(
            CREATE_TASK_FOR_PARTICIPANT,
            {"participant": who, "goal": "Approve?"},
            delegated(),
            task_id="t1",
            step_id="t1/turn-0/tool-0-c",
        )
        assert result.is_error
        assert result.spawn is None
        assert "is not a person" in result.content


async def test_reply_to_subtask_sends_the_answer_to_an_open_sub_task_once() -> None:
    host = MemoryHost()
    asking = child_row("t1-sub-a", TaskState.INPUT_REQUIRED)
    model = ScriptedModel(
        calls((REPLY_TO_SUBTASK, {"task_id": "t1-sub-a", "text": "Europe."})),
        reply("Answered."),
    )

    await loop_for(model).run_turn(host, turn(delegated(sub_tasks=(asking,))))

    [sent] = host.replies
    assert (sent.task_id, sent.text, sent.id) == ("t1-sub-a", "Europe.", "t1/turn-0/tool-0-call-0")
    assert "Sent to sub-task t1-sub-a" in model.requests[1].messages[-1].content


async def test_reply_to_subtask_refuses_a_task_that_is_no_open_sub_task() -> None:
    ended = child_row("t1-sub-b", TaskState.COMPLETED)
    for target, why in (("t1-sub-b", "has ended"), ("elsewhere", "is not a sub-task")):
        host = MemoryHost()
        model = ScriptedModel(
            calls((REPLY_TO_SUBTASK, {"task_id": target, "text": "Hi."})), reply("Ok.")
        )
        await loop_for(model).run_turn(host, turn(delegated(sub_tasks=(ended,))))
        assert host.replies == []
        assert why in model.requests[1].messages[-1].content


async def test_a_reply_the_host_refuses_is_an_error_the_model_reads() -> None:
    host = MemoryHost()
    host.reply_refusal = "sub-task t1-sub-q is a question to a person; only they answer it"
    question = child_row("t1-sub-q", TaskState.INPUT_REQUIRED)
    model = ScriptedModel(
        calls((REPLY_TO_SUBTASK, {"task_id": "t1-sub-q", "text": "Yes."})), reply("Ok.")
    )

    await loop_for(model).run_turn(host, turn(delegated(sub_tasks=(question,))))

    result = model.requests[1].messages[-1]
    assert result.is_error
    assert "only they answer it" in result.content
