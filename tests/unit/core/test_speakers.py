"""Who may speak to a task, and who may end it.

The operator asks these two questions of every message it takes, whoever wrote it and however
it reached the API, so the answers (and the reasons a refused sender reads) are the rules a
participant lives by.
"""

from __future__ import annotations

import pytest

from tiny_harness.core.speakers import BRIEF_ID, parent_sender, refuse_ending, refuse_speaker
from tiny_harness.core.task import Participant, Role, TaskLink, TaskSpec

PARTICIPANTS = (
    Participant(id="alice", role=Role.ASSIGNEE),
    Participant(id="bob", role=Role.WATCHER),
    Participant(id="carol", role=Role.REPORTER),
    Participant(id="dave", role=Role.ADMIN),
)
TOP = TaskSpec(goal="ship the release", participants=PARTICIPANTS)
CHILD = TaskSpec(
    goal="write the changelog", participants=PARTICIPANTS, parent=TaskLink(task_id="release")
)
ACTIONS = ("complete", "cancel")


def test_the_parent_signs_as_task_and_its_id() -> None:
    assert parent_sender(CHILD) == "task:release"
    assert parent_sender(TOP) is None


# -- speaking -------------------------------------------------------------------------------------


@pytest.mark.parametrize("sender", ["alice", "bob", "carol", "dave"])
def test_every_participant_may_speak_whatever_their_role(sender: str) -> None:
    assert refuse_speaker(TOP, sender, "m1") is None


def test_the_parent_may_speak_to_its_child() -> None:
    assert refuse_speaker(CHILD, "task:release", "m1") is None


def test_another_task_may_not_speak_to_a_child_that_is_not_its_own() -> None:
    assert refuse_speaker(CHILD, "task:other", "m1") == (
        "refused: task:other is not a participant of this task"
    )


def test_a_task_without_a_parent_refuses_a_message_signed_as_a_parent() -> None:
    assert refuse_speaker(TOP, "task:release", "m1") == (
        "refused: task:release is not a participant of this task"
    )


def test_a_stranger_is_refused_by_name() -> None:
    assert refuse_speaker(TOP, "mallory", "m1") == (
        "refused: mallory is not a participant of this task"
    )


def test_the_operator_may_send_the_brief() -> None:
    assert BRIEF_ID == "brief"
    assert refuse_speaker(TOP, "system", "brief") is None


@pytest.mark.parametrize("message_id", ["m1", "brief-2", "Brief", ""])
def test_the_operator_may_send_nothing_but_the_brief(message_id: str) -> None:
    assert refuse_speaker(TOP, "system", message_id) == (
        "refused: system is not a participant of this task"
    )


def test_a_stranger_may_not_borrow_the_briefs_id() -> None:
    assert refuse_speaker(TOP, "mallory", "brief") is not None


def test_a_child_without_participants_hears_only_its_parent() -> None:
    """Its brief comes from its parent; only a top-level delegated task is briefed by the
    operator itself (``system``)."""
    bare = TaskSpec(goal="tidy up", parent=TaskLink(task_id="release"))

    assert refuse_speaker(bare, "task:release", "m1") is None
    assert refuse_speaker(bare, "task:release", "brief") is None
    assert refuse_speaker(bare, "system", "brief") is not None
    assert refuse_speaker(bare, "alice", "m1") is not None
    assert refuse_speaker(TaskSpec(goal="tidy up"), "system", "brief") is None


# -- ending ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("sender", ["alice", "carol", "dave"])
def test_assignees_reporters_and_admins_may_end_the_task(sender: str, action: str) -> None:
    assert refuse_ending(TOP, sender, action) is None


@pytest.mark.parametrize("action", ACTIONS)
def test_a_watcher_may_not_end_the_task_and_is_told_why(action: str) -> None:
    assert refuse_ending(TOP, "bob", action) == (
        f"refused: bob is a watcher and may not {action} the task"
    )


@pytest.mark.parametrize("action", ACTIONS)
def test_the_parent_may_end_its_child(action: str) -> None:
    assert refuse_ending(CHILD, "task:release", action) is None


@pytest.mark.parametrize("action", ACTIONS)
def test_the_parent_may_end_its_child_even_without_participants(action: str) -> None:
    bare = TaskSpec(goal="tidy up", parent=TaskLink(task_id="release"))

    assert refuse_ending(bare, "task:release", action) is None


@pytest.mark.parametrize("sender", ["mallory", "task:other", "system"])
def test_nobody_else_may_end_the_task(sender: str) -> None:
    assert refuse_ending(CHILD, sender, "cancel") == (
        f"refused: {sender} is not a participant of this task"
    )


def test_a_task_without_a_parent_may_not_be_ended_by_a_would_be_parent() -> None:
    assert refuse_ending(TOP, "task:release", "complete") is not None
