"""One task's worker: observe, decide, act, until there is nothing left to do.

Each pass reads what the operator knows about the task from its cache (its feeds plus this
replica's own latest writes, :mod:`tiny_harness.operator.cache`), turns it into
:class:`~tiny_harness.core.decide.Facts`, asks :func:`~tiny_harness.core.decide.decide` for
the one next action and carries it out. Nothing is remembered between passes that the cache
does not hold, so a restart, a second replica or a missed event all converge.

**Wake-ups.** A poke raises the worker's generation. The pass loop notes the generation before
it looks and only exits when a pass did nothing *and* no poke came since; whatever arrives
while a pass or a turn runs is therefore always looked at (``docs/design/runtime.md``).

**Acts.** The worker keeps the spine (observe, decide, act); what an action writes goes
through small parts of its own, each behind a port (:mod:`tiny_harness.operator.ports`): the
one status writer (:mod:`~tiny_harness.operator.status_writer`: every write on the
``resourceVersion`` last seen; a 409 means someone wrote meanwhile, and the pass starts again on
fresh state), the runner lease and the turn's fences (:mod:`~tiny_harness.operator.fences`: a
replica that lost the lease writes nothing more), the budgets
(:mod:`~tiny_harness.operator.budgets`), the notices outside a turn
(:mod:`~tiny_harness.operator.notices`), and the steps that are not turns: the first status,
the endings, commands, approval decisions, expiry. A turn is run by its supervisor
(:mod:`~tiny_harness.operator.supervisor`).

**Failures** end somewhere a participant sees them: a model error fails the turn with a status
message naming what to fix; any other failed pass costs what
:mod:`~tiny_harness.operator.pass_failures` says (a bounded retry, then ``OperatorError``; an
API server that cannot be reached is waited for).
"""

from __future__ import annotations

import asyncio
import logging

from pydantic import ValidationError

from tiny_harness.core.actions import (
    Acknowledge,
    Action,
    ApplyControl,
    ApplyDecision,
    AwaitFirstMessage,
    AwaitRecords,
    Collect,
    EndWithParent,
    FailPastDeadline,
    GiveUpTurn,
    IdleEnded,
    Initialise,
    InputTimedOut,
    Nothing,
    Park,
    Refuse,
    RunCommand,
    RunTurn,
    SyncRows,
    TimeOutApprovals,
    WaitForInput,
    WaitForLease,
    WaitToCollect,
)
from tiny_harness.core.clock import now
from tiny_harness.core.deadlines import deadline_left, idle_time_left, input_time_left
from tiny_harness.core.decide import Facts, decide, pending_of
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.usage import total
from tiny_harness.kube.client import ConflictError, HarnessTasks, Obj, RefusedWriteError
from tiny_harness.kube.journal import EntryTooLargeError, FencedError, TurnRecords
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.operator.approval_decisions import ApprovalDecisions
from tiny_harness.operator.budgets import TaskBudgets
from tiny_harness.operator.children import pending_news
from tiny_harness.operator.command_step import CommandStep
from tiny_harness.operator.endings import Endings
from tiny_harness.operator.expiry import collect
from tiny_harness.operator.feed import rv_of
from tiny_harness.operator.fences import Fences
from tiny_harness.operator.first_status import FirstStatus
from tiny_harness.operator.lease import LeaseLostError
from tiny_harness.operator.notices import Notices
from tiny_harness.operator.parentage import ended_parent
from tiny_harness.operator.pass_failures import PassFailures
from tiny_harness.operator.ports import OperatorRuntime
from tiny_harness.operator.record_lag import RecordLag
from tiny_harness.operator.slots import Ticket
from tiny_harness.operator.snapshot import (
    Snapshot,
    ack_entry,
    approval_left,
    budget_freed,
    expires_in_of,
    first_message_wait,
    idle_timeout,
    late_calls,
    rows_json,
)
from tiny_harness.operator.status_writer import StatusWriter
from tiny_harness.operator.status_writes import failed_status
from tiny_harness.operator.supervisor import TurnSupervisor
from tiny_harness.operator.working_set import Pins

log = logging.getLogger(__name__)


