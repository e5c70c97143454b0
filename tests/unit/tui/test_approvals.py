"""The calls a task waits to have approved, as the TUI folds and lists them (tui/approvals.py,
tui/view.py): yours first, the arguments readable and bounded, who decides and until when, why
you may not decide one (the operator's own reason), the badge in the tree, the operator's
answer as the harness's line, and a read of the task after each status update while calls
are shown (they ride on no status update)."""

from __future__ import annotations

import pytest
from a2a.types import Message, Part, Role, StreamResponse

from tests.unit.tui.approval_tasks import agent, approved, call, status_update, user, waiting
from tiny_harness.core.approval import Deciders, Decision
from tiny_harness.core.control_envelope import control_message
from tiny_harness.core.task import Role as TaskRole
from tiny_harness.tui.approvals import (
    ARGUMENT_LINES,
    PromptError,
    argument_lines,
    badge,
    edited_arguments,
    refusal_to,
    summary,
)
from tiny_harness.tui.task_tree import tree
from tiny_harness.tui.view import TaskView, listed_view


def view_of(*calls: object, me: str = "alice", **more: object) -> TaskView:
    return TaskView.of(waiting(*calls, **more), me)  # type: ignore[arg-type]


def test_the_calls_you_may_decide_come_first_then_others_then_the_decided() -> None:
    carols = call("c0", "Paris", deciders=Deciders(participants=("carol",)))
    view = view_of(call("c1", "Oslo", decision=approved()), carols, call("c2", "Rome"))

    assert [(c.call_id, c.mine, c.decided) for c in view.calls()] == [
        ("c2", True, False),
        ("c0", False, False),
        ("c1", False, True),
    ]
    assert view.calls()[0].lines() == [
        "for you · weather__weather · call c2",
        '    {"city": "Rome"}',
        "    decided by assignees or admins · until 2026-12-02 06:26:30 UTC, then rejected",
    ]
    assert view.calls()[1].lines()[-1] == (
        "    not yours to decide: alice may not decide call 'c0' (weather__weather); it is "
        "decided by carol"
    )
    assert view.calls()[2].lines() == [
        "weather__weather · call c1 · approved by alice",
        '    {"city": "Oslo"}',
    ]


def test_a_watcher_is_told_the_operators_reason_before_anything_is_sent() -> None:
    view = view_of(call("c1", "Oslo"), me="bob")

    (listed,) = view.calls()
    assert not listed.mine
    assert refusal_to(view.calls(), "c1") == "bob is a watcher and may not decide call 'c1'"
    assert badge(view.calls(), view.sub_state) == "awaits approval"
    assert view.label() == "awaits approval · Plan the trip · INPUT_REQUIRED · awaiting-approval"
    assert summary(view.calls()) == "1 call waits for approval"


def test_a_decided_call_is_not_decided_again() -> None:
    view = view_of(call("c1", "Oslo", decision=approved("carol")), call("c2", "Rome"))

    assert refusal_to(view.calls(), "c1") == "call 'c1' was already approved by carol"
    assert refusal_to(view.calls(), "c2") is None
    assert refusal_to(view.calls(), "nope") == "no call 'nope' waits for a decision on this task"
    assert summary(view.calls()) == "1 call waits for approval, 1 for you"


def test_the_tree_marks_a_call_for_you_and_lists_that_task_first() -> None:
    mine = waiting(call("c1", "Oslo"))
    other = waiting(call("c1", "Oslo"))
    other.id = "other"
    quiet = waiting(sub_state="awaiting-next-message")
    quiet.id = "quiet"

    assert TaskView.of(mine, "alice").label().startswith("approval for you · Plan the trip")
    assert TaskView.of(quiet, "alice").label() == (
        "Plan the trip · INPUT_REQUIRED · awaiting-next-message"
    )
    ordered = tree([quiet, other, mine], first=lambda t: t.id == "trip")
    assert [t.id for _, t in ordered] == ["trip", "quiet", "other"]


def test_arguments_are_indented_json_bounded_and_a_cut_says_so() -> None:
    many = {f"key{i}": f"value {i}" for i in range(20)}
    lines = argument_lines(call("c1", "", arguments=many))
    assert lines[:2] == ["{", '  "key0": "value 0",']
    assert len(lines) == ARGUMENT_LINES + 1
    assert lines[-1] == f"… ({22 - ARGUMENT_LINES} more lines)"
    assert argument_lines(call("c1", "Oslo")) == ['{"city": "Oslo"}']

    cut = argument_lines(
        call("c1", "", arguments={"_start": '{"text": "' + "x" * 5000}, arguments_cut=True)
    )
    assert cut[-1] == "… (cut: too long to show whole; it runs whole)"
    assert len(cut) == ARGUMENT_LINES + 1
    assert all(len(line) <= 96 for line in cut)
    assert argument_lines(call("c1", "", arguments={})) == ["(no arguments)"]


