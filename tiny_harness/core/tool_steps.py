"""A turn's tool calls: each one parked for approval, or run and journaled, and what its result
changes in the turn.

A tool step is journaled like a model call (:mod:`tiny_harness.core.turn`): live, a call either
parks (a gate says it needs a participant's approval, :mod:`tiny_harness.core.approval_steps`)
or runs, through the validating invoker for a tool or in the loop for an intrinsic
(:mod:`tiny_harness.core.intrinsics`), and its :class:`~tiny_harness.core.turn.ToolEntry` (or
:class:`~tiny_harness.core.turn.AwaitEntry`) is checkpointed before the turn goes on; replayed,
the entry is taken from the journal and nothing runs. A call an earlier turn parked, now
decided, is one more such step (:meth:`ToolSteps.decided`), so a call approved once runs once.
Every result is bounded before it is journaled, whatever the tool.
"""

from __future__ import annotations

import json
from typing import Any

from tiny_harness.core import approval_steps
from tiny_harness.core.approval import Gates
from tiny_harness.core.artifact_index import ChunkRef, apply_chunk, local_entry_id, tool_files_chunk
from tiny_harness.core.intrinsics import INTRINSIC_NAMES, apply_intrinsic, record_spawn
from tiny_harness.core.llm import ToolCall
from tiny_harness.core.reach import Reach
from tiny_harness.core.sizes import entry_text
from tiny_harness.core.tools import InvalidToolCallError, ToolContext, ToolInvoker
from tiny_harness.core.tracing import tool_result, tool_span
from tiny_harness.core.turn import AwaitEntry, DecidedCall, ToolEntry, TurnHost
from tiny_harness.core.turn_state import TurnState


class ToolSteps:
    """The tool calls of one turn, with the tools, gates and reach that turn has."""

    def __init__(
        self,
        state: TurnState,
        host: TurnHost,
        invoker: ToolInvoker,
        *,
        gates: Gates,
        reach: Reach,
    ) -> None:
        self.state = state
        self.host = host
        self.invoker = invoker
        self.gates = gates
        self.reach = reach

    async def step(self, call: ToolCall, call_id: str) -> None:
        """Run (or park) one call of the model's answer; ``call_id`` is its id in a park,
        unique among the answer's calls whatever ids the model gave them."""
        s = self.state
        entry_id = s.ref.tool(s.tool_index, call.id)
        s.tool_index += 1
        entry = s.replay.call(entry_id)
        if entry is None:
            entry = self.gate(call, entry_id, call_id) or await self.run_call(call, entry_id)
            await self.host.checkpoint(entry)
        if isinstance(entry, AwaitEntry):
            s.awaiting.append(entry)  # no result yet: the next turn gives it, decided
            return
        self.took(entry)

    def gate(self, call: ToolCall, entry_id: str, call_id: str) -> AwaitEntry | ToolEntry | None:
        return approval_steps.gate(
            self.gates,
            self.invoker,
            call,
            entry_id,
            self.state.awaiting,
            turn=self.state.ref.turn,
            call_id=call_id,
        )

    async def decided(self, decided: DecidedCall) -> None:
        """A call an earlier turn parked, now decided: run it as approved (with the edited
        arguments, if any), or give the model the rejection as its result. Journaled as any
        tool step, so a call approved once runs once, however often this turn is resumed."""
        s = self.state
        entry_id = s.ref.tool(s.tool_index, decided.call_id)
        s.tool_index += 1
        entry = s.replay.step(entry_id, ToolEntry)
        if entry is None:
            decision = decided.decision
            if decision.verdict == "approve":
                arguments = (
                    json.dumps(decision.arguments)
                    if decision.arguments is not None
                    else decided.arguments_json
                )
                call = ToolCall(id=decided.answers, name=decided.name, arguments_json=arguments)
                entry = await self.run_call(call, entry_id)
            else:
                entry = ToolEntry(
                    id=entry_id,
                    call_id=decided.answers,
                    name=decided.name,
                    content=entry_text(f"Not run: {decision.text(decided.name)}.", "tool result"),
                    is_error=True,
                )
            await self.host.checkpoint(entry)
        self.took(entry)

    def took(self, entry: ToolEntry) -> None:
        """What a tool step's result changes: the history, and an intrinsic's effect."""
        s = self.state
        s.history.append(entry.message())
        if entry.plan is not None:
            s.task = s.task.model_copy(update={"plan": entry.plan})
        if entry.spawned is not None:
            s.put_row(entry.spawned)
        if entry.question is not None:
            s.questions.append(entry.question)
        if entry.artifact is not None:
            # Journaled in this entry, so published once: a replay applies the same chunk at
            # the same place, unless the index is already the one this turn's end wrote.
            s.published = True
            if not s.indexed:
                ref = ChunkRef(
                    turn=s.ref.turn, entry=local_entry_id(entry.id), size=entry.artifact.size
                )
                artifacts = apply_chunk(s.task.artifacts, entry.artifact, ref)
                s.task = s.task.model_copy(update={"artifacts": artifacts})

    async def run_call(self, call: ToolCall, entry_id: str) -> ToolEntry:
        with tool_span(call, intrinsic=call.name in INTRINSIC_NAMES) as span:
            result = await self.call_tool(call, entry_id)
            tool_result(span, is_error=result.is_error, content=result.content)
            return result

    async def call_tool(self, call: ToolCall, entry_id: str) -> ToolEntry:
        s = self.state

        def entry(content: str, **effects: Any) -> ToolEntry:
            # Bounded before it is journaled, whatever the tool: an entry fits in a chunk.
            return ToolEntry(
                id=entry_id,
                call_id=call.id,
                name=call.name,
                content=entry_text(content, "tool result"),
                **effects,
            )

        try:
            args = self.invoker.check(call)
        except InvalidToolCallError as exc:
            return entry(f"Error: {exc}", is_error=True)
        if call.name not in INTRINSIC_NAMES:
            context = ToolContext(task_id=s.ref.task_id, call_id=entry_id)
            result = await self.invoker.run(call, args, context)
            if result.files and not result.is_error:
                chunk, kept = tool_files_chunk(s.task.artifacts, call.name, call.id, result.files)
                return entry(f"{result.content}\n\n{kept}", artifact=chunk)
            return entry(result.content, is_error=result.is_error)
        applied = apply_intrinsic(
            call.name, args, s.task, task_id=s.ref.task_id, step_id=entry_id, reach=self.reach
        )
        if applied.reply is not None:
            refused = await self.host.reply(applied.reply)
            if refused is not None:
                return entry(f"Error: {refused}", is_error=True)
        if applied.spawn is None:
            return entry(
                applied.content,
                is_error=applied.is_error,
                plan=applied.plan,
                question=applied.question,
                artifact=applied.artifact,
            )
        child_id = await self.host.spawn(applied.spawn)
        plan, row, content = record_spawn(s.task, applied.spawn, child_id)
        return entry(content, plan=plan if plan is not s.task.plan else None, spawned=row)
