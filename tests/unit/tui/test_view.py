"""The TUI's fold (tui/view.py): A2A tasks and stream events into what the screens show, each
message once however often a reconnecting stream replays it."""

from __future__ import annotations

import pytest
from a2a.types import (
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.types import (
    TaskState as A2AState,
)

from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.control_envelope import control_message
from tiny_harness.core.extensions import TASK_EXT_KEY
from tiny_harness.core.states import TaskState
from tiny_harness.core.status_ext import with_sub_state
from tiny_harness.core.task import SubTaskRow, TaskSpec
from tiny_harness.core.task import TaskStatus as Status
from tiny_harness.tui.folded import row_text
from tiny_harness.tui.new_task import FormError, envelope
from tiny_harness.tui.task_tree import tree
from tiny_harness.tui.view import TaskView, listed_view, text_of


def spec(goal: str = "Plan the release", parent: str | None = None) -> TaskSpec:
    data: dict[str, object] = {
        "goal": goal,
        "acceptanceCriteria": ["Dates agreed"],
        "participants": [{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "watcher"}],
    }
    if parent:
        data["parent"] = {"taskId": parent}
    return TaskSpec.model_validate(data)


def a2a_task(
    task_id: str = "release",
    state: TaskState = TaskState.INPUT_REQUIRED,
    sub_state: str | None = "awaiting-next-message",
    history: tuple[Message, ...] = (),
    parent: str | None = None,
) -> Task:
    status = Status.model_validate({"state": state.value, "subState": sub_state})
    return task_to_a2a(task_id, task_id, spec(parent=parent), status, history=history)


def said(message_id: str, text: str, role: int = Role.ROLE_USER) -> Message:
    return Message(message_id=message_id, role=role, parts=[Part(text=text)])  # type: ignore[arg-type]


def test_a_task_shows_its_state_goal_criteria_participants_and_history() -> None:
    view = TaskView.of(
        a2a_task(history=(said("m1", "Hi"), said("r1", "Hello.", Role.ROLE_AGENT))), "alice"
    )
    assert view.header == "INPUT_REQUIRED · awaiting-next-message"
    assert view.goal == "Plan the release"
    assert view.criteria == ("Dates agreed",)
    assert [(p.id, p.role.value) for p in view.participants] == [
        ("alice", "assignee"),
        ("bob", "watcher"),
    ]
    assert [(line.who, line.text) for line in view.lines] == [("you", "Hi"), ("agent", "Hello.")]


def test_a_replayed_task_and_repeated_events_show_each_message_once() -> None:
    task = a2a_task(history=(said("m1", "Hi"),))
    view = TaskView.of(task, "alice")
    view.take(StreamResponse(task=task))  # a reconnection starts with the whole task again
    view.take(StreamResponse(message=said("m1", "Hi")))
    view.take(StreamResponse(message=said("r1", "Hello.", Role.ROLE_AGENT)))
    view.take(StreamResponse(message=said("r1", "Hello.", Role.ROLE_AGENT)))
    assert [line.message_id for line in view.lines] == ["m1", "r1"]


def test_a_status_update_moves_the_state_and_carries_the_sub_task_rows() -> None:
    view = TaskView.of(a2a_task(), "alice")
    event = TaskStatusUpdateEvent(
        task_id="release",
        status=TaskStatus(state=A2AState.TASK_STATE_WORKING),
        metadata={TASK_EXT_KEY: {"sub_tasks": [{"task_id": "release-docs", "goal": "Docs"}]}},
    )
    view.take(StreamResponse(status_update=event))
    assert view.header == "WORKING"
    assert [(r.task_id, r.goal) for r in view.sub_tasks] == [("release-docs", "Docs")]
    other = TaskStatusUpdateEvent(
        task_id="elsewhere", status=TaskStatus(state=A2AState.TASK_STATE_COMPLETED)
    )
    view.take(StreamResponse(status_update=other))  # another task's event changes nothing
    assert view.state is TaskState.WORKING
    done = TaskStatusUpdateEvent(
        task_id="release",
        status=TaskStatus(state=A2AState.TASK_STATE_INPUT_REQUIRED),
        metadata=with_sub_state(None, "awaiting-next-message"),
    )
    view.take(StreamResponse(status_update=done))
    assert view.header == "INPUT_REQUIRED · awaiting-next-message"


def test_the_top_bar_and_the_details_read_the_fold() -> None:
    view = TaskView.of(a2a_task("draft", parent="release"), "alice")
    assert view.top_bar() == "draft · INPUT_REQUIRED · awaiting-next-message"
    assert view.details() == [
        "Goal: Plan the release",
        "  ✓ Dates agreed",
        "Participants: alice (assignee), bob (watcher)",
        "← Parent: release (f4)",
    ]


def test_the_open_tasks_line_in_the_tree_says_what_its_top_bar_says() -> None:
    # The listing was read during the turn; the stream has since parked the task again.
    listed = a2a_task(state=TaskState.WORKING, sub_state=None)
    open_view = TaskView.of(a2a_task(), "alice")

    line = listed_view(listed, "alice", open_view)

    assert open_view.header == "INPUT_REQUIRED · awaiting-next-message"
    assert line.label() == "Plan the release · INPUT_REQUIRED · awaiting-next-message"
    # Every other task's line is the listing's.
    other = a2a_task("release-docs", state=TaskState.WORKING, sub_state=None)
    assert listed_view(other, "alice", open_view).label() == "Plan the release · WORKING"
    assert listed_view(listed, "alice").label() == "Plan the release · WORKING"


def test_an_open_task_with_only_its_state_streamed_keeps_the_listings_goal() -> None:
    listed = a2a_task(state=TaskState.WORKING, sub_state=None)
    open_view = TaskView("release", "alice")
    open_view.take(
        StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id="release", status=TaskStatus(state=A2AState.TASK_STATE_WORKING)
            )
        )
    )

    assert listed_view(listed, "alice", open_view).label() == "Plan the release · WORKING"
    assert open_view.label() == "release · WORKING"


