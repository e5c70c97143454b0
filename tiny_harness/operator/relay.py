"""Approvals across agents: a remote task that waits for a decision, surfaced here, and the
decision relayed back.

A sub-task on a remote agent mirrors its remote task (:mod:`.remote_turn`). When that task waits
for approval (a tiny-harness agent says so with sub-state ``awaiting-approval`` and its task
extension's ``approvals``), the sub-task here parks the same way, with the remote calls as
its own pending approvals: the participants *here* decide them, under the policy of the
``HarnessAgent`` the sub-task runs on (or the operator's defaults), with the same identity
checks as any decision (:func:`~tiny_harness.core.approval.refuse_decision`). Nothing is
flattened into a message, and nothing is decided for them.

The turn after the decisions relays each one to the remote task as the control envelope a
participant would send (approve or reject, the call id, the park it waits in there, the
reason, an edit), with a message id
made from this turn and the call (so a resend after a crash is the same message, which the
remote harness takes once), and then follows the remote task as any turn does. The remote
agent checks that the harness (the identity it knows this operator by, the remote task's
creator and assignee) may decide.

**What counts as the answer.** Each decision is answered on the remote task by a status
message of its own (``cmd-<message id>``) while the task still waits, so after a relay the
remote task has answered only once its status message is none of those and not the park it
showed before: the turn it then runs has ended (or the task has).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence

from a2a.types import Message, Part, Role, Task

from tiny_harness.core.a2a_task import extension_from_a2a
from tiny_harness.core.approval import (
    ApprovalDefaults,
    ApprovalPolicy,
    Gates,
    PendingApproval,
    Requirement,
    distinct_call_ids,
    new_park,
    requirement_of,
    shown_arguments,
)
from tiny_harness.core.clock import now, parse, rfc3339
from tiny_harness.core.control_envelope import control_message
from tiny_harness.core.errors import InvalidTaskError
from tiny_harness.core.extensions import KAGENT_HITL_EXT_URI
from tiny_harness.core.remote_view import kagent_request, reply_id
from tiny_harness.core.reply_ids import command_reply_id
from tiny_harness.core.turn import DecidedCall, TurnRef

#: What a remote call needs here when nothing names its deciders: the operator's defaults.
_DEFAULT_POLICY = ApprovalPolicy()


def _kagent_approvals(
    task: Task, *, agent: str, turn: int, gates: Gates, source: str
) -> tuple[PendingApproval, ...]:
    """kagent's pending calls: ``tools[]`` of its request, each decided by its ``id`` (the
    token kagent correlates a decision with). kagent takes no edited arguments and has no
    timeout of its own: the policy here sets it."""
    request = kagent_request(task.status.message) if task.status.HasField("message") else None
    if request is None:
        return ()
    requirement = _requirement(gates, agent, gates.defaults, 0, f"{source} (kagent hitl)")
    requirement = requirement.model_copy(
        update={"allow_edit": False, "timeout_seconds": _timeout(gates, agent)}
    )
    expires = rfc3339(now() + dt.timedelta(seconds=requirement.timeout_seconds))
    park = new_park(turn)
    out = []
    for tool in request.get("tools") or ():
        if not isinstance(tool, dict) or not tool.get("id") or not tool.get("name"):
            continue
        shown, cut = shown_arguments(json.dumps(tool.get("args") or {}))
        out.append(
            PendingApproval(
                call_id=str(tool["id"]),
                park=park,
                tool=str(tool["name"]),
                arguments=shown,
                arguments_cut=cut,
                turn=turn,
                requirement=requirement,
                expires_at=expires,
            )
        )
    return _distinct(out)


def _distinct(calls: Sequence[PendingApproval]) -> tuple[PendingApproval, ...]:
    """The remote calls with ids unique in this park (``core.approval.distinct_call_ids``): a
    remote agent may send two under one id. A renamed call keeps the remote's id as its
    ``model_call_id``, which the relayed decision names there."""
    ids = distinct_call_ids([c.call_id for c in calls])
    return tuple(
        c
        if made == c.call_id
        else c.model_copy(update={"call_id": made, "model_call_id": c.call_id})
        for c, made in zip(calls, ids, strict=True)
    )


def _timeout(gates: Gates, agent: str) -> int:
    found = requirement_of(list(gates.agents.get(agent, ())), gates.defaults)
    return found.timeout_seconds if found is not None else gates.defaults.timeout_seconds


def kagent_response(
    ref: TurnRef, decided: Sequence[DecidedCall], task_id: str, context_id: str, decided_here: str
) -> Message:
    """kagent's ``tool_approval_response``: every pending call's decision in one message
    (kagent refuses a response that leaves one out), with the reason of a rejection."""
    approvals = []
    for call in decided:
        decision = call.decision
        entry: dict[str, object] = {"id": call.answers, "approved": decision.verdict == "approve"}
        if decision.verdict == "reject":
            entry["rejection_reason"] = (
                f"{decision.reason} (rejected by {decision.by} on {decided_here})"
                if decision.reason
                else f"rejected by {decision.by} on {decided_here}"
            )
        approvals.append(entry)
    said = "; ".join(c.decision.text(c.name) for c in decided)
    message = Message(
        message_id=relay_id(ref, "kagent"),
        task_id=task_id,
        context_id=context_id,
        role=Role.ROLE_USER,
        parts=[Part(text=said)],
        extensions=[KAGENT_HITL_EXT_URI],
    )
    message.metadata.update(
        {KAGENT_HITL_EXT_URI: {"type": "tool_approval_response", "approvals": approvals}}
    )
    return message


def relay_id(ref: TurnRef, call_id: str) -> str:
    """The A2A message id that carries the decision on remote call ``call_id``."""
    return f"{ref.prefix}/decision-{call_id}"


def decision_message(
    ref: TurnRef, decided: DecidedCall, task_id: str, context_id: str, decided_here: str
) -> Message:
    """The control envelope that relays ``decided`` to the remote task ``task_id``; the
    reason says who decided it here (``decided_here``: this task's name)."""
    decision = decided.decision
    by = f"{decision.by} on {decided_here}"
    reason = f"{decision.reason} (decided by {by})" if decision.reason else f"decided by {by}"
    extra: dict[str, object] = {}
    if decision.arguments is not None:
        extra["arguments"] = decision.arguments
    if decided.relay_park:
        extra["park"] = decided.relay_park
    return control_message(
        task_id,
        decision.verdict,
        context_id=context_id,
        message_id=relay_id(ref, decided.call_id),
        call_id=decided.answers,
        reason=reason,
        **extra,
    )


def awaited(before: str, ref: TurnRef, decided: Sequence[DecidedCall]) -> frozenset[str]:
    """The remote status messages that do not answer a relay of ``decided``: the park the
    remote task showed before (``before``) and each decision's own reply."""
    replies = {reply_id(command_reply_id(relay_id(ref, d.call_id))) for d in decided}
    return frozenset({before, *replies})


def _requirement(
    gates: Gates, agent: str, defaults: ApprovalDefaults, timeout: int, source: str
) -> Requirement:
    """Who decides a remote call here: the agent's own policy and the task's rules for it,
    or, when none names one, the operator's default roles."""
    policies = list(gates.agents.get(agent, ())) or [(source, _DEFAULT_POLICY)]
    found = requirement_of(policies, defaults)
    assert found is not None
    sources = found.sources if source in found.sources else (*found.sources, source)
    return found.model_copy(update={"timeout_seconds": max(1, timeout), "sources": sources})


def remote_approvals(
    task: Task,
    *,
    agent: str,
    turn: int,
    gates: Gates,
) -> tuple[PendingApproval, ...]:
    """The remote task's undecided calls as this sub-task's own pending approvals: from a
    tiny-harness task extension, or from kagent's ``tool_approval_request`` (none when the
    remote task carries neither, or none waits)."""
    source = f"the task {task.id} on agent {agent}"
    try:
        extension = extension_from_a2a(task)
    except InvalidTaskError:
        return _kagent_approvals(task, agent=agent, turn=turn, gates=gates, source=source)
    out = []
    park = new_park(turn)  # this sub-task's own park: a decision here names it
    for remote in extension.approvals:
        if remote.decision is not None:
            continue
        expires = parse(remote.expires_at)
        left = int((expires - now()).total_seconds()) if expires is not None else 1
        requirement = _requirement(gates, agent, gates.defaults, left, source)
        update = {
            "turn": turn,
            "requirement": requirement,
            "decision": None,
            "park": park,
            "relay_park": remote.park or None,
            # The remote's own call id is what the decision names there, not its model's.
            "model_call_id": None,
        }
        out.append(remote.model_copy(update=update))
    return _distinct(out)
