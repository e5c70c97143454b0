"""The operator's side of the core loop: what one turn's
:class:`~tiny_harness.core.turn.TurnHost` does in Kubernetes.

Checkpoints go into the turn's record (``HarnessTurn``), fenced by the lease epoch. To keep a
simple turn at three API writes, entries whose loss is harmless are held back and written with
the next one: a drain (re-draining after a crash takes the same messages again), a compaction,
and a model response without tool calls (its loss only means the model is asked again). A
model response that asks for tools, and every tool result, are written before the loop goes
on, because what follows them (running a tool) must never happen twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from tiny_harness.core.clock import now
from tiny_harness.core.deadlines import stamped
from tiny_harness.core.decide import pending_of
from tiny_harness.core.history import (
    HistoryDelta,
    RecordEntry,
    by_reference,
    history_delta,
    replay_history,
)
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.speakers import refuse_speaker
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import (
    Lifecycle,
    Participant,
    Role,
    TaskLink,
    TaskSpec,
    local_parent_of,
)
from tiny_harness.core.turn import (
    DrainEntry,
    InboundMessage,
    JournalEntry,
    ModelEntry,
    OutcomeKind,
    ReplyIntent,
    SpawnIntent,
    TaskSettings,
    ToolEntry,
    TurnOutcome,
)
from tiny_harness.kube.client import ConflictError
from tiny_harness.kube.journal import FencedError, TurnRecord
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.messages import HarnessMessages, StoredMessage
from tiny_harness.kube.names import (
    CONTEXT_ID_ANNOTATION,
    LIFECYCLE_ANNOTATION,
    PARENT_LABEL,
    context_id_of,
)
from tiny_harness.operator import failpoints
from tiny_harness.operator.children import pending_news, rows_of
from tiny_harness.operator.cut import Cut
from tiny_harness.operator.initialise import initialise
from tiny_harness.operator.lease import Holding, LeaseLostError
from tiny_harness.operator.ports import TaskIO
from tiny_harness.operator.snapshot import Snapshot
from tiny_harness.operator.status_writes import failed_status

log = logging.getLogger(__name__)


def child_name(parent: str, intent_id: str) -> str:
    """A child's name, derived from the step that spawned it so a repeated spawn finds it."""
    digest = hashlib.sha256(intent_id.encode()).hexdigest()[:10]
    return f"{parent[:200]}-sub-{digest}"