def test_complete_and_cancel_are_refused_on_an_ended_task_and_for_a_watcher() -> None:
    assert TaskView.of(a2a_task(), "alice").refusal() is None
    watcher = TaskView.of(a2a_task(), "bob").refusal()
    assert watcher is not None
    assert "watcher cannot complete" in watcher
    ended = TaskView.of(a2a_task(state=TaskState.COMPLETED, sub_state=None), "alice").refusal()
    assert ended is not None
    assert "has ended" in ended


def test_a_control_request_shows_as_what_it_asks() -> None:
    assert text_of(control_message("release", "complete")) == "(complete requested)"


def test_tasks_list_as_a_tree_with_children_under_their_parent() -> None:
    parent = a2a_task("release")
    child = a2a_task("release-docs", parent="release")
    orphan = a2a_task("fix", parent="gone")
    assert [(depth, t.id) for depth, t in tree([child, orphan, parent])] == [
        (0, "fix"),
        (0, "release"),
        (1, "release-docs"),
    ]
    assert TaskView.of(child, "alice").parent == "release"


def test_a_working_task_shows_for_how_long_and_what_it_used() -> None:
    now = [100.0]
    view = TaskView("release", "alice", clock=lambda: now[0])
    view.take_task(a2a_task())
    assert view.progress() is None
    working = TaskStatusUpdateEvent(
        task_id="release", status=TaskStatus(state=A2AState.TASK_STATE_WORKING)
    )
    view.take(StreamResponse(status_update=working))
    now[0] = 112.4
    view.take(StreamResponse(status_update=working))  # still the same turn: the clock runs on
    assert view.progress() == "working for 12s"
    counted = TaskStatusUpdateEvent(
        task_id="release",
        status=TaskStatus(state=A2AState.TASK_STATE_WORKING),
        metadata={
            TASK_EXT_KEY: {
                "usage": {"model_calls": 3, "input_tokens": 40},  # the turns before this one
                "turn_usage": {"model_calls": 2},  # this turn's, as of its lease's renewal
            }
        },
    )
    view.take(StreamResponse(status_update=counted))
    assert view.progress() == "working for 12s · 5 model calls so far"
    parked = TaskStatusUpdateEvent(
        task_id="release",
        status=TaskStatus(state=A2AState.TASK_STATE_INPUT_REQUIRED),
        metadata={TASK_EXT_KEY: {"usage": {"model_calls": 6}}},
    )
    view.take(StreamResponse(status_update=parked))
    assert view.progress() is None
    assert str(view.usage_line()).startswith("Used: 6 model calls")


def test_the_new_task_form_makes_the_envelope_or_says_what_to_fix() -> None:
    made = envelope("Plan the release", "Dates agreed; Owners named", "bob:watcher, carol", "alice")
    assert made == {
        "goal": "Plan the release",
        "participants": [
            {"id": "bob", "role": "watcher"},
            {"id": "carol", "role": "watcher"},
            {"id": "alice", "role": "assignee"},
        ],
        "acceptance_criteria": ["Dates agreed", "Owners named"],
    }
    assert envelope("Go", "", "alice:reporter", "alice")["participants"] == [
        {"id": "alice", "role": "reporter"}
    ]
    with pytest.raises(FormError, match="needs a goal"):
        envelope("  ", "", "", "alice")
    with pytest.raises(FormError, match="'boss' is not a role"):
        envelope("Go", "", "bob:boss", "alice")


# -- participant tasks: a question an agent put to one person ----------------------------------


def question_task(
    state: TaskState = TaskState.INPUT_REQUIRED,
    sub_state: str | None = "awaiting-answer",
    ending: str | None = None,
) -> Task:
    """A participant task as the gateway renders it: carol answers, alice and bob watch."""
    task_spec = TaskSpec.model_validate(
        {
            "goal": "Approve the budget of 40k?",
            "parent": {"taskId": "release"},
            "participants": [
                {"id": "carol", "role": "assignee"},
                {"id": "alice", "role": "watcher"},
                {"id": "bob", "role": "watcher"},
            ],
        }
    )
    status = Status.model_validate(
        {
            "state": state.value,
            "subState": sub_state,
            "lifecycle": "participant",
            "message": ending or "Approve the budget of 40k?",
        }
    )
    return task_to_a2a("release-sub-1", "release", task_spec, status)


