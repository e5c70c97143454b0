"""A decision sent from the TUI shows before the harness's answer to it, whichever stream
brings what first: the answer can come on the followed stream before the decision's own stream
says the gateway took it (seen on a loaded machine in test_tui_approvals.py)."""

from __future__ import annotations

from tests.unit.tui.approval_tasks import agent, waiting
from tiny_harness.tui.session import decision_message
from tiny_harness.tui.view import TaskView


def said(view: TaskView) -> list[str]:
    return [f"{line.who}: {line.text}" for line in view.lines]


def test_the_answer_first_shows_the_decision_before_it() -> None:
    view = TaskView.of(waiting(version=10), "alice")
    sent = decision_message("trip", "c1", "approve", park="1-ab", reason="fine", message_id="d1")
    view.sending(sent)
    assert "you: approve c1: fine" not in said(view)  # not taken by the gateway yet

    view.take_message(agent("cmd-d1", "weather__weather was approved by alice: fine"))
    view.take_message(sent)  # the decision's own stream, later: already shown
    assert said(view)[-2:] == [
        "you: approve c1: fine",
        "harness: weather__weather was approved by alice: fine",
    ]


def test_a_refusal_first_shows_the_decision_before_it_and_the_usual_order_stays() -> None:
    view = TaskView.of(waiting(version=10), "bob")
    refused = decision_message("trip", "c1", "approve", park="1-ab", message_id="d2")
    view.sending(refused)
    view.take_message(agent("refused-d2", "refused: bob is a watcher"))
    assert said(view)[-2:] == ["you: approve c1", "harness: refused: bob is a watcher"]

    taken = decision_message("trip", "c2", "reject", park="1-ab", message_id="d3")
    view.sending(taken)
    view.take_message(taken)
    view.take_message(agent("cmd-d3", "weather__weather was rejected by bob"))
    assert said(view)[-2:] == ["you: reject c2", "harness: weather__weather was rejected by bob"]
