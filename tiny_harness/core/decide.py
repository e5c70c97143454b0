"""Decide, then act: the one next step for a task, from what is known about it.

The operator's worker never chooses what to do inline. Each pass it gathers the facts (the
task's status, the messages its journals have not taken yet, whether its records are current,
who holds its runner lease, its children's news) and asks :func:`decide` for one action. The
function is pure, so every combination can be tested without a cluster, and the worker that
carries the action out holds no logic of its own about *whether* to do it. The actions are plain
data, each with what is needed to carry it out (:mod:`tiny_harness.core.actions`); this module is
what the tables look at and the tables themselves.

The table, first match wins (``docs/design/runtime.md`` explains each row):

====  ===============================================  =========================================
 #    when                                             action
====  ===============================================  =========================================
 1    no status yet                                    :class:`Initialise`
 2    rejected spec                                    row 13
 3    the last turn's record is not in view yet        :class:`AwaitRecords`
 4    another replica holds a live lease               :class:`WaitForLease`
 4a   the parent has ended, this task has not          :class:`EndWithParent` (cancel it)
 5    a pending message from a non-participant, or     :class:`Refuse`
      one too big to take (:mod:`.sizes`)
 6    ended task (not a resumable failure): a message  :class:`Refuse`, or :class:`Acknowledge`
      (a control that already took effect is acked)    for the control that ended it, from
                                                       someone who may end the task
 7    a control (complete, cancel)                     :class:`ApplyControl` or :class:`Refuse`
 7a   a participant task: a message from anyone but    :class:`Refuse`
      its assignee (it is not the answer)
 7b   a decision on a call that waits for approval     :class:`ApplyDecision`, or :class:`Refuse`
                                                       saying who may decide, that no such
                                                       call waits, that it names another park
                                                       than the open one (or none), that it
                                                       is late, or that it was decided
                                                       otherwise (:mod:`.approval`)
 8    a command before any ordinary message            :class:`RunCommand`
 9    an open turn (lease mine or expired), not ended  :class:`RunTurn` (resume), or
                                                       :class:`GiveUpTurn` once it has been
                                                       started :data:`MAX_TURN_ATTEMPTS` times,
                                                       or :class:`FailPastDeadline` when the
                                                       task has worked its activeDeadlineSeconds
 9a   calls wait for approval, one past its timeout    :class:`TimeOutApprovals` (as each one's
                                                       policy says); while none has passed,
                                                       nothing starts a turn: messages and news
                                                       wait, and the pass rests as row 14 does
 10   an ordinary message, a child's news, a budget    :class:`RunTurn` (a new turn), or
      raised for a task that waited for it, or every
      waiting call decided                             :class:`FailPastDeadline` (as row 9)
 11   a conversation just submitted                    :class:`Park`; or, while the first
                                                       message its creator announced has not
                                                       come, :class:`AwaitFirstMessage` (it
                                                       stays SUBMITTED; see below)
 12   the sub-task rows differ from the children       :class:`SyncRows`
 13   an ended task whose time to live has passed      :class:`Collect`
      (:mod:`tiny_harness.core.retention`), or has not  :class:`WaitToCollect`
 14   a task waiting for a participant past its        :class:`InputTimedOut`
      input timeout (:mod:`.deadlines`), or not yet    :class:`WaitForInput`
 14a  a conversation parked for its next message past  :class:`IdleEnded`
      its idle timeout, or not yet                     :class:`WaitForInput`
 15   otherwise                                        :class:`Nothing`
====  ===============================================  =========================================

**A first message that follows its task** (row 11). A task created by its first message (the
gateway's ``SendMessage`` without a task id) is written before that message, whose object name
holds the task's uid; its creator announces the message on the task
(``kube.names.FIRST_MESSAGE_ANNOTATION``: the message's id). The rule:

- while the announced message is not seen (neither pending nor taken), the conversation is not
  parked: it stays ``SUBMITTED`` (:class:`AwaitFirstMessage`: nothing written, a pass again
  when the bound runs out; the message's own event comes sooner);
- when it arrives, row 10 starts the first turn: ``SUBMITTED`` → ``WORKING`` → its answer,
  never through a parked state the task did not choose (a first command or control is served
  as itself, rows 7 and 8, and the task parks after it);
- the wait is bounded by ``[operator] first_message_seconds`` from ``status.startTime``
  (:func:`tiny_harness.core.deadlines.first_message_left`, ``Facts.first_message_left``); past
  it the task parks as one without the annotation does, its status text saying the announced
  message never came (``Park(overdue=True)``);
- a task without the annotation (``kubectl apply`` of a manifest, a sub-task the operator
  creates) parks at once, as before.

A failed *conversation* is resumable: a participant's next message starts a new turn (row 10),
and a participant may still complete or cancel it. Every other ended task only answers messages
with a refusal.

**While a turn runs**, each change of the task is looked at by :func:`decide_during_turn`,
the second table (first match wins; ``docs/design/runtime.md``, "While a turn runs"):

====  ===============================================  =========================================
 #    when                                             action
====  ===============================================  =========================================
 T1   the task is gone (deleted, or going)             :class:`CutTurn` (``GONE``)
 T1a  the parent has ended                             :class:`CutTurn` (``PARENT``); the next
                                                       pass cancels the task (row 4a)
 T2   a control from someone who may end the task      :class:`CutTurn` (``CONTROL``); the next
      (a completion only when it would be accepted:    pass applies it (row 7); a completion
      judged before it cuts)                           that would be refused leaves the turn
                                                       alone, and is refused when it ends
 T3   the turn has closed                              :class:`KeepGoing`: the next pass runs
                                                       what is left
 T4   a command not yet run in this turn               :class:`RunCommandNow`
 T5   the sub-task rows differ from the children       :class:`SyncRowsNow`
 T6   otherwise                                        :class:`KeepGoing`
====  ===============================================  =========================================

The lease watchdog and the deadline cut with their own reasons (``LEASE``, ``DEADLINE``); the
first reason given is the one the turn ends with (:class:`CutReason`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from tiny_harness.core.actions import (
    Acknowledge,
    Action,
    ApplyControl,
    ApplyDecision,
    AwaitFirstMessage,
    AwaitRecords,
    Collect,
    CutReason,
    CutTurn,
    DuringTurn,
    EndWithParent,
    FailPastDeadline,
    GiveUpTurn,
    IdleEnded,
    Initialise,
    InputTimedOut,
    KeepGoing,
    Nothing,
    Park,
    Refuse,
    RunCommand,
    RunCommandNow,
    RunTurn,
    SyncRows,
    SyncRowsNow,
    TimeOutApprovals,
    WaitForInput,
    WaitForLease,
    WaitToCollect,
)
from tiny_harness.core.approval import (
    Decision,
    DecisionRequest,
    PendingApproval,
    all_decided,
    refuse_decision,
    undecided,
)
from tiny_harness.core.commands.parse import parse_command
from tiny_harness.core.commands.registry import CommandRegistry
from tiny_harness.core.inbox import MessageSpec, refuse_parts
from tiny_harness.core.sizes import refuse_size
from tiny_harness.core.speakers import refuse_answer, refuse_ending, refuse_speaker
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Lifecycle, OnIdle, OnTimeout, TaskSpec

MessageKind = Literal["ordinary", "control", "command", "decision"]


@dataclass(frozen=True)
class Pending:
    """A message no journal has taken yet, classified by the worker."""

    message_id: str
    sender: str
    kind: MessageKind
    control: str | None = None
    #: Why the message cannot be taken at all, whoever sent it (too big): refused first.
    refusal: str | None = None
    #: A decision's call, verdict and arguments (kind ``decision``).
    decision: DecisionRequest | None = None


def pending_of(message: MessageSpec, registry: CommandRegistry) -> Pending:
    """How a waiting message is seen, by the reconciler and by a running turn alike (one
    classification): a control, a command, or ordinary words for the model; and whether it
    is too big to be taken (``core/sizes.py``)."""
    kind: MessageKind = "ordinary"
    if message.control is not None:
        kind = "control"
    elif message.decision is not None:
        kind = "decision"
    elif parse_command(message, registry) is not None:
        kind = "command"
    return Pending(
        message.message_id,
        message.sender,
        kind,
        message.control,
        refuse_size(message) or refuse_parts(message.parts),
        message.decision,
    )


class Lease(StrEnum):
    """The runner lease as this replica sees it."""

    FREE = "free"  # nobody runs a turn
    MINE = "mine"  # this replica's identity holds it (a turn of ours, or one we were running)
    HELD = "held"  # another replica holds it and has renewed it within the lease time
    EXPIRED = "expired"  # another replica held it, unrenewed for the whole lease time


@dataclass(frozen=True)
class Facts:
    """Everything :func:`decide` may look at."""

    initialised: bool
    state: TaskState | None = None
    lifecycle: Lifecycle = Lifecycle.CONVERSATION
    spec: TaskSpec | None = None
    records_current: bool = True
    lease: Lease = Lease.FREE
    lease_wait: float = 0.0
    turn: int = 0
    #: How many times the open turn has been started (``status.turnAttempts``).
    attempts: int = 0
    pending: tuple[Pending, ...] = ()
    news: bool = False
    rows_stale: bool = False
    #: Seconds until the ended task is to be deleted (zero or less: now); None: never.
    expires_in: float | None = None
    #: Seconds of working time left before activeDeadlineSeconds; None: no deadline.
    deadline_left: float | None = None
    #: Seconds the task may still wait for a participant; None: not waiting, or no timeout.
    input_left: float | None = None
    on_timeout: OnTimeout = "fail"
    #: Seconds a conversation parked for its next message may still wait; None: no bound.
    idle_left: float | None = None
    on_idle: OnIdle = "complete"
    #: The task waits for its budget to be raised, and it has been: a new turn continues.
    budget_freed: bool = False
    #: The parent's name and terminal state, once the parent (this task's owner) has ended.
    parent_ended: tuple[str, TaskState] | None = None
    #: Seconds a new conversation may still wait for the first message its creator announced
    #: (zero or less: the bound has passed); None: none was announced, or it has been seen.
    first_message_left: float | None = None
    #: The calls that wait for (or have) a decision (status.approvals), while the task is
    #: parked awaiting approval; empty otherwise.
    approvals: tuple[PendingApproval, ...] = ()
    #: Seconds until the first undecided call's timeout acts (zero or less: it has); None:
    #: no call waits.
    approval_left: float | None = None
    #: The decisions the task's journal holds, by park and call
    #: (:func:`~tiny_harness.core.approval.decision_key`): a late decider is told who won.
    decided_before: Mapping[str, Decision] = field(default_factory=dict)
    #: The undecided calls whose deadline has passed: a decision on one is refused as late.
    late_calls: frozenset[str] = frozenset()


#: How many times one turn may be started before it is given up: each start after the first
#: resumes it from its journal, and may ask the model again for the step it was in (the one
#: model call whose answer had not been journaled yet), so the bound is the bound on those.
MAX_TURN_ATTEMPTS = 4

#: The terminal state each control leaves a task in.
CONTROL_ENDS_IN = {"cancel": TaskState.CANCELED, "complete": TaskState.COMPLETED}


def resumable(state: TaskState | None, lifecycle: Lifecycle) -> bool:
    """A failed conversation takes messages again; every other ended task is closed."""
    return state is TaskState.FAILED and lifecycle is Lifecycle.CONVERSATION


def decide(facts: Facts) -> Action:
    """The one next action for a task (see the table in the module docstring)."""
    if not facts.initialised or facts.state is None:
        return Initialise()
    if facts.state is TaskState.REJECTED or facts.spec is None:
        return _at_rest(facts)
    if not facts.records_current:
        return AwaitRecords()
    if facts.lease is Lease.HELD:
        return WaitForLease(max(facts.lease_wait, 0.0))
    spec = facts.spec
    if facts.parent_ended is not None and not facts.state.is_terminal:
        return EndWithParent(*facts.parent_ended)
    closed = facts.state.is_terminal and not resumable(facts.state, facts.lifecycle)
    for m in facts.pending:
        why = refuse_speaker(spec, m.sender, m.message_id) or m.refusal
        if why is not None:
            return Refuse(m.message_id, why)
        if closed:
            if (
                m.kind == "control"
                and CONTROL_ENDS_IN.get(m.control or "") is facts.state
                and refuse_ending(spec, m.sender, m.control or "end") is None
            ):
                return Acknowledge(m.message_id)
            return Refuse(
                m.message_id, f"refused: the task is in a terminal state ({facts.state.value})"
            )
    for m in facts.pending:
        if m.kind == "control":
            why = refuse_ending(spec, m.sender, m.control or "end")
            return Refuse(m.message_id, why) if why else ApplyControl(m.message_id)
    if facts.lifecycle is Lifecycle.PARTICIPANT:
        # A person's task is answered by its assignee alone (row 7a): anyone else's words are
        # refused, so they never complete it, and the answer's turn takes only the assignee's.
        for m in facts.pending:
            if m.kind == "ordinary":
                why = refuse_answer(spec, m.sender)
                if why is not None:
                    return Refuse(m.message_id, why)
    for m in facts.pending:
        if m.kind == "decision" and m.decision is not None:
            why = refuse_decision(
                facts.approvals,
                park=m.decision.park,
                call_id=m.decision.call_id,
                verdict=m.decision.verdict,
                sender=m.sender,
                role=spec.role_of(m.sender),
                arguments=m.decision.arguments,
                earlier=facts.decided_before,
                late=facts.late_calls,
            )
            return Refuse(m.message_id, why) if why else ApplyDecision(m.message_id)
    for m in facts.pending:
        if m.kind == "command":
            return RunCommand(m.message_id)
        if m.kind == "ordinary":
            break  # an ordinary message comes first: the turn takes it, commands wait
    if facts.lease in (Lease.MINE, Lease.EXPIRED) and not facts.state.is_terminal:
        if facts.attempts >= MAX_TURN_ATTEMPTS:
            return GiveUpTurn(facts.attempts)
        return _within_deadline(facts, RunTurn(facts.turn, resume=True))
    if undecided(facts.approvals) and not facts.state.is_terminal:
        return _awaiting_approval(facts)
    ordinary = any(m.kind == "ordinary" for m in facts.pending)
    freed = facts.budget_freed and not facts.state.is_terminal
    decided = all_decided(facts.approvals) and not facts.state.is_terminal
    if ordinary or freed or decided or (facts.news and not facts.state.is_terminal):
        return _within_deadline(facts, RunTurn(facts.turn + 1, resume=False))
    if facts.state is TaskState.SUBMITTED and facts.lifecycle is Lifecycle.CONVERSATION:
        return _submitted(facts.first_message_left)
    if facts.rows_stale:
        return SyncRows()
    return _at_rest(facts)


def _awaiting_approval(facts: Facts) -> Action:
    """Row 9a: calls wait for decisions. A timeout that has passed acts; until then nothing
    starts a turn (the model could not be asked before every call it made has a result), and
    the pass rests, to look again at the first timeout (or the input timeout, if sooner)."""
    left = facts.approval_left
    if left is not None and left <= 0:
        return TimeOutApprovals()
    if facts.rows_stale:
        return SyncRows()
    rest = _at_rest(facts)
    if left is None:
        return rest
    if isinstance(rest, Nothing):
        return WaitForInput(left)
    if isinstance(rest, WaitForInput):
        return WaitForInput(min(rest.seconds, left))
    return rest


def _submitted(first_message_left: float | None) -> Action:
    """Row 11: park the new conversation, unless the first message its creator announced is
    still on its way and the bound on that wait has not passed."""
    if first_message_left is None:
        return Park()
    if first_message_left <= 0:
        return Park(overdue=True)
    return AwaitFirstMessage(first_message_left)


def _within_deadline(facts: Facts, turn: RunTurn) -> Action:
    """The turn, unless the task has worked for its whole activeDeadlineSeconds."""
    if facts.deadline_left is not None and facts.deadline_left <= 0:
        return FailPastDeadline()
    return turn


def _at_rest(facts: Facts) -> Action:
    """Nothing to do for the task, unless it has ended and its time to live runs out, or it
    waits for a participant and its input timeout (or, parked for its next message, its idle
    timeout) runs out."""
    waiting = facts.state in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED)
    timed = facts.input_left is not None and waiting
    idle = facts.idle_left is not None and waiting
    ended = facts.state is not None and facts.state.is_terminal and facts.expires_in is not None
    if not (timed or idle or ended):
        return Nothing()
    if not facts.records_current:  # never act on a view behind the status
        return AwaitRecords()
    if facts.lease is Lease.HELD:  # nor on what another replica is still writing
        return WaitForLease(max(facts.lease_wait, 0.0))
    if timed and facts.input_left is not None and facts.input_left <= 0:
        return InputTimedOut(complete=facts.on_timeout == "complete")
    if idle and facts.idle_left is not None and facts.idle_left <= 0:
        return IdleEnded(complete=facts.on_idle == "complete")
    if timed or idle:
        lefts = [x for x in (facts.input_left, facts.idle_left) if x is not None]
        return WaitForInput(min(lefts))
    if facts.expires_in is not None and facts.expires_in <= 0:
        return Collect()
    return WaitToCollect(facts.expires_in or 0.0)


# -- while a turn runs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnFacts:
    """What :func:`decide_during_turn` may look at: the task as it is now, while its turn runs."""

    present: bool
    spec: TaskSpec | None = None
    pending: tuple[Pending, ...] = ()
    #: The commands this turn has already run (their acks are on their way to the journal).
    commands_run: frozenset[str] = frozenset()
    rows_stale: bool = False
    #: The turn has ended and takes nothing more (its host is closed).
    closed: bool = False
    #: The completions among ``pending`` that the task would refuse now (an unresolved
    #: sub-task holds it open): judged before they cut, so the turn's answer is not lost.
    refused: frozenset[str] = frozenset()
    #: The task's parent has ended (row 4a applies once the turn is cut).
    parent_ended: bool = False


def may_cut(spec: TaskSpec, message: Pending) -> bool:
    """Does this control cut the running turn? Only one its sender may give."""
    return (
        refuse_speaker(spec, message.sender, message.message_id) is None
        and refuse_ending(spec, message.sender, message.control or "end") is None
    )


def decide_during_turn(facts: TurnFacts) -> DuringTurn:
    """The one next action while a turn runs (see the second table in the module docstring)."""
    if not facts.present or facts.spec is None:
        return CutTurn(CutReason.GONE)
    if facts.parent_ended:
        return CutTurn(CutReason.PARENT)
    for m in facts.pending:
        if m.kind == "control" and may_cut(facts.spec, m) and m.message_id not in facts.refused:
            return CutTurn(CutReason.CONTROL)
    if facts.closed:
        return KeepGoing()
    for m in facts.pending:
        if m.kind == "command" and m.message_id not in facts.commands_run:
            return RunCommandNow(m.message_id)
    if facts.rows_stale:
        return SyncRowsNow()
    return KeepGoing()
