"""What one pass of a task's worker knows about the task, and the journal entries the worker
writes outside a turn.

A :class:`Snapshot` is read from the cache once per pass: the task object, its turn records,
its messages and its children, with what follows from them (the entries once each, what was
acknowledged, the messages still pending, the sub-task rows). Everything that decides reads it;
nothing in it is fetched from the API.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from tiny_harness.core.approval import Decision, PendingApproval, decision_key
from tiny_harness.core.clock import now, parse
from tiny_harness.core.deadlines import first_message_left
from tiny_harness.core.history import (
    AckEntry,
    NoticeEntry,
    RecordEntry,
    acknowledged,
    after_turn,
    replay_history,
)
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.reply_ids import refusal_id
from tiny_harness.core.retention import expires_in
from tiny_harness.core.settings import OperatorSettings
from tiny_harness.core.sizes import excerpt
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import (
    Budget,
    Lifecycle,
    SubTaskRow,
    TaskExtension,
    TaskSpec,
    TaskStatus,
)
from tiny_harness.core.turn import AwaitEntry, DecidedCall, JournalEntry
from tiny_harness.core.usage import total
from tiny_harness.kube.client import Obj
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.kube.names import FIRST_MESSAGE_ANNOTATION
from tiny_harness.operator.children import rows_of
from tiny_harness.operator.feed import rv_of


class Snapshot:
    """What one pass knows about the task, read from the cache."""

    def __init__(
        self,
        obj: Obj,
        records: list[TurnRecord],
        messages: list[StoredMessage],
        children: list[Obj],
    ) -> None:
        self.obj = obj
        self.spec = TaskSpec.model_validate(obj["spec"])
        self.status = TaskStatus.model_validate(obj.get("status") or {})
        self.records = records
        self.entries: list[RecordEntry] = unique_entries(records)
        self.acked = acknowledged(self.entries)
        self.pending = [m for m in messages if m.spec.message_id not in self.acked]
        self.children = children
        self.rows = rows_of(children, self.acked)

    @property
    def rv(self) -> str:
        return rv_of(self.obj)

    @property
    def lifecycle(self) -> Lifecycle:
        return self.status.lifecycle or self.spec.default_lifecycle

    def message(self, message_id: str) -> StoredMessage:
        return next(m for m in self.pending if m.spec.message_id == message_id)

    @property
    def decided_before(self) -> dict[str, Decision]:
        """Every decision the journal records (the notice of each), by its park and call
        (``core.approval.decision_key``)."""
        out: dict[str, Decision] = {}
        for entry in self.entries:
            if isinstance(entry, NoticeEntry) and isinstance(entry.metadata.get("approval"), dict):
                found = entry.metadata["approval"]
                try:
                    key = decision_key(str(found.get("park") or ""), str(found["call_id"]))
                    out[key] = Decision.model_validate(found["decision"])
                except (KeyError, ValueError):
                    continue
        return out

    @property
    def approvals(self) -> tuple[PendingApproval, ...]:
        """The calls that wait for a decision (or have one), while the task is parked for
        them; none otherwise (a list a later turn or an end has left behind counts for
        nothing)."""
        if self.status.sub_state != SubState.AWAITING_APPROVAL.value:
            return ()
        return self.status.approvals

    def extension(self, rows: tuple[SubTaskRow, ...] | None = None) -> TaskExtension:
        status = self.status.model_copy(update={"sub_tasks": self.rows if rows is None else rows})
        return TaskExtension.of(self.spec, status)

    def last_record(self, turn: int) -> TurnRecord | None:
        return next((r for r in reversed(self.records) if r.turn == turn), None)


def unique_entries(records: list[TurnRecord]) -> list[RecordEntry]:
    """Every entry once, in record order. Two replicas may both record the same notice (a
    command run twice in a race); entry ids are deterministic, so the first copy stands."""
    seen: set[str] = set()
    out: list[RecordEntry] = []
    for record in records:
        for entry in record.entries:
            if entry.id not in seen:
                seen.add(entry.id)
                out.append(entry)
    return out


def approval_left(approvals: Sequence[PendingApproval], moment: dt.datetime) -> float | None:
    """Seconds until the first undecided call's timeout acts (row 9a of decide); None: no
    call waits. A deadline that cannot be read has passed: no call waits for ever."""
    lefts = []
    for pending in approvals:
        if pending.decision is None:
            at = parse(pending.expires_at)
            lefts.append((at - moment).total_seconds() if at is not None else 0.0)
    return min(lefts) if lefts else None


def late_calls(approvals: Sequence[PendingApproval], moment: dt.datetime) -> frozenset[str]:
    """The undecided calls whose deadline has passed at ``moment`` (a decision on one is
    late: its timeout decides it). A deadline that cannot be read has passed."""
    late = set()
    for pending in approvals:
        if pending.decision is None:
            at = parse(pending.expires_at)
            if at is None or at <= moment:
                late.add(pending.call_id)
    return frozenset(late)


def decided_calls(
    approvals: Sequence[PendingApproval], records: Sequence[TurnRecord], turn: int
) -> tuple[DecidedCall, ...]:
    """What turn ``turn`` runs (or answers) first: the calls the turn before it parked, each
    with its decision and its arguments as the model gave them (the park's journal entry
    holds them whole; the status may show them cut). Empty for any other turn, so a decision
    is acted on by the turn right after its park and by no later one."""
    asked = {
        (e.park, e.call_id): e
        for r in records
        if r.turn == turn - 1
        for e in r.entries
        if isinstance(e, AwaitEntry)
    }
    out: list[DecidedCall] = []
    for pending in approvals:
        if pending.turn != turn - 1 or pending.decision is None:
            continue
        entry = asked.get((pending.park, pending.call_id))
        decision = pending.decision
        if entry is not None:
            arguments = entry.arguments_json
        elif not pending.arguments_cut:
            arguments = json.dumps(pending.arguments)
        else:  # pragma: no cover - the park's record is read with the task's records
            arguments = "{}"
            decision = Decision(
                verdict="reject",
                by=decision.by,
                at=decision.at,
                reason="its arguments could not be read back from the journal",
            )
        out.append(
            DecidedCall(
                call_id=pending.call_id,
                name=pending.tool,
                arguments_json=arguments,
                decision=decision,
                model_call_id=entry.model_call_id if entry is not None else pending.model_call_id,
                relay_park=pending.relay_park,
            )
        )
    return tuple(out)


def history_before(records: list[TurnRecord], turn: int) -> tuple[ChatMessage, ...]:
    """The model history at the start of ``turn``: each earlier turn's delta applied in order,
    or, for a turn that was cut before it ended, its journal replayed."""
    history: tuple[ChatMessage, ...] = ()
    by_turn: dict[int, list[TurnRecord]] = {}
    for r in records:
        if r.turn < turn:
            by_turn.setdefault(r.turn, []).append(r)
    for number in sorted(by_turn):
        chunks = sorted(by_turn[number], key=lambda c: c.chunk)
        if any(c.ended for c in chunks):
            history = after_turn(history, chunks)  # its delta, in as many pieces as it took
        else:
            loop_entries: list[JournalEntry] = [
                e for e in unique_entries(chunks) if not isinstance(e, (NoticeEntry, AckEntry))
            ]
            if loop_entries:
                history = replay_history(history, loop_entries)
    return history


def ack_entry(message: StoredMessage) -> AckEntry:
    spec = message.spec
    # An excerpt: the message itself is its object; a refused one may be too big to copy.
    text = excerpt(spec.shown)
    return AckEntry(
        id=f"ack-{spec.message_id}", message_id=spec.message_id, sender=spec.sender, text=text
    )


def refusal_entries(message: StoredMessage, reason: str) -> tuple[RecordEntry, ...]:
    mid = message.spec.message_id
    return (
        ack_entry(message),
        NoticeEntry(id=refusal_id(mid), text=reason, metadata={"refused": mid}),
    )


def rows_json(rows: tuple[SubTaskRow, ...]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in rows]


def awaited_first_message(snap: Snapshot) -> str | None:
    """The id of the first message the task's creator announced (names.FIRST_MESSAGE_ANNOTATION)
    while it has not been seen: neither pending nor taken (drained, acknowledged, refused)."""
    announced = (snap.obj["metadata"].get("annotations") or {}).get(FIRST_MESSAGE_ANNOTATION)
    if not isinstance(announced, str) or not announced or announced in snap.acked:
        return None
    if any(m.spec.message_id == announced for m in snap.pending):
        return None
    return announced


def first_message_wait(
    snap: Snapshot, settings: OperatorSettings, moment: dt.datetime
) -> float | None:
    """Seconds the new task may still wait for the first message its creator announced (row 11
    of decide; ``[operator] first_message_seconds`` from its start); None: it is not waiting."""
    if snap.status.state is not TaskState.SUBMITTED or awaited_first_message(snap) is None:
        return None
    return first_message_left(settings.first_message_seconds, snap.obj.get("status") or {}, moment)


def idle_timeout(snap: Snapshot, settings: OperatorSettings) -> int | None:
    """How long the conversation may wait for its next message (no other task idles out)."""
    if snap.lifecycle is not Lifecycle.CONVERSATION:
        return None
    return snap.spec.idle_timeout_seconds or settings.idle_timeout_seconds


def budget_freed(snap: Snapshot, budget: Budget | None) -> bool:
    """The task waits for its budget (awaiting-budget), and ``budget`` now leaves it room."""
    status = snap.status
    if status.sub_state != SubState.AWAITING_BUDGET.value:
        return False
    used = total(status.usage, status.sub_task_usage)
    return budget is None or budget.exceeded_by(used) is None


def expires_in_of(obj: Obj, default_ttl: int | None) -> float | None:
    """Seconds until the ended task is to be deleted (:mod:`tiny_harness.core.retention`),
    read from the object as it is, so a spec that does not parse has one too."""
    status = obj.get("status") or {}
    ttl = (obj.get("spec") or {}).get("ttlSecondsAfterFinished")
    if not isinstance(ttl, int) or isinstance(ttl, bool):
        ttl = default_ttl
    try:
        state = TaskState(str(status.get("state") or ""))
    except ValueError:
        return None
    return expires_in(state, status.get("completionTime"), ttl, now())
