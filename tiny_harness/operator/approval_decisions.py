"""Recording the decisions on calls that wait for approval: a participant's, and a timeout's.

:func:`~tiny_harness.core.decide.decide` has already judged the decision
(:func:`~tiny_harness.core.approval.refuse_decision`: the sender's identity against the call's
requirement); what is left is to record it, in this order:

1. the task's status (``status.approvals``: the decision beside its call, and the status
   message saying it), which is what the next turn acts on and what every front end shows;
2. the journal: the decision as a notice in the history (who, when, what, with the edited
   arguments) under the id that answers the decider's message
   (:func:`~tiny_harness.core.reply_ids.command_reply_id`: a send that carried it ends when
   it is written), and the message's acknowledgement.

A crash between the two leaves the message pending with its decision already in the status:
the next pass judges it a repeat (the same decision by the same sender is not refused) and
writes the journal again, under the same ids. So a decision is recorded once, and the call it
approves runs once, in the turn the next pass starts when no call waits any more.

**Races.** One pass at a time runs for a task, and each takes one message: of two deciders,
the first message taken wins and the second is told who decided (a refusal in its history,
as any refusal). A decision and a cancel are taken in the order decide's table gives them:
a cancel (row 7) before any decision (row 7b); a cancel after an approval but before the
turn that would run the call cancels the task, and the call never runs.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from tiny_harness.core.approval import (
    TIMEOUT_DECIDER,
    Decision,
    PendingApproval,
    is_repeat,
    timeout_id,
)
from tiny_harness.core.clock import now, parse, rfc3339
from tiny_harness.core.history import NoticeEntry, RecordEntry
from tiny_harness.core.reply_ids import command_reply_id
from tiny_harness.core.task import TEXT_MAX
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.operator import failpoints
from tiny_harness.operator.ports import Acting
from tiny_harness.operator.snapshot import Snapshot, ack_entry

log = logging.getLogger(__name__)


def _outcome(decision: Decision) -> str:
    if decision.by == TIMEOUT_DECIDER:
        return f"timed_out_{'approved' if decision.verdict == 'approve' else 'rejected'}"
    if decision.verdict == "reject":
        return "rejected"
    return "edited" if decision.arguments is not None else "approved"


def _parked_at(pending: PendingApproval) -> dt.datetime | None:
    expires = parse(pending.expires_at)
    if expires is None:
        return None
    return expires - dt.timedelta(seconds=pending.requirement.timeout_seconds)


def _notice(notice_id: str, pending: PendingApproval, decision: Decision) -> NoticeEntry:
    metadata: dict[str, Any] = {
        "approval": {
            "call_id": pending.call_id,
            "park": pending.park,
            "tool": pending.tool,
            "decision": decision.model_dump(mode="json", exclude_none=True),
        }
    }
    return NoticeEntry(id=notice_id, text=decision.text(pending.tool), metadata=metadata)


def _dump(approvals: tuple[PendingApproval, ...]) -> list[dict[str, Any]]:
    return [a.model_dump(mode="json", by_alias=True, exclude_none=True) for a in approvals]


class ApprovalDecisions:
    """Records the decisions on a task's calls that wait for approval (see the module
    docstring)."""

    def __init__(self, worker: Acting) -> None:
        self.w = worker

    async def record(self, snap: Snapshot, message: StoredMessage) -> None:
        """Record a participant's decision, judged already (row 7b of decide)."""
        request = message.spec.decision
        assert request is not None  # decide() only sends decisions here
        sender = message.spec.sender
        approvals = snap.approvals
        pending = next(p for p in approvals if p.call_id == request.call_id)
        if is_repeat(approvals, request.call_id, request.verdict, sender):
            decision = pending.decision
            assert decision is not None
        else:
            decision = Decision(
                verdict=request.verdict,
                by=sender,
                at=rfc3339(),
                reason=request.reason,
                arguments=request.arguments,
            )
            reply = (command_reply_id(message.spec.message_id), decision.text(pending.tool))
            await self._into_status(snap, {request.call_id: decision}, reply)
        log.info(
            "task %s/%s: call %s (%s) %s by %s",
            *self.w.key,
            pending.call_id,
            pending.tool,
            decision.verdict,
            sender,
        )
        await self.w.notices.append(
            snap,
            (
                ack_entry(message),
                _notice(command_reply_id(message.spec.message_id), pending, decision),
            ),
        )
        failpoints.decision_recorded(self.w.name)

    async def time_out(self, snap: Snapshot) -> None:
        """Decide every call whose timeout has passed as its policy says (row 9a)."""
        moment = now()
        decided: dict[str, Decision] = {}
        notices: list[RecordEntry] = []
        for pending in snap.approvals:
            expires = parse(pending.expires_at)
            if pending.decision is not None or (expires is not None and expires > moment):
                continue
            decision = Decision(
                verdict="approve" if pending.requirement.on_timeout == "approve" else "reject",
                by=TIMEOUT_DECIDER,
                at=rfc3339(moment),
                reason=f"not decided within {pending.requirement.timeout_seconds}s "
                f"(onTimeout: {pending.requirement.on_timeout})",
            )
            decided[pending.call_id] = decision
            notices.append(_notice(timeout_id(pending.call_id, pending.park), pending, decision))
        if not decided:
            return
        # The status message is the last notice, under its id: each text shows once.
        last = notices[-1]
        assert isinstance(last, NoticeEntry)
        await self._into_status(snap, decided, (last.id, last.text))
        await self.w.notices.append(snap, tuple(notices))

    async def _into_status(
        self, snap: Snapshot, decided: dict[str, Decision], message: tuple[str, str]
    ) -> None:
        """Write the decisions into the status, with ``message`` (id, text) as its message:
        the text and the id of a notice the journal gets too, so a reader shows it once (how
        many calls still wait is in ``approvals`` itself)."""
        approvals = tuple(
            p.model_copy(update={"decision": decided[p.call_id]}) if p.call_id in decided else p
            for p in snap.approvals
        )
        message_id, text = message
        await self.w.status.write(
            {
                "approvals": _dump(approvals),
                "message": text[:TEXT_MAX],
                "messageId": message_id,
            }
        )
        metrics = self.w.rt.metrics
        for pending in snap.approvals:
            decision = decided.get(pending.call_id)
            if decision is None:
                continue
            metrics.approvals.labels(outcome=_outcome(decision)).inc()
            parked = _parked_at(pending)
            if parked is not None:
                metrics.approval_wait_seconds.observe(max((now() - parked).total_seconds(), 0))
