"""A turn and its guards, run as one structured unit.

The reconciler (:mod:`tiny_harness.operator.worker`) decides that a turn runs; this module runs
it. A turn starts from its input (:mod:`tiny_harness.operator.turn_start`) and is the loop's
``run_turn`` (the model's core loop, the remote follower, or the loop that takes a person's
answer) plus four guards (:mod:`tiny_harness.operator.turn_guards`: the lease's renewal and
watchdog, the deadline, the interrupt watcher), all in one :class:`asyncio.TaskGroup`.

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
from collections.abc import Awaitable, Callable
from typing import Final

from tiny_harness.core.actions import CutReason
from tiny_harness.core.clock import now
from tiny_harness.core.deadlines import deadline_left
from tiny_harness.core.history import AckEntry, NoticeEntry
from tiny_harness.core.llm import RetryNotice, retry_observer
from tiny_harness.core.participant_turn import AnsweringLoop
from tiny_harness.core.task import Lifecycle
from tiny_harness.core.tracing import enabled as tracing_enabled
from tiny_harness.core.tracing import end_turn, parent_and_links, turn_span
from tiny_harness.core.turn import TurnOutcome
from tiny_harness.models.call_errors import ModelCallError
from tiny_harness.operator.cut import Cut
from tiny_harness.operator.host import OperatorTurnHost
from tiny_harness.operator.lease import Holding, LeaseLostError
from tiny_harness.operator.ports import SupervisedWorker, TurnLoop
from tiny_harness.operator.remote_calls import RemoteCallError
from tiny_harness.operator.snapshot import Snapshot, history_before, unique_entries
from tiny_harness.operator.status_writes import failed_status, own_message_id
from tiny_harness.operator.turn_guards import TurnGuards
from tiny_harness.operator.turn_start import start_patch, turn_input

log = logging.getLogger(__name__)

#: The turns of participant tasks take their person's answer; no model is called.
ANSWERING: Final = AnsweringLoop()


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
        self.guards = TurnGuards(worker, number, self.cut)

    async def run(self) -> bool:
        """Run (or resume) the turn. True: the worker should look again after it."""
        w, snap, number = self.w, self.snap, self.number
        start, offer = await start_patch(w, snap, number, self.resume)
        holding = await w.fences.take_lease(snap, start)
        records = snap.records
        if self.resume:
            fenced = await w.fences.fence_turn(snap, number, holding.epoch)
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
        given = turn_input(w, snap, number, records, history, journal, offer)
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
                    lambda: loop.run_turn(host, given, offer.tools), host, holding
                )
                # Still under the lease: a cut or failed turn's last writes are fenced by it.
                return await self.conclude(host, holding, outcome, error, finished)
            finally:
                w.status.holding = None
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
                    group.create_task(self.guards.renew_lease(holding)),
                    group.create_task(self.guards.watch_lease(holding)),
                    group.create_task(self.guards.watch_for_interrupts(host)),
                ]
                if left is not None:
                    guards.append(group.create_task(self.guards.cut_at_deadline(left)))

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
            await w.status.write(failed_status(snap.status, "DeadlineExceeded", text), leased=True)
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
            await w.status.write(failed_status(snap.status, error.reason, text), leased=True)
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
            await self.w.status.write(
                {
                    "message": f"retrying ({notice.attempt} of {notice.budget}): {notice.reason}",
                    "messageId": own_message_id(),
                },
                leased=True,
            )

        return write
