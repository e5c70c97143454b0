"""Approvals across agents: a remote task that waits for a decision, surfaced here, and the
decision relayed back.

A sub-task on a remote agent mirrors its remote task (:mod:`.remote`). When that task waits
for approval (a tiny-harness agent says so with sub-state ``awaiting-approval`` and its task
extension's ``approvals``), the sub-task here parks the same way, with the remote calls as
its own pending approvals: the participants *here* decide them, under the policy of the
``HarnessAgent`` the sub-task runs on (or the operator's defaults), with the same identity
checks as any decision (:func:`~tiny_harness.core.approval.refuse_decision`). Nothing is
flattened into a message, and nothing is decided for them.

The turn after the decisions relays each one to the remote task as the control envelope a
participant would send (approve or reject, the call id, the reason, an edit), with a message id
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

from collections.abc import Sequence

from a2a.types import Message, Task

from tiny_harness.core.a2a_task import extension_from_a2a
from tiny_harness.core.approval import (
    ApprovalDefaults,
    ApprovalPolicy,
    Gates,
    PendingApproval,
    Requirement,
    requirement_of,
)
from tiny_harness.core.clock import now, parse
from tiny_harness.core.control import control_message
from tiny_harness.core.errors import InvalidTaskError
from tiny_harness.core.remote_view import reply_id
from tiny_harness.core.reply_ids import command_reply_id
from tiny_harness.core.turn import DecidedCall, TurnRef

#: What a remote call needs here when nothing names its deciders: the operator's defaults.
_DEFAULT_POLICY = ApprovalPolicy()


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
    extra = {"arguments": decision.arguments} if decision.arguments is not None else {}
    return control_message(
        task_id,
        decision.verdict,
        context_id=context_id,
        message_id=relay_id(ref, decided.call_id),
        call_id=decided.call_id,
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
    found = requirement_of(list(gates.agents.get(agent, ())), defaults)
    if found is None:
        found = requirement_of([(source, _DEFAULT_POLICY)], defaults)
        assert found is not None
    return found.model_copy(
        update={"timeout_seconds": max(1, timeout), "sources": (*found.sources, source)}
    )


def remote_approvals(
    task: Task,
    *,
    agent: str,
    turn: int,
    gates: Gates,
) -> tuple[PendingApproval, ...]:
    """The remote task's undecided calls as this sub-task's own pending approvals (none
    when the remote task carries no tiny-harness task extension, or none waits)."""
    try:
        extension = extension_from_a2a(task)
    except InvalidTaskError:
        return ()
    source = f"the task {task.id} on agent {agent}"
    out = []
    for remote in extension.approvals:
        if remote.decision is not None:
            continue
        expires = parse(remote.expires_at)
        left = int((expires - now()).total_seconds()) if expires is not None else 1
        requirement = _requirement(gates, agent, gates.defaults, left, source)
        out.append(
            remote.model_copy(update={"turn": turn, "requirement": requirement, "decision": None})
        )
    return tuple(out)
