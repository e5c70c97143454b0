"""A remote task's calls mirrored into a sub-task's own park, and each decision relayed to the
remote park under the remote's id: unique here even when the remote sent two under one id."""

from __future__ import annotations

from google.protobuf.json_format import MessageToDict

from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.approval import (
    ApprovalDefaults,
    Deciders,
    Decision,
    Gates,
    PendingApproval,
    Requirement,
)
from tiny_harness.core.task import Role, TaskSpec, TaskStatus
from tiny_harness.core.turn import DecidedCall, TurnRef
from tiny_harness.operator.relay import decision_message, remote_approvals

REMOTE_PARK = "4-1122334455667788"


def remote_call(call_id: str, city: str) -> PendingApproval:
    return PendingApproval(
        call_id=call_id,
        park=REMOTE_PARK,
        model_call_id="their-model-id",
        tool="weather__weather",
        arguments={"city": city},
        turn=4,
        requirement=Requirement(deciders=(Deciders(roles=(Role.ASSIGNEE,)),), timeout_seconds=600),
        expires_at="2099-01-01T00:00:00Z",
    )


def test_remote_calls_wait_in_a_park_here_with_ids_unique_here() -> None:
    spec = TaskSpec(goal="remote")
    status = TaskStatus.model_validate(
        {"state": "TASK_STATE_INPUT_REQUIRED", "subState": "awaiting-approval"}
    ).model_copy(update={"approvals": (remote_call("dup", "Oslo"), remote_call("dup", "Rome"))})
    remote = task_to_a2a("r1", "r1", spec, status)

    mirrored = remote_approvals(
        remote, agent="market", turn=2, gates=Gates(defaults=ApprovalDefaults())
    )

    assert [(p.call_id, p.model_call_id, p.relay_park) for p in mirrored] == [
        ("dup#1", "dup", REMOTE_PARK),
        ("dup#2", "dup", REMOTE_PARK),
    ]
    (park,) = {p.park for p in mirrored}
    assert park.startswith("2-")
    assert park != REMOTE_PARK


def test_a_relayed_decision_names_the_remote_park_and_the_remote_id() -> None:
    decided = DecidedCall(
        call_id="dup#2",
        model_call_id="dup",
        relay_park=REMOTE_PARK,
        name="weather__weather",
        decision=Decision(verdict="approve", by="alice", at="2026-12-02T06:00:00Z"),
    )

    sent = decision_message(TurnRef("child", 3), decided, "r1", "r1", "child")

    envelope = MessageToDict(sent.parts[0].data)
    assert (envelope["call_id"], envelope["park"]) == ("dup", REMOTE_PARK)
    assert sent.message_id == "child/turn-3/decision-dup#2"