def test_a_question_is_marked_for_its_person_and_says_whom_it_asks_to_anyone_else() -> None:
    mine = TaskView.of(question_task(), "carol")
    theirs = TaskView.of(question_task(), "alice")
    assert mine.label() == (
        "question for you · Approve the budget of 40k? · INPUT_REQUIRED · awaiting-answer"
    )
    assert theirs.label() == (
        "asks carol · Approve the budget of 40k? · INPUT_REQUIRED · awaiting-answer"
    )
    question = mine.question()
    assert question is not None
    assert (question.title, question.text) == ("Question for you", "Approve the budget of 40k?")
    assert question.guidance() == "Your answer completes this task: type it below and press enter."
    assert mine.placeholder() == "Your answer (enter sends it and completes the task)"
    watched = theirs.question()
    assert watched is not None
    assert watched.title == "Question for carol"
    assert watched.guidance().startswith("This task waits for carol's answer")
    assert theirs.placeholder() == "Only carol's answer completes this task; / for commands"


def test_an_ordinary_task_is_no_question() -> None:
    view = TaskView.of(a2a_task(), "alice")
    assert view.question() is None
    assert view.label() == "Plan the release · INPUT_REQUIRED · awaiting-next-message"
    assert view.placeholder() == "Say something, or / for commands"


def test_an_answered_question_shows_the_answer_and_its_controls_are_refused() -> None:
    view = TaskView.of(question_task(), "carol")
    view.take(StreamResponse(message=said("a1", "Approved.")))
    view.take(
        StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id="release-sub-1",
                status=TaskStatus(
                    state=A2AState.TASK_STATE_COMPLETED,
                    message=said(
                        "release-sub-1/turn-1/end",
                        "answered by carol: Approved.",
                        Role.ROLE_AGENT,
                    ),
                ),
            )
        )
    )
    question = view.question()
    assert question is not None
    assert view.header == "COMPLETED"
    assert question.guidance() == "answered by carol: Approved."
    assert view.placeholder() == "Say something, or / for commands"
    assert "has ended" in str(view.refusal())
    # Read again later (a reopened task), the answer is the status text it ended with.
    reread = TaskView.of(
        question_task(TaskState.COMPLETED, None, ending="answered by carol: Approved."), "alice"
    ).question()
    assert reread is not None
    assert reread.guidance() == "answered by carol: Approved."


def test_a_refusal_reads_as_the_harnesss_not_the_agents() -> None:
    view = TaskView.of(question_task(), "alice")
    view.take(StreamResponse(message=said("m1", "I approve it myself.")))
    refusal = said(
        "refused-m1",
        "refused: this task waits for carol's answer; a message from alice does not answer it",
        Role.ROLE_AGENT,
    )
    waiting = TaskStatusUpdateEvent(
        task_id="release-sub-1",
        status=TaskStatus(state=A2AState.TASK_STATE_INPUT_REQUIRED, message=refusal),
        metadata=with_sub_state(None, "awaiting-answer"),
    )
    view.take(StreamResponse(status_update=waiting))
    assert [(line.who, line.text) for line in view.lines][-2:] == [
        ("you", "I approve it myself."),
        (
            "harness",
            "refused: this task waits for carol's answer; a message from alice does not answer it",
        ),
    ]
    assert view.header == "INPUT_REQUIRED · awaiting-answer"
    question = view.question()
    assert question is not None
    assert question.waiting
    assert question.ending is None  # a refusal on a waiting task is no ending
    view.take(
        StreamResponse(message=said("cmd-m2", "refused: alice is a watcher", Role.ROLE_AGENT))
    )
    view.take(StreamResponse(message=said("cmd-m3", "state: input-required", Role.ROLE_AGENT)))
    assert [line.who for line in view.lines][-2:] == ["harness", "agent"]


def test_a_waiting_question_is_the_conversations_first_line() -> None:
    task = question_task()
    task.history.extend(
        [
            said("m1", "I approve it myself."),
            said("refused-m1", "refused: not the answer", Role.ROLE_AGENT),
        ]
    )
    view = TaskView.of(task, "carol")
    assert [line.text for line in view.lines] == [
        "Approve the budget of 40k?",
        "I approve it myself.",
        "refused: not the answer",
    ]


def test_a_sub_task_row_names_its_remote_agent_when_it_has_one() -> None:
    here = SubTaskRow(task_id="r-1", goal="Draft", state=TaskState.WORKING)
    remote = SubTaskRow(
        task_id="r-2",
        agent="market",
        goal="Price it",
        state=TaskState.INPUT_REQUIRED,
        sub_state="awaiting-answer",
    )
    assert row_text(here) == "r-1 · WORKING · Draft"
    assert row_text(remote) == "r-2 · INPUT_REQUIRED · awaiting-answer · on agent market · Price it"