class OperatorTurnHost:
    """Hosts one turn of one task (see :class:`tiny_harness.core.turn.TurnHost`).

    Every journal write it makes is fenced by the turn's lease epoch, so once another replica
    has taken the turn over, nothing this host still tries to record lands.
    """

    def __init__(
        self,
        worker: TaskIO,
        snap: Snapshot,
        turn: int,
        history: tuple[ChatMessage, ...],
        own: list[TurnRecord],
        holding: Holding,
        cut: Cut | None = None,
    ) -> None:
        self.w = worker
        self.cut = cut or Cut()
        self.snap = snap
        self.turn = turn
        self.history_before = history
        self.holding = holding
        self.acked = set(snap.acked)
        self.buffer: list[RecordEntry] = []
        self.last_record: TurnRecord | None = own[-1] if own else None
        self.recorded = {e.id for r in own for e in r.entries}
        self.entries: list[Any] = [e for r in own for e in r.entries]
        self.ended = any(r.ended for r in own)
        self.task_settings = TaskSettings(
            model=snap.status.model, reasoning_effort=snap.status.reasoning_effort
        )
        #: One append to the journal at a time: the turn's checkpoints and a command's reply
        #: (from the interrupt watcher) share the buffer and the record chain.
        self.flushing = asyncio.Lock()
        #: Held by a command that runs during the turn and by the turn's end: a command in
        #: flight finishes before the turn ends, and none starts after (``closed``); the next
        #: pass runs it instead. See "Commands during a turn" in docs/design/runtime.md.
        self.interlude = asyncio.Lock()
        self.closed = False

    # -- TurnHost ----------------------------------------------------------------------------

    def cut_deferred(self) -> AbstractContextManager[None]:
        """A step of the turn that a cut waits for (see operator/cut.py)."""
        return self.cut.deferred()

    async def settings(self) -> TaskSettings:
        # A model call follows: everything but held-back drains must be in the API first.
        if any(not isinstance(e, DrainEntry) for e in self.buffer):
            await self.flush()
        return self.task_settings

    def waiting_messages(self) -> list[StoredMessage]:
        """Participants' messages for the model not yet taken, from the cache. A control, a
        command or a message from someone who may not speak here is never the model's to see:
        the worker handles those between turns."""
        spec = self.snap.spec
        registry = self.w.rt.commands.registry
        taken = []
        for m in self.w.rt.cache.messages(self.w.namespace, self.w.name):
            if m.spec.message_id in self.acked:
                continue
            seen = pending_of(m.spec, registry)
            if (
                seen.kind == "ordinary"
                and seen.refusal is None
                and refuse_speaker(spec, m.spec.sender, m.spec.message_id) is None
            ):
                taken.append(m)
        return taken

    async def drain(self) -> Sequence[InboundMessage]:
        """The waiting participants' messages, then children's news not yet taken."""
        items = [
            InboundMessage(
                id=m.spec.message_id,
                content=m.spec.text,
                sender=m.spec.sender,
                files=m.spec.attachments,
            )
            for m in self.waiting_messages()
        ]
        children = self.w.rt.cache.children(self.w.namespace, self.w.name)
        items.extend(pending_news(children, self.acked))
        return items

    async def checkpoint(self, entry: JournalEntry) -> None:
        if entry.id in self.recorded:
            return
        self.buffer.append(entry)
        if isinstance(entry, DrainEntry):
            self.acked.update(m.id for m in entry.messages)
        if isinstance(entry, ToolEntry) or (
            isinstance(entry, ModelEntry) and entry.response.tool_calls
        ):
            await self.flush()

    async def spawn(self, intent: SpawnIntent) -> str:
        await self.flush()
        name = child_name(self.w.name, intent.id)
        spec = TaskSpec(
            goal=intent.goal,
            description=intent.description,
            participants=child_participants(self.snap.spec, intent),
            parent=TaskLink(task_id=self.w.name),
            agent=intent.agent,
            tool_servers=self.snap.spec.tool_servers,  # a child works with its parent's tools
            reach=self.snap.spec.reach,  # and may ask whom its parent's model may
        )
        return await create_child(
            self.w, self.snap.obj, name, spec, intent.lifecycle, self.task_settings
        )

    async def reply(self, intent: ReplyIntent) -> str | None:
        """Send the sub-task the parent's message (signed ``task:<parent>``, which every child
        here listens to), once: its message id is the step's."""
        await self.flush()
        # Any name the model gave: judged in summary, and read whole (loaded with this task's
        # group: cache.load) only once it names this task as its parent.
        named = self.w.rt.cache.stub(self.w.namespace, intent.task_id)
        if named is None or local_parent_of(named.get("spec")) != self.w.name:
            return f"{intent.task_id} is not a sub-task of this task"
        child = self.w.rt.cache.task(self.w.namespace, intent.task_id)
        if child is None:
            return f"{intent.task_id} is not a sub-task of this task"
        status = child.get("status") or {}
        if status.get("lifecycle") == Lifecycle.PARTICIPANT.value:
            return (
                f"sub-task {intent.task_id} is a question to a person; only they answer it, and "
                "their answer arrives as a note"
            )
        if TaskState(status.get("state") or TaskState.SUBMITTED.value).is_terminal:
            return f"sub-task {intent.task_id} has ended ({status.get('state')})"
        await HarnessMessages(self.w.rt.api, self.w.namespace).send(
            MessageSpec(
                task=intent.task_id,
                message_id=intent.id,
                sender=f"task:{self.w.name}",
                parts=(MessagePart(text=intent.text),),
            ),
            task=child,
        )
        return None

    async def end_turn(self, outcome: TurnOutcome) -> None:
        async with self.interlude:
            await self._end_turn(outcome)
            self.closed = True

    async def quiesce(self) -> None:
        """Wait for a command in flight, and let no other start under this turn."""
        async with self.interlude:
            self.closed = True

    async def _end_turn(self, outcome: TurnOutcome) -> None:
        if not self.ended:
            await self.flush(history=self.delta(outcome.history))
            self.ended = True
        else:
            await self.flush()
        cache = self.w.rt.cache
        rows = rows_of(cache.children(self.w.namespace, self.w.name), self.acked)
        patch: dict[str, Any] = {
            "state": outcome.state.value,
            "subState": outcome.sub_state.value if outcome.sub_state else None,
            "message": outcome.text,
            "messageId": outcome.message_id if outcome.text else None,
            "subTasks": [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in rows],
            "runner": None,
            # The calls this turn parked (none: the ones it ran are settled, and leave).
            "approvals": [
                a.model_dump(mode="json", by_alias=True, exclude_none=True)
                for a in outcome.approvals
            ],
        }
        if outcome.plan is not None:
            patch["plan"] = outcome.plan.model_dump(mode="json", by_alias=True, exclude_none=True)
        if outcome.artifacts is not None:
            # The index alone: the chunks' parts stay in this turn's journal entries.
            patch["artifacts"] = [
                a.model_dump(mode="json", by_alias=True, exclude_none=True)
                for a in outcome.artifacts
            ]
        if outcome.kind in (OutcomeKind.OVER_BUDGET, OutcomeKind.BUDGET_EXCEEDED):
            self.w.rt.metrics.budget_stops.labels(action=outcome.kind.value).inc()
        if outcome.kind is OutcomeKind.BUDGET_EXCEEDED:
            failed = failed_status(self.snap.status, "BudgetExceeded", outcome.text)
            patch["conditions"] = failed["conditions"]
        self.holding.closing = True
        await self.w.status.write(patch, leased=True)

    # -- the operator's own steps -------------------------------------------------------------

    async def record_notices(self, entries: Sequence[RecordEntry]) -> None:
        """A command's reply during the turn, written now under the turn's fence."""
        self.buffer.extend(entries)
        await self.flush()

    async def flush(self, *, history: HistoryDelta | None = None) -> None:
        async with self.flushing:
            await self._flush(history)

    async def _flush(self, history: HistoryDelta | None) -> None:
        if not self.buffer and history is None:
            return
        self.holding.check()
        # What is buffered now; an entry buffered while the append is on its way waits for
        # the next flush (it is not cleared with this batch).
        batch = tuple(self.buffer)
        try:
            record = await self.w.records.append(
                self.w.name,
                self.turn,
                batch,
                last=self.last_record,
                history=history,
                owner=self.snap.obj,
                lease=self.holding.epoch,
            )
        except FencedError:
            self.holding.lost = True
            raise LeaseLostError("another replica fenced this turn's record") from None
        failpoints.journal_written(self.w.name)
        # The write landed; if this replica paused past its lease meanwhile (a long GC, a
        # SIGSTOP), the next step (a tool call) must not happen: another replica may run it.
        self.holding.check()
        self.w.rt.cache.wrote_record(self.w.namespace, record)
        self.w.rt.written_record(self.w.namespace, record)
        self.recorded.update(e.id for e in batch)
        self.entries.extend(batch)
        del self.buffer[: len(batch)]
        self.last_record = record

    async def close_cut_turn(self) -> None:
        """End a turn that was cut (or failed): keep what it did, so the next turn's history
        has it."""
        if self.ended:
            await self.flush()
            return
        after = replay_history(self.history_before, [*self.entries, *self.buffer])
        await self.flush(history=self.delta(after))

    def delta(self, after: Sequence[ChatMessage]) -> HistoryDelta:
        """The turn's history delta as journaled: a participant's message the turn drained is
        referred to in its drain entry, not copied
        (:func:`~tiny_harness.core.history.by_reference`)."""
        drains = [e for e in (*self.entries, *self.buffer) if isinstance(e, DrainEntry)]
        return by_reference(history_delta(self.history_before, after), drains)


