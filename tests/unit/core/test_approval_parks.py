"""One decision, one call, one park, without a cluster: the ids a park gives the calls of one
answer, the park a decision must name, a late decision, and the rules a sub-task inherits."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Literal

from tiny_harness.core.actions import ApplyDecision, Refuse
from tiny_harness.core.approval import (
    Decision,
    DecisionRequest,
    PendingApproval,
    TaskApprovalRule,
    ToolServerApproval,
    decision_key,
    distinct_call_ids,
    gates_of,
    new_park,
    refuse_decision,
)
from tiny_harness.core.decide import Facts, Pending, decide
from tiny_harness.core.llm import LLMResponse, ToolCall
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Role
from tiny_harness.core.turn import DecidedCall, OutcomeKind

from .conftest import MemoryHost, ScriptedModel, reply
from .test_approval import DEFAULTS, SPEC, Deploys, loop_for, pending, turn

PARK = "2-00aa11bb22cc33dd"
VERDICTS: tuple[Literal["approve", "reject"], ...] = ("approve", "reject")


def in_park(park: str = PARK, **decision: Any) -> tuple[PendingApproval, ...]:
    return tuple(p.model_copy(update={"park": park}) for p in pending(**decision))


def refuse(p: tuple[PendingApproval, ...], **kw: Any) -> str | None:
    return refuse_decision(
        p,
        park=kw.pop("park", PARK),
        call_id=kw.pop("call_id", "c1"),
        verdict=kw.pop("verdict", "approve"),
        sender=kw.pop("sender", "alice"),
        role=kw.pop("role", Role.ASSIGNEE),
        arguments=None,
        **kw,
    )


# -- ids ---------------------------------------------------------------------------------------


def test_unique_ids_stay_as_the_model_gave_them() -> None:
    assert distinct_call_ids(["a", "b"]) == ["a", "b"]


def test_ids_the_model_gave_twice_or_not_at_all_are_made_unique() -> None:
    assert distinct_call_ids(["dup", "dup", "x", ""]) == ["dup#1", "dup#2", "x", "call#4"]


def test_a_made_id_never_takes_one_the_model_gave() -> None:
    made = distinct_call_ids(["a", "a", "a#1", "a#2"])
    assert made[2:] == ["a#1", "a#2"]
    assert len(set(made)) == 4


def test_a_park_is_its_turn_and_a_token_no_one_knows_before() -> None:
    first, second = new_park(3), new_park(3)
    assert first.startswith("3-")
    assert first != second


async def test_two_calls_the_model_gave_one_id_park_apart_and_are_answered_under_it() -> None:
    deploys = Deploys()
    answer = LLMResponse(
        text="",
        model="fake-model",
        tool_calls=(
            ToolCall(id="same", name="ops__deploy", arguments_json='{"env": "dev"}'),
            ToolCall(id="same", name="ops__deploy", arguments_json='{"env": "prod"}'),
        ),
    )
    model = ScriptedModel(answer, reply("Both decided."))
    outcome = await loop_for(model, deploys).run_turn(MemoryHost(), turn())

    assert outcome.kind is OutcomeKind.WAITING_FOR_APPROVAL
    ids = [(p.call_id, p.model_call_id, p.arguments["env"]) for p in outcome.approvals]
    assert ids == [("same#1", "same", "dev"), ("same#2", "same", "prod")]
    (park,) = {p.park for p in outcome.approvals}
    assert park.startswith("0-")

    runs = tuple(
        DecidedCall(
            call_id=p.call_id,
            model_call_id=p.model_call_id,
            name=p.tool,
            arguments_json=json.dumps(p.arguments),
            decision=Decision(verdict=verdict, by="alice", at="2026-12-02T06:00:00Z"),
        )
        for p, verdict in zip(outcome.approvals, VERDICTS, strict=True)
    )
    after = await loop_for(model, deploys).run_turn(
        MemoryHost(), turn(1, history=outcome.history, decided=runs)
    )
    assert deploys.deployed == [{"env": "dev"}]
    answered = [m.tool_call_id for m in after.history if m.role == "tool"]
    assert answered == ["same", "same"]  # the model is answered under the ids it gave


# -- the park a decision names ----------------------------------------------------------------


def test_a_decision_naming_the_open_park_is_taken() -> None:
    assert refuse(in_park()) is None


def test_a_decision_naming_another_park_or_none_is_refused_saying_which_is_open() -> None:
    said = (
        "refused: the decision on call 'c1' {}, and the open park is '2-00aa11bb22cc33dd' "
        "(waiting: c1): a decision answers only the park it names; read the calls of the "
        "open park and decide them naming it"
    )
    assert refuse(in_park(), park="1-ffff") == said.format("names park '1-ffff'")
    assert refuse(in_park(), park=None) == said.format("names no park")


def test_a_decision_for_a_park_that_is_over_is_told_who_decided_it_there() -> None:
    earlier = {
        decision_key("1-old", "c1"): Decision(
            verdict="approve", by="carol", at="2026-12-02T05:00:00Z"
        )
    }
    assert refuse(in_park(), park="1-old", earlier=earlier) == (
        "refused: call 'c1' was already approved by carol at 2026-12-02T05:00:00Z in park "
        "'1-old', which is over; the open park is '2-00aa11bb22cc33dd' (waiting: c1)"
    )
    assert refuse((), park="1-old", earlier=earlier) == (
        "refused: call 'c1' was already approved by carol at 2026-12-02T05:00:00Z in park "
        "'1-old', which is over"
    )


def test_a_decision_when_no_park_is_open_is_refused_not_kept() -> None:
    assert refuse((), park="3") == (
        "refused: no call 'c1' waits for a decision on this task (none waits)"
    )


def test_a_decision_after_the_deadline_is_refused_as_late() -> None:
    assert refuse(in_park(), late={"c1"}) == (
        "refused: the decision on call 'c1' (ops__deploy) is late: its deadline was "
        "2026-12-02T07:00:00Z, and its timeout decides it (reject)"
    )


def test_a_late_decision_is_refused_in_the_table_before_the_timeout_acts() -> None:
    request = DecisionRequest(call_id="c1", park=PARK, verdict="approve")
    base = Facts(
        initialised=True,
        state=TaskState.INPUT_REQUIRED,
        spec=SPEC,
        turn=2,
        approvals=in_park(),
        approval_left=-1.0,
        pending=(Pending("d1", "alice", "decision", decision=request),),
    )
    assert decide(base) == ApplyDecision("d1")
    late = decide(replace(base, late_calls=frozenset({"c1"})))
    assert isinstance(late, Refuse)
    assert "is late" in late.reason


# -- a sub-task's gates ------------------------------------------------------------------------


def test_a_sub_task_is_gated_by_every_rule_of_its_ancestors() -> None:
    servers = [("ops", [("deploy", "ops__deploy"), ("status", "ops__status")], None)]
    parent_rule = TaskApprovalRule(tools=("ops__deploy",), participants=("carol",))
    root_rule = TaskApprovalRule(tool_servers=("ops",), roles=(Role.ADMIN,))
    gates = gates_of(
        servers=servers,
        agents=[],
        rules=[],
        defaults=DEFAULTS,
        inherited=[("parent", (parent_rule,)), ("root", (root_rule,))],
    )
    deploy = gates.requirement("ops__deploy")
    assert deploy is not None
    assert deploy.sources == (
        "the ancestor task parent's spec.approval[0]",
        "the ancestor task root's spec.approval[0]",
    )
    assert not deploy.admits("carol", Role.ASSIGNEE)  # the root's rule wants an admin too
    assert deploy.admits("carol", Role.ADMIN)
    assert gates.requirement("ops__status") is not None  # the root's rule covers the server


def test_a_child_without_rules_of_its_own_inherits_them_and_a_server_policy_still_holds() -> None:
    servers = [("ops", [("deploy", "ops__deploy")], ToolServerApproval(tools=("deploy",)))]
    rule = TaskApprovalRule(tools=("ops__deploy",), participants=("carol",))
    gates = gates_of(
        servers=servers, agents=[], rules=[], defaults=DEFAULTS, inherited=[("p", (rule,))]
    )
    deploy = gates.requirement("ops__deploy")
    assert deploy is not None
    assert len(deploy.deciders) == 2
