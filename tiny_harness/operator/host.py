"""The operator's side of the core loop: what one turn's :class:`TurnHost` does in Kubernetes.

Checkpoints go into the turn's record (``HarnessTurn``). To keep a simple turn at three API
writes, entries whose loss is harmless are held back and written with the next one: a drain
(re-draining after a crash takes the same messages again), a compaction, and a model response
without tool calls (its loss only means the model is asked again). A model response that asks
for tools, and every tool result, are written before the loop goes on, because what follows
them (running a tool) must never happen twice.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tiny_harness.core.commands.parse import parse_command
from tiny_harness.core.history import HistoryDelta, history_delta, replay_history
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import Lifecycle, TaskLink, TaskSpec
from tiny_harness.core.turn import (
    DrainEntry,
    InboundMessage,
    JournalEntry,
    ModelEntry,
    SpawnIntent,
    TaskSettings,
    ToolEntry,
    TurnOutcome,
)
from tiny_harness.kube.client import ConflictError
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.messages import HarnessMessages, StoredMessage
from tiny_harness.kube.names import PARENT_LABEL
from tiny_harness.operator.children import pending_news, rows_of

if TYPE_CHECKING:
    from tiny_harness.operator.worker import Snapshot, TaskWorker

log = logging.getLogger(__name__)


def child_name(parent: str, intent_id: str) -> str:
    """A child's name, derived from the step that spawned it so a repeated spawn finds it."""
    digest = hashlib.sha256(intent_id.encode()).hexdigest()[:10]
    return f"{parent[:200]}-sub-{digest}"


class OperatorTurnHost:
    """Hosts one turn of one task (see :class:`tiny_harness.core.turn.TurnHost`)."""

    def __init__(
        self,
        worker: TaskWorker,
        snap: Snapshot,
        turn: int,
        history: tuple[ChatMessage, ...],
    ) -> None:
        self.w = worker
        self.snap = snap
        self.turn = turn
        self.history_before = history
        self.acked = set(snap.acked)
        self.buffer: list[JournalEntry] = []
        own = [r for r in snap.records if r.turn == turn]
        self.last_record: TurnRecord | None = own[-1] if own else None
        self.recorded = {e.id for r in own for e in r.entries}
        self.entries: list[Any] = [e for r in own for e in r.entries]
        self.ended = any(r.history is not None for r in own)
        self.task_settings = TaskSettings(
            model=snap.status.model, reasoning_effort=snap.status.reasoning_effort
        )
        self.has_children = bool(snap.children)
        # The pass that started the turn has just listed the inbox: the first drain uses it.
        self.prefetched: list[StoredMessage] | None = list(snap.pending)

    # -- TurnHost ----------------------------------------------------------------------------

    async def settings(self) -> TaskSettings:
        # A model call follows: everything but held-back drains must be in the API first.
        if any(not isinstance(e, DrainEntry) for e in self.buffer):
            await self.flush()
        return self.task_settings

    async def drain(self) -> Sequence[InboundMessage]:
        if self.prefetched is not None:
            messages, self.prefetched = self.prefetched, None
        else:
            messages = await self.w.messages.for_task(self.w.name)
        registry = self.w.rt.commands.registry
        items = [
            InboundMessage(id=m.spec.message_id, content=m.spec.text, sender=m.spec.sender)
            for m in messages
            if m.spec.message_id not in self.acked
            and m.spec.control is None
            and parse_command(m.spec, registry) is None
        ]
        if self.has_children:
            items.extend(pending_news(await self.w.children_of(force=True), self.acked))
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
            participants=self.snap.spec.participants,
            parent=TaskLink(task_id=self.w.name),
        )
        self.has_children = True
        return await create_child(
            self.w, self.snap.obj, name, spec, intent.lifecycle, self.task_settings
        )

    async def emit(self, message_id: str, text: str) -> None:
        # The text is already in the model response's checkpoint, which the transcript reads.
        return None

    async def end_turn(self, outcome: TurnOutcome) -> None:
        if not self.ended:
            await self.flush(history=history_delta(self.history_before, outcome.history))
            self.ended = True
        else:
            await self.flush()
        children = await self.w.children_of(force=True) if self.has_children else []
        rows = rows_of(children, self.acked)
        patch: dict[str, Any] = {
            "state": outcome.state.value,
            "subState": outcome.sub_state.value if outcome.sub_state else None,
            "message": outcome.text,
            "subTasks": [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in rows],
            "runner": None,
        }
        if outcome.plan is not None:
            patch["plan"] = outcome.plan.model_dump(mode="json", by_alias=True, exclude_none=True)
        await self.w.write_status(patch, leased=True)

    # -- the operator's own steps -------------------------------------------------------------

    async def flush(self, *, history: HistoryDelta | None = None) -> None:
        if not self.buffer and history is None:
            return
        record = await self.w.records.append(
            self.w.name,
            self.turn,
            tuple(self.buffer),
            last=self.last_record,
            history=history,
            owner_uid=self.snap.obj["metadata"]["uid"],
        )
        self.recorded.update(e.id for e in self.buffer)
        self.entries.extend(self.buffer)
        self.buffer.clear()
        self.last_record = record

    async def close_cut_turn(self) -> None:
        """End a turn a participant cut: keep what it did, so the next turn's history has it."""
        if self.ended:
            return
        after = replay_history(self.history_before, [*self.entries, *self.buffer])
        await self.flush(history=history_delta(self.history_before, after))
        self.ended = True


async def create_child(
    worker: TaskWorker,
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
            owner=parent,
        )
    except ConflictError:
        child = await worker.tasks.get(name)
    else:
        worker.rt.metrics.subtasks_spawned.inc()
    worker.rt.saw_child(worker.namespace, worker.name, name)
    if not (child.get("status") or {}).get("state"):
        delegated = lifecycle is Lifecycle.DELEGATED
        status: dict[str, Any] = {
            "state": (TaskState.SUBMITTED if delegated else TaskState.INPUT_REQUIRED).value,
            "subState": None if delegated else SubState.AWAITING_NEXT_MESSAGE.value,
            "lifecycle": lifecycle.value,
            "model": settings.model,
            "reasoningEffort": settings.reasoning_effort,
            "observedGeneration": child["metadata"].get("generation"),
        }
        await worker.tasks.patch_status(
            name,
            {k: v for k, v in status.items() if v is not None},
            resource_version=child["metadata"]["resourceVersion"],
        )
    if lifecycle is Lifecycle.DELEGATED:
        brief = spec.goal + (f"\n\n{spec.description}" if spec.description else "")
        await HarnessMessages(worker.rt.api, worker.namespace).send(
            MessageSpec(
                task=name,
                message_id="brief",
                sender=f"task:{worker.name}",
                parts=(MessagePart(text=brief),),
            ),
            task_uid=child["metadata"]["uid"],
        )
    return name
