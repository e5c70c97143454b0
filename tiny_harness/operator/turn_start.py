"""What a turn starts from: the status write that starts (or resumes) it, and its input.

The start write takes the runner lease (:mod:`tiny_harness.operator.fences`) with the turn's
number, its attempts and its start time; the input is what the turn's loop is given: the
history before the turn, the journal of the turn so far (a resumed turn replays it), the
budget its model calls are held to, the agents and the approval gates it may use, and how far
its sub-tasks may reach.
"""

from __future__ import annotations

from typing import Any

from tiny_harness.core.approval import gates_of
from tiny_harness.core.clock import now, rfc3339
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.reach import Reach
from tiny_harness.core.remote_view import remote_ref_of
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import TaskUsage
from tiny_harness.core.turn import JournalEntry, TurnInput
from tiny_harness.core.usage import total
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.operator.inherited_rules import inherited_rules
from tiny_harness.operator.ports import SupervisedWorker
from tiny_harness.operator.snapshot import Snapshot, decided_calls, rows_json
from tiny_harness.operator.status_writes import resumed_conditions
from tiny_harness.operator.tool_offers import Offer


def lost_calls(snap: Snapshot) -> TaskUsage:
    """The model calls a resumed turn may have made and never journaled: at most one per
    earlier start (the loop journals a call's answer before its next call), counted against
    the budget whether or not their answers were kept."""
    earlier = snap.status.turn_attempts or 0
    return TaskUsage(model_calls=earlier)


async def start_patch(
    w: SupervisedWorker, snap: Snapshot, number: int, resume: bool
) -> tuple[dict[str, Any], Offer]:
    """The status write that starts (or resumes) turn ``number``, besides the runner, and
    what the task's tool servers offer the turn."""
    start: dict[str, Any] = {
        "state": TaskState.WORKING.value,
        "subState": None,
        "turn": number,
        "subTasks": rows_json(snap.rows),
    }
    raw_status = snap.obj.get("status") or {}
    # Counted on every start, so a turn that never finishes is given up after a bound
    # (decide.MAX_TURN_ATTEMPTS) rather than resumed, and its model asked, for ever.
    start["turnAttempts"] = (snap.status.turn_attempts or 0) + 1 if resume else 1
    if not (resume and raw_status.get("turnStartTime")):
        # A resumed turn keeps its start: the time the replica that ran it was away counts.
        start["turnStartTime"] = rfc3339(now())
    conditions = resumed_conditions(snap.status.conditions)
    # The task's tool servers: this turn's tools, and its ToolServersReady condition.
    offer = await w.rt.tool_servers.offer(w.namespace, snap.spec)
    conditions = offer.conditions(snap.status.conditions, conditions)
    if conditions is not None:
        start["conditions"] = conditions
    return start, offer


def turn_input(
    w: SupervisedWorker,
    snap: Snapshot,
    number: int,
    records: list[TurnRecord],
    history: tuple[ChatMessage, ...],
    journal: tuple[JournalEntry, ...],
    offer: Offer,
) -> TurnInput:
    """What the turn's loop is given (see the module docstring)."""
    remotes = w.rt.remotes
    used = total(snap.status.usage, snap.status.sub_task_usage) + lost_calls(snap)
    return TurnInput(
        task_id=w.name,
        turn=number,
        task=snap.extension(),
        history=history,
        journal=journal,
        budget=w.budgets.for_turn(snap, used),
        used=used,
        agents=remotes.directory.offered(w.namespace) if remotes else (),
        remote=remote_ref_of(e for r in records if r.turn < number for e in r.entries)
        if snap.spec.agent
        else None,
        gates=gates_of(
            servers=offer.servers,
            agents=remotes.directory.approvals(w.namespace) if remotes else (),
            rules=snap.spec.approval,
            defaults=w.rt.settings.approvals,
            inherited=inherited_rules(w.rt.cache, w.namespace, snap.obj),
        ),
        decided=decided_calls(snap.status.approvals, records, number),
        reach=Reach(
            allowed=w.rt.settings.reach,
            depth=w.rt.cache.depth(w.namespace, w.name),
            max_depth=w.rt.settings.max_sub_task_depth,
        ),
    )
