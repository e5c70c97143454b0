"""One task's worker: observe, decide, act, until there is nothing left to do.

Each pass reads what the operator knows about the task from its cache (its feeds plus this
replica's own latest writes, :mod:`tiny_harness.operator.cache`), turns it into
:class:`~tiny_harness.core.decide.Facts`, asks :func:`~tiny_harness.core.decide.decide` for
the one next action and carries it out. Nothing is remembered between passes that the cache
does not hold, so a restart, a second replica or a missed event all converge.

**Wake-ups.** A poke raises the worker's generation. The pass loop notes the generation before
it looks and only exits when a pass did nothing *and* no poke came since; whatever arrives
while a pass or a turn runs is therefore always looked at (``docs/design/runtime.md``).

**Writes.** Status writes carry the ``resourceVersion`` last seen (a 409 means someone wrote
meanwhile: the pass starts again on fresh state). A turn's writes are fenced by its lease epoch
(:mod:`tiny_harness.operator.lease`), so a replica that lost the lease writes nothing more.

**Failures** end somewhere a participant sees them: a model error fails the turn with a status
message naming what to fix; an unexpected error is retried with backoff a bounded number of
times, then fails the task (``OperatorError``); an API server that cannot be reached is waited
for with capped backoff, since nothing can be written until it is back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any, Final

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
from tiny_harness.core.backoff import Backoff
from tiny_harness.core.clock import now, rfc3339
from tiny_harness.core.deadlines import deadline_left, idle_time_left, input_time_left, stamped
from tiny_harness.core.decide import Facts, decide, pending_of
from tiny_harness.core.errors import TaskNotFoundError
from tiny_harness.core.history import (
    RecordEntry,
    history_delta,
    replay_history,
)
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import (
    Budget,
    Runner,
    TaskUsage,
)
from tiny_harness.core.usage import total
from tiny_harness.kube.client import (
    ConflictError,
    HarnessTasks,
    Obj,
    RefusedWriteError,
    unreachable,
)
from tiny_harness.kube.journal import EntryTooLargeError, FencedError, TurnRecord, TurnRecords
from tiny_harness.kube.messages import HarnessMessages, StoredMessage
from tiny_harness.operator.budgets import own_budget, turn_budget, with_usage
from tiny_harness.operator.cache import Pins
from tiny_harness.operator.children import pending_news
from tiny_harness.operator.controls import Controls
from tiny_harness.operator.decisions import Decisions
from tiny_harness.operator.feed import rv_of
from tiny_harness.operator.lease import Holding, LeaseLostError
from tiny_harness.operator.ports import CommandHost, OperatorRuntime
from tiny_harness.operator.slots import Ticket
from tiny_harness.operator.snapshot import (
    Snapshot,
    ack_entry,
    approval_left,
    budget_freed,
    expires_in_of,
    first_message_wait,
    history_before,
    idle_timeout,
    late_calls,
    refusal_entries,
    rows_json,
)
from tiny_harness.operator.status_writes import (
    bounded,
    failed_status,
)
from tiny_harness.operator.supervisor import TurnSupervisor

log = logging.getLogger(__name__)


#: Unexpected errors in a row before the task is failed with ``OperatorError``.
ERROR_BUDGET: Final = 5
#: Backoff after the n-th unexpected error: BASE * 2**(n-1), capped, with jitter.
ERROR_BACKOFF: Final = Backoff(first=0.5, cap=30.0)
#: Backoff while the API server cannot be reached.
UNREACHABLE_BACKOFF: Final = Backoff(first=0.2, cap=5.0)
#: Backoff after the fourth conflict in a row (three are taken at once).
CONFLICT_BACKOFF: Final = Backoff(first=0.05, cap=2.0)
#: How long a view whose last turn record is missing is trusted to catch up by itself.
RECORDS_GRACE_SECONDS: Final = 2.0


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
        self.lock = asyncio.Lock()
        self.rv: str | None = None
        self.holding: Holding | None = None
        #: This worker's worker slot (operator/slots.py), given back when it exits or
        #: a turn starts waiting on its model.
        self.ticket = ticket
        self.errors = 0
        self.conflicts = 0
        self.unreachable = 0
        self.awaiting_records_since: float | None = None
        self.controls = Controls(self)
        self.decisions = Decisions(self)

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
        """One pass, its errors taken as the rules below say: True to look again."""
        try:
            await self.rt.cache.load(self.namespace, self.name, pins)
            again = await self.step()
            self.errors = self.conflicts = self.unreachable = 0
        except asyncio.CancelledError:
            raise
        except ConflictError:
            again = await self.conflicted()
        except (LeaseLostError, FencedError) as exc:
            log.info("task %s/%s: lease lost (%s)", self.namespace, self.name, exc)
            self.rt.metrics.errors.labels(where="lease").inc()
            again = True
        except Exception as exc:
            again = await self.failed_pass(exc)
        return again

    async def conflicted(self) -> bool:
        """Someone wrote the task meanwhile: re-read it (a rare read) and decide again."""
        self.conflicts += 1
        if self.conflicts > 3:
            await asyncio.sleep(CONFLICT_BACKOFF.delay(self.conflicts + 1))
        await self.refresh()
        return True

    async def refresh(self) -> None:
        try:
            obj = await self.tasks.get(self.name)
        except TaskNotFoundError:
            return
        self.rt.cache.wrote_task(obj)

    async def failed_pass(self, exc: Exception) -> bool:
        if isinstance(exc, (RefusedWriteError, EntryTooLargeError)):
            # The same write would be refused again: a state now, never a retry (and never a
            # second model call for the step whose record could not be stored).
            self.rt.metrics.errors.labels(where="refused").inc()
            log.warning("task %s/%s: a write was refused for good: %s", *self.key, exc)
            try:
                await self.fail_task(
                    "WriteRefused",
                    f"The operator could not store this task's work: {exc}. What a task "
                    "stores is bounded (docs/design/limits.md); send a shorter message to go on.",
                )
            except Exception:
                log.exception("task %s/%s: could not record the failure", *self.key)
            return False
        if unreachable(exc):
            self.unreachable += 1
            delay = UNREACHABLE_BACKOFF.delay(self.unreachable + 1)
            log.warning(
                "task %s/%s: the API server is unreachable (%s); retrying in %.1fs",
                self.namespace,
                self.name,
                exc,
                delay,
            )
            await asyncio.sleep(delay)
            return True
        self.errors += 1
        self.rt.metrics.errors.labels(where="worker").inc()
        if self.errors == 1:
            log.exception("task %s/%s: pass failed", self.namespace, self.name)
        else:
            log.warning(
                "task %s/%s: pass failed again (%d of %d): %s: %s",
                self.namespace,
                self.name,
                self.errors,
                ERROR_BUDGET,
                type(exc).__name__,
                exc,
            )
        if self.errors < ERROR_BUDGET:
            await asyncio.sleep(ERROR_BACKOFF.delay(self.errors))
            return True
        self.errors = 0
        try:
            await self.fail_task(
                "OperatorError",
                f"The operator could not work on this task ({type(exc).__name__}: {exc}). "
                "Its log has the details; send a message to try again.",
            )
        except Exception:
            log.exception("task %s/%s: could not record the failure", self.namespace, self.name)
        return False

    # -- observe and decide ------------------------------------------------------------------

    def snapshot(self) -> Snapshot | None:
        """The task as the cache has it now, or None once it is gone (or going)."""
        cache = self.rt.cache
        obj = cache.task(self.namespace, self.name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return None
        self.rv = rv_of(obj)
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
            records_current=self.records_current(snap),
            lease=lease,
            lease_wait=wait,
            turn=status.turn,
            attempts=status.turn_attempts or 0,
            parent_ended=self.controls.ended_parent(snap.obj),
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
        return budget_freed(snap, self.turn_budget(snap, used))

    def expires_in(self, obj: Obj) -> float | None:
        return expires_in_of(obj, self.rt.settings.ttl_seconds_after_finished)

    def records_current(self, snap: Snapshot) -> bool:
        """Every ended turn leaves its record ended before the runner is cleared, so a view
        that lacks it is behind the status, and acting on it could take a message twice."""
        turn = snap.status.turn
        if turn == 0 or snap.status.runner is not None:
            return True
        if any(r.turn == turn and r.ended for r in snap.records):
            self.awaiting_records_since = None
            return True
        return False

    async def step(self) -> bool:
        """One pass. True when it changed something, so another pass should look."""
        self.holding = None
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
            self.rv = rv_of(obj)
            early = Facts(
                initialised=bool(state),
                state=TaskState(state) if state else None,
                expires_in=self.expires_in(obj),
            )
            action = decide(early)
            if isinstance(action, Initialise):
                await self.controls.initialise(obj)
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

    async def at_rest(self, obj: Obj, action: Action) -> bool:
        """Carry out what :func:`decide` says of a task with nothing left to do but wait for
        its time to live: delete it, or look again when that time comes."""
        match action:
            case Collect():
                await self.controls.collect(obj)
            case WaitToCollect(seconds=seconds):
                self.rt.wake_later(self.namespace, self.name, seconds + 0.05)
        return False

    async def act(self, snap: Snapshot, action: Action) -> bool:
        match action:
            case Collect() | WaitToCollect():
                return await self.at_rest(snap.obj, action)
            case FailPastDeadline():
                await self.controls.fail_past_deadline(snap)
            case GiveUpTurn(attempts=attempts):
                await self.controls.give_up_turn(attempts)
            case EndWithParent(parent=parent, state=state):
                await self.controls.end_with_parent(snap, parent, state)
            case IdleEnded(complete=complete):
                await self.controls.idle_ended(snap, complete=complete)
            case InputTimedOut(complete=complete):
                await self.controls.input_timed_out(snap, complete=complete)
            case WaitForInput(seconds=seconds):
                self.rt.wake_later(self.namespace, self.name, seconds + 0.05)
                return False
            case Nothing() | Initialise():
                return False
            case AwaitRecords():
                return await self.await_records(snap)
            case WaitForLease(seconds=seconds):
                self.rt.wake_later(self.namespace, self.name, seconds + 0.05)
                return False
            case Refuse(message_id=mid, reason=reason):
                await self.refuse(snap, snap.message(mid), reason)
            case Acknowledge(message_id=mid):
                await self.append_notices(snap, (ack_entry(snap.message(mid)),))
            case ApplyControl(message_id=mid):
                await self.controls.control(snap, snap.message(mid))
            case ApplyDecision(message_id=mid):
                await self.decisions.decide(snap, snap.message(mid))
            case TimeOutApprovals():
                await self.decisions.time_out_approvals(snap)
            case RunCommand(message_id=mid):
                await self.command(snap, snap.message(mid))
            case RunTurn(turn=turn, resume=resume):
                return await self.turn(snap, turn, resume=resume)
            case AwaitFirstMessage(seconds=seconds):
                self.rt.wake_later(self.namespace, self.name, seconds + 0.05)
                return False
            case Park(overdue=overdue):
                await self.controls.park(snap, overdue=overdue)
            case SyncRows():
                await self.write_status({"subTasks": rows_json(snap.rows)})
        return True

    async def await_records(self, snap: Snapshot) -> bool:
        """The status is ahead of the records in view. Their watch event is on its way; if it
        has not come within the grace time, read them from the API once."""
        now = time.monotonic()
        if self.awaiting_records_since is None:
            self.awaiting_records_since = now
            self.rt.wake_later(self.namespace, self.name, RECORDS_GRACE_SECONDS)
            return False
        if now - self.awaiting_records_since < RECORDS_GRACE_SECONDS:
            return False
        self.awaiting_records_since = None
        turn = snap.status.turn
        fresh = await self.records.for_task(snap.obj, turn)
        for record in fresh:
            self.rt.cache.wrote_record(self.namespace, record)
        if not any(r.ended for r in fresh):
            # The record is really missing (deleted by hand?): close the turn on an empty one.
            log.warning("task %s/%s: turn %d has no record; closing it", *self.key, turn)
            last = fresh[-1] if fresh else None
            record = await self.records.append(
                self.name,
                turn,
                (),
                last=last,
                history=history_delta((), ()),
                owner=snap.obj,
            )
            self.rt.cache.wrote_record(self.namespace, record)
        return True

    # -- status writes ---------------------------------------------------------------------

    async def write_status(
        self, patch: Mapping[str, Any], *, leased: bool = False, renewal: bool = False
    ) -> Obj | None:
        """Merge-patch the status on the version last read.

        A 409 means someone wrote meanwhile. Outside a turn it is a :class:`ConflictError` and
        the pass starts again on fresh state. During a turn (``leased``) the patch is applied
        again on the fresh version as long as this replica still holds the lease it started
        the turn with: its values are absolute, so applying it twice is the same as once.
        """
        async with self.lock:
            if renewal and self.held().closing:
                return None  # the turn is ending: its last write clears the runner
            current = (self.rt.cache.task(self.namespace, self.name) or {}).get("status") or {}
            patch = self.with_usage(stamped(bounded(patch), current, now()))
            while True:
                if leased:
                    self.held().check()
                try:
                    obj = await self.tasks.patch_status(self.name, patch, resource_version=self.rv)
                except ConflictError:
                    if not leased:
                        raise
                    fresh = await self.tasks.get(self.name)
                    self.rt.cache.wrote_task(fresh)
                    runner = (fresh.get("status") or {}).get("runner") or {}
                    holding = self.held()
                    if (
                        runner.get("holder") != self.rt.identity
                        or int(runner.get("epoch") or 0) != holding.epoch
                    ):
                        holding.lost = True
                        raise LeaseLostError("another replica took the lease over") from None
                    self.rv = rv_of(fresh)
                    continue
                self.rv = rv_of(obj)
                self.rt.written(self.namespace, self.name, self.rv)
                self.rt.cache.wrote_task(obj)
                return obj

    def budget_of(self, snap: Snapshot) -> Budget | None:
        """The task's own budget (operator/budgets.py)."""
        return own_budget(snap.spec, snap.status, self.rt.settings.budget)

    def turn_budget(self, snap: Snapshot, used: TaskUsage) -> Budget | None:
        """The budget the task's model calls are held to: its own and its ancestors'."""
        own = self.budget_of(snap)
        default = self.rt.settings.budget
        return turn_budget(self.rt.cache, self.namespace, snap.obj, own, used, default)

    def with_usage(self, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        return with_usage(patch, self.rt.cache, self.namespace, self.name)

    def held(self) -> Holding:
        if self.holding is None:
            raise LeaseLostError("no lease is held")
        return self.holding

    async def take_lease(self, snap: Snapshot, extra: Mapping[str, Any]) -> Holding:
        """Take (or take over) the runner lease with a new epoch: the write that starts or
        resumes a turn. Conditional on the version read, so only one replica wins."""
        epoch = (snap.status.runner.epoch if snap.status.runner else 0) + 1
        runner = Runner(holder=self.rt.identity, renew_time=rfc3339(digits=6), epoch=epoch)
        sent = time.monotonic()
        await self.write_status({**extra, "runner": runner.model_dump(by_alias=True)})
        holding = Holding(epoch, self.rt.settings.lease_seconds)
        holding.renewed(sent)
        self.holding = holding
        return holding

    async def append_notices(self, snap: Snapshot, entries: tuple[RecordEntry, ...]) -> None:
        """Notices and acks outside a turn go to the latest turn's record, unfenced: no turn
        runs (the decision waited for any lease), and their ids make a repeat harmless."""
        turn = snap.status.turn
        record = await self.records.append(
            self.name,
            turn,
            entries,
            last=snap.last_record(turn),
            owner=snap.obj,
        )
        self.rt.cache.wrote_record(self.namespace, record)

    async def refuse(self, snap: Snapshot, message: StoredMessage, reason: str) -> None:
        """Take the message without acting on it; its sender sees the reason against it."""
        log.info("task %s/%s: message %s %s", *self.key, message.spec.message_id, reason)
        await self.append_notices(snap, refusal_entries(message, reason))

    async def close_open_turn(self, snap: Snapshot) -> None:
        """Take the open turn's lease over and end the turn where its journal stops."""
        turn = snap.status.turn
        holding = await self.take_lease(snap, {})
        records = await self.fence_turn(snap, turn, holding.epoch)
        if any(r.ended for r in records):
            return
        before = history_before(snap.records, turn)
        entries = [e for r in records for e in r.entries]
        after = replay_history(before, entries)
        record = await self.records.append(
            self.name,
            turn,
            (),
            last=records[-1] if records else None,
            history=history_delta(before, after),
            owner=snap.obj,
            lease=holding.epoch if records else None,
        )
        self.rt.cache.wrote_record(self.namespace, record)

    async def fence_turn(self, snap: Snapshot, turn: int, epoch: int) -> list[TurnRecord]:
        """Read the turn's records from the API (a takeover must not trust a lagging view)
        and fence the last one with ``epoch``, so an earlier holder can append no more."""
        records = await self.records.for_task(snap.obj, turn)
        if records:
            try:
                records[-1] = await self.records.fence(records[-1], epoch)
            except FencedError:
                raise LeaseLostError("another replica fenced the turn first") from None
        for record in records:
            self.rt.cache.wrote_record(self.namespace, record)
        return records

    async def fail_task(self, reason: str, message: str) -> None:
        """End the task in FAILED with an ``Error`` condition that says what to fix."""
        snap = self.snapshot()
        if snap is None or snap.status.state.is_terminal:
            return
        holding = self.holding
        if snap.status.runner is not None and (holding is None or holding.lost):
            try:
                await self.close_open_turn(snap)
            except (RefusedWriteError, EntryTooLargeError) as exc:
                # Left open, the turn is replayed from its journal by the next one.
                log.warning("task %s/%s: the failed turn stays open: %s", *self.key, exc)
        await self.write_status(
            failed_status(snap.status, reason, message), leased=self.holding is not None
        )
        await self.rt.event(snap.obj, reason, message, warning=True)

    async def command(
        self, snap: Snapshot, message: StoredMessage, host: CommandHost | None = None
    ) -> None:
        """Run a participant's command (no model call, no state change), beside a running
        turn when ``host`` is given."""
        await self.controls.command(snap, message, host)

    # -- turns -------------------------------------------------------------------------------

    async def turn(self, snap: Snapshot, number: int, *, resume: bool) -> bool:
        """Run (or resume) a turn under a freshly taken lease, with its guards
        (:mod:`tiny_harness.operator.supervisor`). True: look again after it."""
        return await TurnSupervisor(self, snap, number, resume).run()