def test_an_edit_is_a_json_object_the_policy_allows_and_unchanged_is_none() -> None:
    editable = call("c1", "Oslo", allow_edit=True)
    assert edited_arguments('{"city": "Oslo"}', editable) is None
    assert edited_arguments("", editable) is None
    assert edited_arguments('{"city": "Bergen"}', editable) == {"city": "Bergen"}
    with pytest.raises(PromptError, match="not JSON"):
        edited_arguments('{"city": ', editable)
    with pytest.raises(PromptError, match="a JSON object"):
        edited_arguments('["Bergen"]', editable)
    with pytest.raises(PromptError, match="does not allow edited arguments"):
        edited_arguments('{"city": "Bergen"}', call("c1", "Oslo"))


def test_the_operators_answer_and_refusal_are_the_harnesss_lines() -> None:
    view = view_of(call("c1", "Oslo"))
    answer = agent("cmd-d1", "weather__weather was approved by alice: fine")
    view.take(status_update(11, answer))
    view.take(status_update(12, agent("refused-d2", "refused: no call 'c9' waits")))
    view.take(status_update(13, agent("cmd-d3", "state: INPUT_REQUIRED")))  # a /status reply
    recorded = agent("cmd-d4", "weather__weather was rejected by carol", approval={"call_id": "c2"})
    view.take(StreamResponse(message=recorded))

    assert [(line.who, line.text) for line in view.lines[2:]] == [
        ("harness", "weather__weather was approved by alice: fine"),
        ("harness", "refused: no call 'c9' waits"),
        ("agent", "state: INPUT_REQUIRED"),
        ("harness", "weather__weather was rejected by carol"),
    ]
    assert view.answer_to("d1") == view.lines[2]
    assert view.answer_to("d2") == view.lines[3]
    assert view.answer_to("d9") is None


def test_a_control_request_as_the_history_holds_it_shows_no_empty_line() -> None:
    empty = Message(message_id="d1", role=Role.ROLE_USER, parts=[Part(text="")])
    view = view_of(call("c1", "Oslo"), history=[user("m1", "Weather?"), empty])

    assert [line.text for line in view.lines] == [
        "Weather?",
        "Waiting for approval before running: ...",
    ]
    decision = control_message("trip", "approve", call_id="c1", message_id="d2")
    view.take_message(decision)
    assert view.lines[-1].text == "approve c1"


def test_calls_are_read_again_after_status_updates_while_shown_and_not_otherwise() -> None:
    view = view_of(call("c1", "Oslo"))
    assert view.wants_read()

    view.take_task(waiting(call("c1", "Oslo", decision=approved()), version=11))
    assert view.calls()[0].decided
    assert view.wants_read()  # decided, not yet run: the next read clears it

    view.take_task(waiting(version=12, sub_state="awaiting-next-message"))
    assert view.calls() == ()
    assert not view.wants_read()
    assert view.badge() is None


def test_the_open_tasks_line_shows_its_calls_as_its_view_has_them() -> None:
    listed = waiting(call("c1", "Oslo"), version=10)
    view = TaskView.of(waiting(call("c1", "Oslo", decision=approved()), version=11), "alice")

    assert listed_view(listed, "alice", view).label() == (
        "Plan the trip · INPUT_REQUIRED · awaiting-approval"
    )
    assert listed_view(listed, "alice").label().startswith("approval for you · ")


def test_a_decided_call_by_timeout_and_an_edit_read_as_the_operator_says() -> None:
    timed = Decision(verdict="reject", by="timeout", at="2026-12-02T06:26:31Z", reason="late")
    edited = approved().model_copy(update={"arguments": {"city": "Bergen"}})
    view = view_of(call("c1", "Oslo", decision=timed), call("c2", "Rome", decision=edited))

    assert [c.heading() for c in view.calls()] == [
        "weather__weather · call c1 · rejected: no one decided in time: late",
        "weather__weather · call c2 · approved by alice with edited arguments",
    ]
    assert refusal_to(view.calls(), "c1") == "call 'c1' was already rejected by its timeout"


def test_several_policies_each_name_their_deciders() -> None:
    pending = call("c1", "Oslo", deciders=Deciders(roles=(TaskRole.ADMIN,)))
    both = pending.model_copy(
        update={
            "requirement": pending.requirement.model_copy(
                update={
                    "deciders": (*pending.requirement.deciders, Deciders(participants=("carol",)))
                }
            )
        }
    )
    assert pending.deciders == "admins"
    assert both.deciders == "(admins) and (carol)"
    (listed,) = TaskView.of(waiting(both), "alice").calls()
    assert listed.lines()[-2] == (
        "    decided by (admins) and (carol) · until 2026-12-02 06:26:30 UTC, then rejected"
    )
