"""A turn and its guards, run as one structured unit.

The reconciler (:mod:`tiny_harness.operator.worker`) decides that a turn runs; this module runs
it. A turn is the loop's ``run_turn`` (the model's core loop, the remote follower, or the loop
that takes a person's answer) plus four guards, all in one :class:`asyncio.TaskGroup`:

- the **renewal** writes the runner lease every third of its time, with the turn's usage so far;
- the **lease watchdog** cuts the turn the moment this replica can no longer be sure it holds the
  lease (:class:`~tiny_harness.core.decide.CutReason` ``LEASE``);
- the **deadline** cuts it when the task's working time runs out (``DEADLINE``);
- the **interrupt watcher** looks at every change of the task and asks
  :func:`~tiny_harness.core.decide.decide_during_turn` what to do: cut (``CONTROL``, ``GONE``),
  run a command beside the turn, or write the sub-task rows.

When the turn's task ends, the guards are cancelled and the group waits for all of them: none
outlives its turn. A cut is a typed reason given once (:class:`Cut`: the first reason wins) and
one cancellation of the turn's task; the turn's end is then read by that reason (a turn that
finished the step it was in before the cancellation landed ends as it ended, and the next pass
applies what cut it). The one step a cut waits for is marked by the turn's code
(:meth:`~tiny_harness.operator.cut.Cut.deferred`: a brief on its way to a remote agent): the
cancellation is sent when the step ends, nothing shields the step. Nothing under a turn is known
to drop a cancellation (no ``asyncio.wait_for``); if one ever did, the cut is given again after
:data:`~tiny_harness.operator.cut.CUT_GRACE_SECONDS` and logged as the bug it is.
A cancellation of the worker itself (the operator stopping) is not a cut: it leaves the turn
open in its journal for the next replica.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from tiny_harness.core.actions import CutReason, CutTurn, KeepGoing, RunCommandNow, SyncRowsNow
from tiny_harness.core.approval import gates_of
from tiny_harness.core.clock import now, rfc3339
from tiny_harness.core.commands.hooks import completion_override
from tiny_harness.core.completion import decide_completion
from tiny_harness.core.deadlines import deadline_left
from tiny_harness.core.decide import Pending, TurnFacts, decide_during_turn
from tiny_harness.core.history import AckEntry, NoticeEntry
from tiny_harness.core.llm import RetryNotice, retry_observer
from tiny_harness.core.participant_turn import AnsweringLoop
from tiny_harness.core.reach import Reach
from tiny_harness.core.remote_view import remote_ref_of
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Lifecycle, TaskUsage
from tiny_harness.core.tracing import enabled as tracing_enabled
from tiny_harness.core.tracing import end_turn, parent_and_links, turn_span
from tiny_harness.core.turn import TurnInput, TurnOutcome
from tiny_harness.core.usage import total, usage_of
from tiny_harness.models.call_errors import ModelCallError
from tiny_harness.operator.cut import Cut
from tiny_harness.operator.host import OperatorTurnHost
from tiny_harness.operator.inherited_rules import inherited_rules
from tiny_harness.operator.lease import Holding, LeaseLostError
from tiny_harness.operator.ports import SupervisedWorker, TurnLoop
from tiny_harness.operator.remote import RemoteCallError
from tiny_harness.operator.snapshot import (
    Snapshot,
    decided_calls,
    history_before,
    rows_json,
    unique_entries,
)
from tiny_harness.operator.status_writes import failed_status, own_message_id, resumed_conditions

log = logging.getLogger(__name__)

#: The turns of participant tasks take their person's answer; no model is called.
ANSWERING: Final = AnsweringLoop()
#: Pause before a failed look for interrupts during a turn is made again (for as long as the
#: turn runs, which its lease and deadline bound).
INTERRUPT_RETRY_SECONDS: Final = 0.5


def lost_calls(snap: Snapshot) -> TaskUsage:
    """The model calls a resumed turn may have made and never journaled: at most one per
    earlier start (the loop journals a call's answer before its next call), counted against
    the budget whether or not their answers were kept."""
    earlier = snap.status.turn_attempts or 0
    return TaskUsage(model_calls=earlier)


def failure_text(exc: ModelCallError, lifecycle: Lifecycle) -> str:
    then = (
        " Send a message to try again once it is fixed."
        if lifecycle is Lifecycle.CONVERSATION
        else ""
    )
    return f"The model call failed: {exc}.{then}"


class TurnSupervisor:
    """Runs one turn of a task under a freshly taken lease (see the module docstring)."""

    def __init__(self, worker: SupervisedWorker, snap: Snapshot, number: int, resume: bool):
        self.w = worker
        self.snap = snap
        self.number = number
        self.resume = resume
        self.cut = Cut()

    async def run(self) -> bool:
        """Run (or resume) the turn. True: the worker should look again after it."""
        w, snap, number = self.w, self.snap, self.number
        start: dict[str, Any] = {
            "state": TaskState.WORKING.value,
            "subState": None,
            "turn": number,
            "subTasks": rows_json(snap.rows),
        }
        raw_status = snap.obj.get("status") or {}
        # Counted on every start, so a turn that never finishes is given up after a bound
        # (decide.MAX_TURN_ATTEMPTS) rather than resumed, and its model asked, for ever.
        start["turnAttempts"] = (snap.status.turn_attempts or 0) + 1 if self.resume else 1
        if not (self.resume and raw_status.get("turnStartTime")):
            # A resumed turn keeps its start: the time the replica that ran it was away counts.
            start["turnStartTime"] = rfc3339(now())
        conditions = resumed_conditions(snap.status.conditions)
        # The task's tool servers: this turn's tools, and its ToolServersReady condition.
        offer = await w.rt.tool_servers.offer(w.namespace, snap.spec)
        conditions = offer.conditions(snap.status.conditions, conditions)
        if conditions is not None:
            start["conditions"] = conditions
        holding = await w.take_lease(snap, start)
        records = snap.records
        if self.resume:
            fenced = await w.fence_turn(snap, number, holding.epoch)
            records = [r for r in snap.records if r.turn != number] + fenced
        if w.ticket is not None:
            # From here the turn waits on its model, for as long as that takes: other tasks'
            # passes must not wait with it (see operator/slots.py).
            w.ticket.release()
        history = history_before(records, number)
        own = [r for r in records if r.turn == number]
        journal = tuple(
            e for e in unique_entries(own) if not isinstance(e, (NoticeEntry, AckEntry))
        )
        host = OperatorTurnHost(w, snap, number, history, own, holding, self.cut)
        remotes = w.rt.remotes
        used = total(snap.status.usage, snap.status.sub_task_usage) + lost_calls(snap)
        turn_input = TurnInput(
            task_id=w.name,
            turn=number,
            task=snap.extension(),
            history=history,
            journal=journal,
            budget=w.turn_budget(snap, used),
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
        # The turn continues the trace of the first message it is about to take (the others
        # are linked): see core/tracing.py.
        parent, links = (
            parent_and_links([m.annotations for m in host.waiting_messages()])
            if tracing_enabled()
            else (None, [])
        )
        with turn_span(
            w.name, w.namespace, number, resumed=self.resume, parent=parent, links=links
        ) as span:

            def finished(kind: str, *, failed: bool = False) -> None:
                w.rt.metrics.turns_finished.labels(outcome=kind).inc()
                end_turn(span, kind, failed=failed)

            w.rt.metrics.turns_started.inc()
            started = time.perf_counter()
            loop = self.loop_for(snap)
            try:
                outcome, error = await self.supervise(
                    lambda: loop.run_turn(host, turn_input, offer.tools), host, holding
                )
                # Still under the lease: a cut or failed turn's last writes are fenced by it.
                return await self.conclude(host, holding, outcome, error, finished)
            finally:
                w.holding = None
                w.rt.metrics.turn_seconds.observe(time.perf_counter() - started)

    async def supervise(
        self,
        turn: Callable[[], Awaitable[TurnOutcome]],
        host: OperatorTurnHost,
        holding: Holding,
    ) -> tuple[TurnOutcome | None, ModelCallError | RemoteCallError | None]:
        """The turn and its guards in one task group; the outcome, or the failure that ended
        it, or neither when it was cut (:attr:`cut` says why)."""
        outcome: TurnOutcome | None = None
        error: ModelCallError | RemoteCallError | None = None
        crashed: Exception | None = None

        async def run() -> None:
            nonlocal outcome, error, crashed
            try:
                outcome = await turn()
            except (ModelCallError, RemoteCallError) as exc:
                error = exc
            except Exception as exc:  # the lease lost, a conflict, a bug: the worker's to handle
                crashed = exc
            finally:
                # However the turn ended, a command running beside it finishes first.
                await host.quiesce()

        # The task's status as the lease write left it: running, with the turn's start time.
        running = (self.w.rt.cache.task(self.w.namespace, self.w.name) or {}).get("status") or {}
        left = deadline_left(self.snap.spec.active_deadline_seconds, running, now())
        token = retry_observer.set(self.retry_notice_writer())
        try:
            async with asyncio.TaskGroup() as group:
                turn_task = group.create_task(run())
                self.cut.watch(turn_task)
                guards = [
                    group.create_task(self.renew_lease(holding)),
                    group.create_task(self.watch_lease(holding)),
                    group.create_task(self.watch_for_interrupts(host)),
                ]
                if left is not None:
                    guards.append(group.create_task(self.cut_at_deadline(left)))

                def stop_guards(_: asyncio.Task[None]) -> None:
                    for guard in guards:
                        guard.cancel()

                turn_task.add_done_callback(stop_guards)
        finally:
            retry_observer.reset(token)
        if crashed is not None:
            raise crashed
        if outcome is None and error is None and self.cut.reason is None:
            # Cancelled by nobody this turn knows of: not a cut to act on.
            raise asyncio.CancelledError()
        return outcome, error

    async def conclude(
        self,
        host: OperatorTurnHost,
        holding: Holding,
        outcome: TurnOutcome | None,
        error: ModelCallError | RemoteCallError | None,
        finished: Callable[..., None],
    ) -> bool:
        """What the turn's end means for the task (the reason of a cut first, however the
        turn's own code ended after it)."""
        w, snap = self.w, self.snap
        # A reason counts when it ended the turn: one that landed after the turn's own end
        # leaves that end as it was (the next pass applies a control; a lease or a deadline
        # is judged again there).
        reason = self.cut.reason if outcome is None and error is None else None
        if reason is CutReason.LEASE or (reason is not None and holding.lost):
            finished("lease_lost", failed=True)
            raise LeaseLostError("the lease ran out during the turn")
        if reason is CutReason.GONE:
            return False
        if reason is CutReason.DEADLINE:
            await host.close_cut_turn()
            holding.closing = True
            spent = snap.spec.active_deadline_seconds
            text = (
                f"the task has worked for its whole activeDeadlineSeconds ({spent}s): the "
                "running turn was cut; raise spec.activeDeadlineSeconds to give a new task "
                "more time"
            )
            await w.write_status(failed_status(snap.status, "DeadlineExceeded", text), leased=True)
            finished("deadline", failed=True)
            await w.rt.event(snap.obj, "DeadlineExceeded", text, warning=True)
            return True
        if reason in (CutReason.CONTROL, CutReason.PARENT):
            # Cut by a participant's complete or cancel, or by the parent's end: close the turn
            # from its journal, then the next pass applies the control (or row 4a).
            await host.close_cut_turn()
            finished("cut")
            return True
        if error is not None:
            await host.close_cut_turn()
            holding.closing = True
            text = (
                failure_text(error, snap.lifecycle)
                if isinstance(error, ModelCallError)
                else f"The remote agent failed this sub-task: {error}."
            )
            await w.write_status(failed_status(snap.status, error.reason, text), leased=True)
            finished("failed", failed=True)
            await w.rt.event(snap.obj, error.reason, str(error), warning=True)
            return True
        assert outcome is not None
        finished(outcome.kind.value)
        # Looked at again, whatever the outcome: a task parked by its turn has timeouts to
        # schedule (input, idle) that only a pass after the turn sees; it costs no API call.
        return True

    def loop_for(self, snap: Snapshot) -> TurnLoop:
        """What runs this task's turns: the model's core loop; for a participant task, the
        loop that takes its person's answer; for a task on a remote agent, the exchange with
        that agent's task."""
        if snap.lifecycle is Lifecycle.PARTICIPANT:
            return ANSWERING
        if snap.spec.agent:
            if self.w.rt.remotes is None:
                raise RemoteCallError(
                    "RemoteAgentNotReady", "this operator was started without remote agents"
                )
            return self.w.rt.remotes.loop(self.w.namespace)
        return self.w.rt.loop

    def retry_notice_writer(self) -> Callable[[RetryNotice], Awaitable[None]]:
        async def write(notice: RetryNotice) -> None:
            await self.w.write_status(
                {
                    "message": f"retrying ({notice.attempt} of {notice.budget}): {notice.reason}",
                    "messageId": own_message_id(),
                },
                leased=True,
            )

        return write

    # -- the guards ------------------------------------------------------------------------------

    async def renew_lease(self, holding: Holding) -> None:
        w = self.w
        period = w.rt.settings.lease_seconds / 3
        while True:
            await asyncio.sleep(period)
            sent = time.monotonic()
            # The renewal carries what the running turn has used so far (its journaled calls):
            # a long turn's progress, at no write of its own. It stays out of status.usage
            # until the turn ends, so a turn resumed from its journal is not counted twice.
            records = w.rt.cache.records(w.namespace, w.name)
            used = usage_of(r for r in records if r.turn == self.number)
            try:
                await w.write_status(
                    {
                        "runner": {
                            "holder": w.rt.identity,
                            "renewTime": rfc3339(now(), digits=6),
                            "epoch": holding.epoch,
                        },
                        "turnUsage": used.model_dump(by_alias=True),
                    },
                    leased=True,
                    renewal=True,
                )
            except LeaseLostError:
                return
            except Exception as exc:  # the watchdog decides when it is too late
                log.warning("task %s/%s: lease renewal failed: %s", w.namespace, w.name, exc)
                continue
            holding.renewed(sent)

    async def watch_lease(self, holding: Holding) -> None:
        """Cut the turn the moment this replica can no longer be sure it holds the lease."""
        while True:
            await asyncio.sleep(max(holding.deadline - holding.clock(), 0.0) + 0.001)
            if holding.lost or holding.clock() >= holding.deadline:
                holding.lost = True
                self.cut(CutReason.LEASE)
                await self.cut.see_through()
                return

    async def cut_at_deadline(self, left: float) -> None:
        """Cut the running turn when the task's working time reaches its deadline."""
        await asyncio.sleep(max(left, 0.0))
        self.cut(CutReason.DEADLINE)
        await self.cut.see_through()

    async def watch_for_interrupts(self, host: OperatorTurnHost) -> None:
        """While a turn runs, look at every change of the task. A look that fails (a write of
        the rows refused, say) is logged and made again, never the end of the watch: a turn
        must not run on deaf to a cancel."""
        w = self.w
        while True:
            await w.changed.wait()
            w.changed.clear()
            try:
                if await self.look(host):
                    await self.cut.see_through()
                    return
            except Exception as exc:
                log.warning(
                    "task %s/%s: looking for a cancel or command during the turn failed (%s: %s); "
                    "looking again",
                    w.namespace,
                    w.name,
                    type(exc).__name__,
                    exc,
                )
                await asyncio.sleep(INTERRUPT_RETRY_SECONDS)
                w.changed.set()

    def refused_completions(self, snap: Snapshot, pending: Sequence[Pending]) -> frozenset[str]:
        """The completions the task would refuse now, judged as the next pass would judge
        them (``core.completion.decide_completion``, with the hooks' override)."""
        hooks = self.w.rt.commands.hooks
        return frozenset(
            m.message_id
            for m in pending
            if m.kind == "control"
            and m.control == "complete"
            and not decide_completion(
                snap.extension(),
                requested_by=m.sender,
                override=completion_override(hooks, m.sender),
            ).complete
        )

    async def look(self, host: OperatorTurnHost) -> bool:
        """One look: act on :func:`decide_during_turn` until it says to keep going. True
        when the turn was cut."""
        w = self.w
        while True:
            snap = w.snapshot()
            facts = TurnFacts(present=False)
            if snap is not None:
                now_known = w.facts(snap)
                pending = now_known.pending
                facts = TurnFacts(
                    present=True,
                    spec=snap.spec,
                    pending=pending,
                    parent_ended=now_known.parent_ended is not None,
                    commands_run=frozenset(host.acked),
                    rows_stale=snap.rows != snap.status.sub_tasks,
                    closed=host.closed,
                    refused=self.refused_completions(snap, pending),
                )
            match decide_during_turn(facts):
                case CutTurn(reason=reason):
                    self.cut(reason)
                    return True
                case RunCommandNow(message_id=mid):
                    assert snap is not None
                    async with host.interlude:
                        if host.closed:
                            return False  # the turn has ended: the next pass runs the command
                        await w.command(snap, snap.message(mid), host)
                        host.acked.add(mid)
                case SyncRowsNow():
                    assert snap is not None
                    await w.write_status({"subTasks": rows_json(snap.rows)}, leased=True)
                    return False
                case KeepGoing():
                    return False