def child_participants(parent: TaskSpec, intent: SpawnIntent) -> tuple[Participant, ...]:
    """Who is on a spawned child: the parent's participants, as on the parent; for a
    participant task, its person as the assignee and the parent's people as watchers (they
    follow the question; its person alone answers it)."""
    if intent.lifecycle is not Lifecycle.PARTICIPANT or intent.assignee is None:
        return parent.participants
    return (
        Participant(id=intent.assignee, role=Role.ASSIGNEE),
        *(
            Participant(id=p.id, role=Role.WATCHER)
            for p in parent.participants
            if p.id != intent.assignee
        ),
    )


async def create_child(
    worker: TaskIO,
    parent: dict[str, Any],
    name: str,
    spec: TaskSpec,
    lifecycle: Lifecycle,
    settings: TaskSettings,
) -> str:
    """Create a child task (once: a repeated call finds it), initialise it with the parent's
    model and effort, and give a delegated child its brief. A conversation child starts parked
    for its first message, without a model call."""
    try:
        child = await worker.tasks.create(
            name,
            spec.model_dump(mode="json", by_alias=True, exclude_none=True),
            labels={PARENT_LABEL: label_value(worker.name)},
            # A child is part of its parent's conversation: A2A clients group them by context;
            # its lifecycle is the one it is created with, whoever initialises it first.
            annotations={
                CONTEXT_ID_ANNOTATION: context_id_of(parent),
                LIFECYCLE_ANNOTATION: lifecycle.value,
            },
            owner=parent,
        )
    except ConflictError:
        child = await worker.tasks.get(name)
    else:
        worker.rt.metrics.subtasks_spawned.inc()
    worker.rt.cache.wrote_task(child)
    if not (child.get("status") or {}).get("state"):
        generation = child["metadata"].get("generation")
        status: dict[str, Any] = {
            **initialise(child["spec"], generation, lifecycle, name=name).status,
            "model": settings.model,
            "reasoningEffort": settings.reasoning_effort,
        }
        if lifecycle is Lifecycle.CONVERSATION:
            # Parked for its first message at once (its own worker would park it next).
            status["state"] = TaskState.INPUT_REQUIRED.value
            status["subState"] = SubState.AWAITING_NEXT_MESSAGE.value
        # The times a first status implies (waitingSince for one that waits), as any write.
        first = stamped(status, {}, now())
        try:
            child = await worker.tasks.patch_status(
                name,
                {k: v for k, v in first.items() if v is not None},
                resource_version=child["metadata"]["resourceVersion"],
            )
        except ConflictError:
            pass  # the child's own worker initialised it first, from the same parent settings
        else:
            worker.rt.cache.wrote_task(child)
    if lifecycle is Lifecycle.DELEGATED:
        brief = spec.goal + (f"\n\n{spec.description}" if spec.description else "")
        await HarnessMessages(worker.rt.api, worker.namespace).send(
            MessageSpec(
                task=name,
                message_id="brief",
                sender=f"task:{worker.name}",
                parts=(MessagePart(text=brief),),
            ),
            task=child,
        )
    return name
