"""Approvals without a cluster: which calls a policy gates, who may decide, how several
policies combine, and a turn that parks its gated calls and runs them, decided, in the next."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from a2a.types import Message, Part
from google.protobuf import json_format
from google.protobuf.struct_pb2 import Value
from pydantic import ValidationError

from tiny_harness.core.actions import (
    ApplyControl,
    ApplyDecision,
    Refuse,
    RunTurn,
    TimeOutApprovals,
    WaitForInput,
)
from tiny_harness.core.approval import (
    ApprovalDefaults,
    ApprovalPolicy,
    Decision,
    DecisionRequest,
    PendingApproval,
    TaskApprovalRule,
    ToolServerApproval,
    gates_of,
    refuse_decision,
    requirement_of,
    shown_arguments,
)
from tiny_harness.core.compaction import FixedContextWindow
from tiny_harness.core.control_envelope import control_message, control_of
from tiny_harness.core.decide import Facts, Pending, decide
from tiny_harness.core.errors import InvalidEnvelopeError
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import Participant, Role, TaskSpec
from tiny_harness.core.tools import ToolContext, ToolRegistry
from tiny_harness.core.turn import (
    AwaitEntry,
    DecidedCall,
    OutcomeKind,
    ToolEntry,
    TurnInput,
    dump_journal,
    load_journal,
)

from .conftest import HostCrashed, MemoryHost, ScriptedModel, calls, conversation, reply

DEFAULTS = ApprovalDefaults()
HELLO = (ChatMessage(role="user", content="Deploy it."),)


class Deploys:
    """A gated tool with a side effect to count, and a harmless one beside it."""

    def __init__(self) -> None:
        self.deployed: list[dict[str, Any]] = []
        self.registry = ToolRegistry()
        schema = {
            "type": "object",
            "properties": {"env": {"type": "string"}},
            "required": ["env"],
            "additionalProperties": False,
        }
        self.registry.tool("ops__deploy", "Deploy.", schema)(self.deploy)
        self.registry.tool("ops__status", "Status.", {"type": "object"})(self.status)

    def deploy(self, args: dict[str, Any], ctx: ToolContext) -> str:
        self.deployed.append(args)
        return f"deployed to {args['env']}"

    def status(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return "all green"


def gates(policy: ToolServerApproval | None = None) -> Any:
    return gates_of(
        servers=[
            (
                "ops",
                [("deploy", "ops__deploy"), ("status", "ops__status")],
                policy or ToolServerApproval(tools=("deploy",)),
            )
        ],
        agents=[],
        rules=[],
        defaults=DEFAULTS,
    )


def loop_for(model: ScriptedModel, deploys: Deploys) -> CoreLoop:
    return CoreLoop(model, FixedContextWindow(200_000), deploys.registry)


def turn(number: int = 0, **fields: Any) -> TurnInput:
    fields.setdefault("history", HELLO)
    return TurnInput(task_id="t1", turn=number, task=conversation(), gates=gates(), **fields)


def decided(outcome_calls: tuple[PendingApproval, ...], verdict: str, **extra: Any) -> Any:
    return tuple(
        DecidedCall(
            call_id=p.call_id,
            name=p.tool,
            arguments_json='{"env": "prod"}',
            decision=Decision(verdict=verdict, by="alice", at="2026-12-02T06:00:00Z", **extra),  # type: ignore[arg-type]
        )
        for p in outcome_calls
    )


# -- policies ----------------------------------------------------------------------------------


def test_a_server_policy_gates_only_the_tools_it_lists() -> None:
    g = gates()
    assert g.requirement("ops__deploy") is not None
    assert g.requirement("ops__status") is None


def test_a_server_policy_without_tools_gates_all_of_them() -> None:
    g = gates(ToolServerApproval())
    assert g.requirement("ops__status") is not None


def test_a_task_rule_adds_a_requirement_and_narrows_who_decides() -> None:
    rule = TaskApprovalRule(tool_servers=("ops",), participants=("bob",))
    g = gates_of(
        servers=[("ops", [("deploy", "ops__deploy"), ("status", "ops__status")], None)],
        agents=[("reviewer", ApprovalPolicy(timeout_seconds=60))],
        rules=[rule, TaskApprovalRule(agents=("reviewer",), timeout_seconds=30)],
        defaults=DEFAULTS,
    )
    status = g.requirement("ops__status")
    assert status is not None
    assert status.admits("bob", Role.REPORTER)
    assert not status.admits("alice", Role.ASSIGNEE)
    spawn = g.requirement("spawn_subtask", "reviewer")
    assert spawn is not None
    assert spawn.timeout_seconds == 30
    assert g.requirement("spawn_subtask", "other") is None


def test_every_policy_must_admit_the_decider_and_the_strictest_timeout_action_wins() -> None:
    combined = requirement_of(
        [
            ("server", ApprovalPolicy(roles=(Role.ASSIGNEE,), on_timeout="approve")),
            ("task", ApprovalPolicy(participants=("bob",), allow_edit=True)),
        ],
        DEFAULTS,
    )
    assert combined is not None
    assert combined.admits("bob", Role.ASSIGNEE)
    assert not combined.admits("bob", Role.REPORTER)
    assert combined.on_timeout == "reject"
    assert not combined.allow_edit


def test_a_watcher_is_never_a_decider_role() -> None:
    with pytest.raises(ValidationError, match="a watcher only follows a task"):
        ApprovalPolicy(roles=(Role.WATCHER,))


def test_a_task_rule_must_name_something() -> None:
    with pytest.raises(ValidationError, match="names tools, toolServers or agents"):
        TaskApprovalRule()


def pending(**decision: Any) -> tuple[PendingApproval, ...]:
    requirement = requirement_of([("s", ApprovalPolicy(allow_edit=True))], DEFAULTS)
    assert requirement is not None
    return (
        PendingApproval(
            call_id="c1",
            tool="ops__deploy",
            arguments={"env": "prod"},
            requirement=requirement,
            expires_at="2026-12-02T07:00:00Z",
            turn=0,
            decision=Decision(**decision) if decision else None,
        ),
    )


def refuse(p: tuple[PendingApproval, ...], sender: str, role: Role | None, **kw: Any) -> Any:
    return refuse_decision(
        p,
        call_id=kw.get("call_id", "c1"),
        verdict=kw.get("verdict", "approve"),
        sender=sender,
        role=role,
        arguments=kw.get("arguments"),
    )


def test_who_may_decide_and_what_each_refusal_says() -> None:
    p = pending()
    assert refuse(p, "alice", Role.ASSIGNEE) is None
    assert refuse(p, "eve", None) == "refused: eve is not a participant of this task"
    assert "is a watcher and may not decide" in refuse(p, "wat", Role.WATCHER)
    assert "decided by assignees or admins" in refuse(p, "rep", Role.REPORTER)
    assert "no call 'nope' waits" in refuse(p, "alice", Role.ASSIGNEE, call_id="nope")
    assert "only an approval may carry" in refuse(
        p, "alice", Role.ASSIGNEE, verdict="reject", arguments={"env": "dev"}
    )


def test_the_same_decision_twice_is_not_refused_and_a_different_one_is() -> None:
    done = pending(verdict="approve", by="alice", at="2026-12-02T06:00:00Z")
    assert refuse(done, "alice", Role.ASSIGNEE) is None
    assert refuse(done, "admin", Role.ADMIN) == (
        "refused: call 'c1' was already approved by alice at 2026-12-02T06:00:00Z"
    )
    assert "already approved" in refuse(done, "alice", Role.ASSIGNEE, verdict="reject")


def test_long_arguments_are_shown_cut_and_say_so() -> None:
    shown, cut = shown_arguments('{"text": "' + "x" * 20_000 + '"}')
    assert cut
    assert set(shown) == {"_start"}
    assert shown_arguments('{"env": "prod"}') == ({"env": "prod"}, False)


# -- the control envelope ----------------------------------------------------------------------


def test_a_decision_envelope_round_trips_and_a_malformed_one_says_what_to_fix() -> None:
    message = control_message(
        "t1", "approve", call_id="c1", park="1-ab", reason="ok", arguments={"env": "dev"}
    )
    envelope = control_of(message)
    assert envelope is not None
    assert envelope.decision is not None
    assert envelope.decision.model_dump() == {
        "call_id": "c1",
        "park": "1-ab",
        "verdict": "approve",
        "reason": "ok",
        "arguments": {"env": "dev"},
    }
    with pytest.raises(InvalidEnvelopeError, match="call_id is missing"):
        control_of(control_message("t1", "reject"))
    with pytest.raises(InvalidEnvelopeError, match="arguments go only with approve"):
        control_of(control_message("t1", "reject", call_id="c1", arguments={}))
    completion = control_of(control_message("t1"))
    assert completion is not None
    assert completion.decision is None


# -- the turn ----------------------------------------------------------------------------------


async def test_a_gated_call_parks_the_turn_while_the_others_run() -> None:
    deploys = Deploys()
    model = ScriptedModel(calls(("ops__status", {}), ("ops__deploy", {"env": "prod"})))
    host = MemoryHost()
    outcome = await loop_for(model, deploys).run_turn(host, turn())

    assert outcome.kind is OutcomeKind.WAITING_FOR_APPROVAL
    assert (outcome.state, outcome.sub_state) == (
        TaskState.INPUT_REQUIRED,
        SubState.AWAITING_APPROVAL,
    )
    assert deploys.deployed == []
    (waiting,) = outcome.approvals
    assert (waiting.tool, waiting.arguments, waiting.decision) == (
        "ops__deploy",
        {"env": "prod"},
        None,
    )
    assert "ops__deploy (call call-1)" in outcome.text
    # The harmless call ran and its result is in the history; the gated one has none yet.
    results = [m.tool_call_id for m in outcome.history if m.role == "tool"]
    assert results == ["call-0"]
    assert isinstance(host.journal[-1], AwaitEntry)


async def test_an_approved_call_runs_once_in_the_next_turn_even_when_that_turn_is_resumed() -> None:
    deploys = Deploys()
    # The resumed turn asks the model again for the answer whose checkpoint was lost.
    model = ScriptedModel(
        calls(("ops__deploy", {"env": "prod"})), reply("Deployed."), reply("Deployed.")
    )
    parked = await loop_for(model, deploys).run_turn(MemoryHost(), turn())

    loop = loop_for(model, deploys)
    crashing = MemoryHost(crash_after=1)  # the call's result saved; dies at the model call
    again = turn(1, history=parked.history, decided=decided(parked.approvals, "approve"))
    with pytest.raises(HostCrashed):
        await loop.run_turn(crashing, again)
    saved = load_journal(dump_journal(crashing.journal))
    assert [e.id for e in saved] == ["t1/turn-1/tool-0-call-0"]

    resumed = TurnInput.model_validate({**again.model_dump(), "journal": saved})
    outcome = await loop.run_turn(MemoryHost(journal=list(saved)), resumed)
    assert deploys.deployed == [{"env": "prod"}]  # once, across the kill
    assert outcome.text == "Deployed."


async def test_an_edited_approval_runs_with_the_decider_s_arguments() -> None:
    deploys = Deploys()
    model = ScriptedModel(calls(("ops__deploy", {"env": "prod"})), reply("Done."))
    parked = await loop_for(model, deploys).run_turn(MemoryHost(), turn())
    again = turn(
        1,
        history=parked.history,
        decided=decided(parked.approvals, "approve", arguments={"env": "staging"}),
    )
    await loop_for(model, deploys).run_turn(MemoryHost(), again)
    assert deploys.deployed == [{"env": "staging"}]


async def test_a_rejected_call_becomes_a_result_the_model_reads() -> None:
    deploys = Deploys()
    model = ScriptedModel(calls(("ops__deploy", {"env": "prod"})), reply("Understood."))
    parked = await loop_for(model, deploys).run_turn(MemoryHost(), turn())
    host = MemoryHost()
    again = turn(
        1,
        history=parked.history,
        decided=decided(parked.approvals, "reject", reason="not on prod"),
    )
    await loop_for(model, deploys).run_turn(host, again)

    assert deploys.deployed == []
    result = model.requests[-1].messages[-1]
    assert result.role == "tool"
    assert result.is_error
    assert result.content == "Not run: ops__deploy was rejected by alice: not on prod."
    first = host.journal[0]
    assert isinstance(first, ToolEntry)
    assert first.id == "t1/turn-1/tool-0-call-0"


# -- the decision table ------------------------------------------------------------------------


SPEC = TaskSpec(
    goal="ship",
    participants=(
        Participant(id="alice", role=Role.ASSIGNEE),
        Participant(id="bob", role=Role.WATCHER),
    ),
)


def parked(**changes: Any) -> Facts:
    """A conversation parked after turn 2 with call c1 waiting, 60 s before its timeout."""
    base = Facts(
        initialised=True,
        state=TaskState.INPUT_REQUIRED,
        spec=SPEC,
        turn=2,
        approvals=pending(),
        approval_left=60.0,
    )
    return replace(base, **changes)


def deciding(sender: str, call_id: str = "c1", verdict: Any = "approve") -> Pending:
    request = DecisionRequest(call_id=call_id, verdict=verdict)
    return Pending("d1", sender, "decision", decision=request)


def test_an_admitted_decider_s_decision_is_applied() -> None:
    assert decide(parked(pending=(deciding("alice"),))) == ApplyDecision("d1")


def test_a_watcher_s_and_a_stranger_s_decisions_are_refused_with_the_reason() -> None:
    watcher = decide(parked(pending=(deciding("bob"),)))
    assert watcher == Refuse("d1", "refused: bob is a watcher and may not decide call 'c1'")
    stranger = decide(parked(pending=(deciding("mallory"),)))
    assert stranger == Refuse("d1", "refused: mallory is not a participant of this task")


def test_a_decision_on_a_call_that_does_not_wait_is_refused_naming_those_that_do() -> None:
    action = decide(parked(pending=(deciding("alice", "c9"),)))
    assert action == Refuse(
        "d1", "refused: no call 'c9' waits for a decision on this task (waiting: c1)"
    )


def test_while_a_call_waits_a_message_starts_no_turn_and_the_pass_wakes_at_the_timeout() -> None:
    action = decide(parked(pending=(Pending("m1", "alice", "ordinary"),)))
    assert action == WaitForInput(60.0)


def test_a_call_past_its_timeout_is_decided_by_its_policy() -> None:
    assert decide(parked(approval_left=0.0)) == TimeOutApprovals()


def test_once_every_call_is_decided_the_next_turn_runs_them() -> None:
    done = pending(verdict="approve", by="alice", at="2026-12-02T06:00:00Z")
    assert decide(parked(approvals=done, approval_left=None)) == RunTurn(3, resume=False)


def test_a_cancel_is_taken_before_a_decision_sent_beside_it() -> None:
    cancel = Pending("c1", "alice", "control", "cancel")
    assert decide(parked(pending=(deciding("alice"), cancel))) == ApplyControl("c1")


def test_a_0_3_client_s_envelope_without_a_media_type_is_read_as_the_envelope() -> None:
    message = control_message("t1", "reject", call_id="c1")
    message.parts[0].media_type = ""  # as the SDK's 0.3 conversion hands a data part over
    envelope = control_of(message)
    assert envelope is not None
    assert envelope.action == "reject"
    plain = Message(message_id="m", parts=[Part(data=json_format.ParseDict({"a": 1}, Value()))])
    assert control_of(plain) is None
