"""The one reading of a stored task that the gateway and ``kubectl harness`` share: lenient where
an older front end meets a newer operator, strict about who is on the task."""

from __future__ import annotations

from typing import Any

import pytest

from tiny_harness.core.history import AckEntry, NoticeEntry
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Lifecycle, Role
from tiny_harness.core.turn import DrainEntry, InboundMessage
from tiny_harness.kube import participant_view
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.kube.participant_view import (
    ParticipantView,
    conversation,
    ended_for_good,
    role_of,
    spec_of,
    status_of,
)

SPEC: dict[str, Any] = {
    "goal": "ship it",
    "participants": [{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "watcher"}],
}


def task(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "t"}, "spec": {**SPEC, **spec}, "status": status or {}}


def test_a_plan_the_operator_rejected_is_left_out_and_the_rest_reads() -> None:
    cyclic = {"steps": [{"id": "a", "title": "A", "dependsOn": ["a"]}]}

    spec = spec_of(task(plan=cyclic))

    assert spec is not None
    assert spec.goal == "ship it"
    assert spec.plan is None


def test_status_keys_from_a_newer_operator_are_ignored() -> None:
    status = status_of(task({"state": "TASK_STATE_WORKING", "somethingNew": 1}))

    assert status.state is TaskState.WORKING


def test_a_status_field_that_does_not_read_is_left_out_and_the_rest_reads() -> None:
    status = status_of(
        task({"state": "TASK_STATE_WORKING", "turn": 7, "runner": {"holder": "op"}, "x": 1})
    )

    assert (status.state, status.turn, status.runner) == (TaskState.WORKING, 7, None)


def test_a_view_parses_the_spec_and_the_status_once_whoever_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[str] = []
    real_spec, real_status = participant_view.spec_of, participant_view.status_of
    monkeypatch.setattr(
        participant_view, "spec_of", lambda o: parsed.append("spec") or real_spec(o)
    )
    monkeypatch.setattr(
        participant_view, "status_of", lambda o: parsed.append("status") or real_status(o)
    )
    runner = {"holder": "op-1", "renewTime": "2026-12-01T00:00:00Z"}
    view = ParticipantView(task({"state": "TASK_STATE_FAILED", "turn": 3, "runner": runner}))

    assert (view.role_of("bob"), view.role_of("mallory")) == (Role.WATCHER, None)
    assert (view.turn, view.running, view.state) == (3, True, TaskState.FAILED)
    assert not view.ended_for_good  # a failed conversation resumes with the next message
    assert view.lifecycle is Lifecycle.CONVERSATION
    assert sorted(parsed) == ["spec", "status"]


@pytest.mark.parametrize(
    ("who", "role"), [("alice", "assignee"), ("bob", "watcher"), ("mallory", None), (None, None)]
)
def test_only_participants_have_a_role(who: str | None, role: str | None) -> None:
    found = role_of(task(), who)
    assert (found.value if found else None) == role


@pytest.mark.parametrize(
    ("state", "parent", "ended"),
    [
        ("TASK_STATE_COMPLETED", None, True),
        ("TASK_STATE_FAILED", None, False),  # a failed conversation resumes on a message
        ("TASK_STATE_FAILED", {"taskId": "boss"}, True),
        ("TASK_STATE_INPUT_REQUIRED", None, False),
    ],
)
def test_ended_for_good_follows_the_operators_resume_rule(
    state: str, parent: dict[str, str] | None, ended: bool
) -> None:
    extra = {"parent": parent} if parent else {}
    assert ended_for_good(task({"state": state}, **extra)) is ended


def stored(mid: str, text: str, sender: str = "alice") -> StoredMessage:
    return StoredMessage.of(
        {
            "metadata": {"name": mid, "creationTimestamp": "2026-11-30T20:00:00Z"},
            "spec": {"task": "t", "messageId": mid, "sender": sender, "parts": [{"text": text}]},
        }
    )


def record(*entries: Any) -> TurnRecord:
    return TurnRecord(name="t-t1", task="t", turn=1, chunk=0, entries=entries, history=None, size=0)


def test_the_conversation_is_the_transcript_with_refusals_then_what_waits() -> None:
    journal = record(
        DrainEntry(id="d", messages=(InboundMessage(id="m1", sender="alice", content="Hi"),)),
        AckEntry(id="a", message_id="m2", sender="bob", text="/complete"),
        NoticeEntry(
            id="refused-m2",
            text="refused: bob is a watcher and may not complete the task",
            metadata={"refused": "m2"},
        ),
    )

    said = conversation([journal], [stored("m1", "Hi"), stored("m3", "Later")], spec_of(task()))

    assert [(s.message.message_id, s.message.text, s.pending) for s in said] == [
        ("m1", "Hi", False),
        ("m2", "/complete", False),
        ("refused-m2", "refused: bob is a watcher and may not complete the task", False),
        ("m3", "Later", True),
    ]
    assert said[-1].sent is not None
    assert said[-1].sent.text == "Later"


def test_a_strangers_words_are_not_shown_waiting_or_refused() -> None:
    """Anyone who may write messages can write one owned by alice's task: the operator refuses
    it, and neither it nor its refusal is alice's to read."""
    journal = record(
        AckEntry(id="a", message_id="m2", sender="mallory", text="psst: click here"),
        NoticeEntry(
            id="refused-m2",
            text="refused: mallory is not a participant of this task",
            metadata={"refused": "m2"},
        ),
    )
    waiting = [stored("m3", "click here too", sender="mallory"), stored("m4", "Hi")]

    said = conversation([journal], waiting, spec_of(task()))

    assert [(s.message.message_id, s.message.text) for s in said] == [("m4", "Hi")]
