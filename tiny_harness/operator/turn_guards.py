"""The guards that run beside a turn, in its task group (:mod:`tiny_harness.operator.supervisor`):

- the **renewal** writes the runner lease every third of its time, with the turn's usage so far;
- the **lease watchdog** cuts the turn the moment this replica can no longer be sure it holds the
  lease (:class:`~tiny_harness.core.decide.CutReason` ``LEASE``);
- the **deadline** cuts it when the task's working time runs out (``DEADLINE``);
- the **interrupt watcher** looks at every change of the task and asks
  :func:`~tiny_harness.core.decide.decide_during_turn` what to do: cut (``CONTROL``, ``GONE``),
  run a command beside the turn, or write the sub-task rows.

Each cut is given once, to the turn's :class:`~tiny_harness.operator.cut.Cut`, and the guard
that gave it sees it through.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Final

from tiny_harness.core.actions import CutReason, CutTurn, KeepGoing, RunCommandNow, SyncRowsNow
from tiny_harness.core.clock import now, rfc3339
from tiny_harness.core.commands.hooks import completion_override
from tiny_harness.core.completion import decide_completion
from tiny_harness.core.decide import Pending, TurnFacts, decide_during_turn
from tiny_harness.core.usage import usage_of
from tiny_harness.operator.cut import Cut
from tiny_harness.operator.host import OperatorTurnHost
from tiny_harness.operator.lease import Holding, LeaseLostError
from tiny_harness.operator.ports import SupervisedWorker
from tiny_harness.operator.snapshot import Snapshot, rows_json

log = logging.getLogger(__name__)

#: Pause before a failed look for interrupts during a turn is made again (for as long as the
#: turn runs, which its lease and deadline bound).
INTERRUPT_RETRY_SECONDS: Final = 0.5


class TurnGuards:
    """The guards of one turn of a task (see the module docstring)."""

    def __init__(self, worker: SupervisedWorker, number: int, cut: Cut) -> None:
        self.w = worker
        self.number = number
        self.cut = cut

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
                await w.status.write(
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
                        await w.command_step.run(snap, snap.message(mid), host)
                        host.acked.add(mid)
                case SyncRowsNow():
                    assert snap is not None
                    await w.status.write({"subTasks": rows_json(snap.rows)}, leased=True)
                    return False
                case KeepGoing():
                    return False