class TaskWorker:
    """Works one task until nothing is left to do, then exits; a poke starts it again."""

    def __init__(
        self, runtime: OperatorRuntime, namespace: str, name: str, ticket: Ticket | None = None
    ) -> None:
        self.rt = runtime
        self.namespace = namespace
        self.name = name
        self.key = (namespace, name)
        self.tasks = HarnessTasks(runtime.api, namespace)
        self.messages = HarnessMessages(runtime.api, namespace)
        self.records = TurnRecords(runtime.api, namespace)
        self.generation = 0
        self.changed = asyncio.Event()
        #: This worker's worker slot (operator/slots.py), given back when it exits or
        #: a turn starts waiting on its model.
        self.ticket = ticket
        # What its actions write through (see the module docstring).
        self.budgets = TaskBudgets(runtime, namespace, name)
        self.status = StatusWriter(self, self.budgets)
        self.fences = Fences(self)
        self.notices = Notices(self)
        self.record_lag = RecordLag(self)
        self.failures = PassFailures(self)
        # The steps that are not turns.
        self.first_status = FirstStatus(self)
        self.endings = Endings(self)
        self.command_step = CommandStep(self)
        self.decisions = ApprovalDecisions(self)

    def poke(self) -> None:
        """Something about the task changed: look again, now or after the current pass."""
        self.generation += 1
        self.changed.set()

    # -- the pass loop ---------------------------------------------------------------------

    async def run(self) -> None:
        """Pass after pass until nothing is left to do. The task's group is pinned in the
        cache meanwhile (:mod:`tiny_harness.operator.resident`), and loaded before each pass:
        what the pass and its turn read stays in memory until the worker exits."""
        with self.rt.cache.working(self.namespace, self.name) as pins:
            while True:
                seen = self.generation
                self.changed.clear()
                again = await self.one_pass(pins)
                if not again and self.generation == seen:
                    return

    async def one_pass(self, pins: Pins) -> bool:
        """One pass, its errors taken as :mod:`~tiny_harness.operator.pass_failures` says:
        True to look again."""
        try:
            await self.rt.cache.load(self.namespace, self.name, pins)
            again = await self.step()
            self.failures.passed()
        except asyncio.CancelledError:
            raise
        except ConflictError:
            again = await self.failures.conflicted()
        except (LeaseLostError, FencedError) as exc:
            log.info("task %s/%s: lease lost (%s)", self.namespace, self.name, exc)
            self.rt.metrics.errors.labels(where="lease").inc()
            again = True
        except Exception as exc:
            again = await self.failures.failed(exc)
        return again

    # -- observe and decide ------------------------------------------------------------------

    def snapshot(self) -> Snapshot | None:
        """The task as the cache has it now, or None once it is gone (or going)."""
        cache = self.rt.cache
        obj = cache.task(self.namespace, self.name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return None
        self.status.rv = rv_of(obj)
        return Snapshot(
            obj,
            cache.records(self.namespace, self.name),
            cache.messages(self.namespace, self.name),
            cache.children(self.namespace, self.name),
        )

    def facts(self, snap: Snapshot) -> Facts:
        status = snap.status
        raw = snap.obj.get("status") or {}
        spec = snap.spec
        moment = now()
        lease, wait = self.rt.leases.judge(self.key, status.runner)
        registry = self.rt.commands.registry
        pending = [pending_of(m.spec, registry) for m in snap.pending]
        return Facts(
            initialised=True,
            state=status.state,
            lifecycle=snap.lifecycle,
            spec=snap.spec,
            records_current=self.record_lag.current(snap),
            lease=lease,
            lease_wait=wait,
            turn=status.turn,
            attempts=status.turn_attempts or 0,
            parent_ended=ended_parent(self.rt.cache, self.namespace, snap.obj),
            pending=tuple(pending),
            news=bool(pending_news(snap.children, snap.acked)),
            rows_stale=snap.rows != status.sub_tasks,
            expires_in=self.expires_in(snap.obj),
            deadline_left=deadline_left(spec.active_deadline_seconds, raw, moment),
            input_left=input_time_left(spec.input_timeout_seconds, raw, moment),
            on_timeout=spec.on_timeout,
            idle_left=idle_time_left(idle_timeout(snap, self.rt.settings), raw, moment),
            on_idle=spec.on_idle or self.rt.settings.on_idle,
            budget_freed=self.budget_freed(snap),
            first_message_left=first_message_wait(snap, self.rt.settings, moment),
            approvals=snap.approvals,
            approval_left=approval_left(snap.approvals, moment),
            late_calls=late_calls(snap.approvals, moment),
            decided_before=snap.decided_before if snap.pending else {},
        )

    def budget_freed(self, snap: Snapshot) -> bool:
        if snap.status.sub_state != SubState.AWAITING_BUDGET.value:
            return False  # asked every pass: the tree is walked only for a task that waits
        used = total(snap.status.usage, snap.status.sub_task_usage)
        return budget_freed(snap, self.budgets.for_turn(snap, used))

    def expires_in(self, obj: Obj) -> float | None:
        return expires_in_of(obj, self.rt.settings.ttl_seconds_after_finished)

    async def step(self) -> bool:
        """One pass. True when it changed something, so another pass should look."""
        self.status.holding = None
        cache = self.rt.cache
        obj = cache.task(self.namespace, self.name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            self.rt.metrics.task_state(self.namespace, self.name, None)
            return False
        if not self.rt.owns(self.namespace, self.name):
            # Its shard went to another replica (or lapsed): that replica works it now.
            self.rt.metrics.task_state(self.namespace, self.name, None)
            return False
        state = (obj.get("status") or {}).get("state")
        if not state or state == TaskState.REJECTED.value:
            # Rows 1 and 2: a spec not yet accepted (or rejected) may not even parse, so these
            # are decided from the object alone, before a snapshot is read.
            self.status.rv = rv_of(obj)
            early = Facts(
                initialised=bool(state),
                state=TaskState(state) if state else None,
                expires_in=self.expires_in(obj),
            )
            action = decide(early)
            if isinstance(action, Initialise):
                await self.first_status.write(obj)
                return True
            return await self.at_rest(obj, action)
        try:
            snap = self.snapshot()
        except ValidationError as exc:
            log.warning("task %s/%s: unreadable (%s)", self.namespace, self.name, exc)
            return False
        if snap is None:
            return False
        self.rt.metrics.task_state(self.namespace, self.name, snap.status.state.value)
        action = decide(self.facts(snap))
        return await self.act(snap, action)

    # -- act ---------------------------------------------------------------------------------

    async def at_rest(self, obj: Obj, action: Action) -> bool:
        """Carry out what :func:`decide` says of a task with nothing left to do but wait for
        its time to live: delete it, or look again when that time comes."""
        match action:
            case Collect():
                await collect(self, obj)
            case WaitToCollect(seconds=seconds):
                self.rt.wake_later(self.namespace, self.name, seconds + 0.05)
        return False

    async def act(self, snap: Snapshot, action: Action) -> bool:
        match action:
            case Collect() | WaitToCollect():
                return await self.at_rest(snap.obj, action)
            case FailPastDeadline():
                await self.endings.fail_past_deadline(snap)
            case GiveUpTurn(attempts=attempts):
                await self.endings.give_up_turn(attempts)
            case EndWithParent(parent=parent, state=state):
                await self.endings.end_with_parent(snap, parent, state)
            case IdleEnded(complete=complete):
                await self.endings.idle_ended(snap, complete=complete)
            case InputTimedOut(complete=complete):
                await self.endings.input_timed_out(snap, complete=complete)
            case WaitForInput(seconds=seconds):
                self.rt.wake_later(self.namespace, self.name, seconds + 0.05)
                return False
            case Nothing() | Initialise():
                return False
            case AwaitRecords():
                return await self.record_lag.wait(snap)
            case WaitForLease(seconds=seconds):
                self.rt.wake_later(self.namespace, self.name, seconds + 0.05)
                return False
            case Refuse(message_id=mid, reason=reason):
                await self.notices.refuse(snap, snap.message(mid), reason)
            case Acknowledge(message_id=mid):
                await self.notices.append(snap, (ack_entry(snap.message(mid)),))
            case ApplyControl(message_id=mid):
                await self.endings.control(snap, snap.message(mid))
            case ApplyDecision(message_id=mid):
                await self.decisions.record(snap, snap.message(mid))
            case TimeOutApprovals():
                await self.decisions.time_out(snap)
            case RunCommand(message_id=mid):
                await self.command_step.run(snap, snap.message(mid))
            case RunTurn(turn=turn, resume=resume):
                return await self.turn(snap, turn, resume=resume)
            case AwaitFirstMessage(seconds=seconds):
                self.rt.wake_later(self.namespace, self.name, seconds + 0.05)
                return False
            case Park(overdue=overdue):
                await self.first_status.park(snap, overdue=overdue)
            case SyncRows():
                await self.status.write({"subTasks": rows_json(snap.rows)})
        return True

    async def fail_task(self, reason: str, message: str) -> None:
        """End the task in FAILED with an ``Error`` condition that says what to fix."""
        snap = self.snapshot()
        if snap is None or snap.status.state.is_terminal:
            return
        holding = self.status.holding
        if snap.status.runner is not None and (holding is None or holding.lost):
            try:
                await self.fences.close_open_turn(snap)
            except (RefusedWriteError, EntryTooLargeError) as exc:
                # Left open, the turn is replayed from its journal by the next one.
                log.warning("task %s/%s: the failed turn stays open: %s", *self.key, exc)
        await self.status.write(
            failed_status(snap.status, reason, message), leased=self.status.holding is not None
        )
        await self.rt.event(snap.obj, reason, message, warning=True)

    async def turn(self, snap: Snapshot, number: int, *, resume: bool) -> bool:
        """Run (or resume) a turn under a freshly taken lease, with its guards
        (:mod:`tiny_harness.operator.supervisor`). True: look again after it."""
        return await TurnSupervisor(self, snap, number, resume).run()
