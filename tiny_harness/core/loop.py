"""The core loop: one turn of a task, resumable at any step.

A turn is: drain the inbox, assemble the context (compacting first if it is over budget), call
the model, and run the tool calls it asked for through the validating invoker, until a response
asks for none. The turn then settles: a conversation parks for the next message, a question
parks for its answer, and a delegated task runs the completion predicate.

The loop holds no durable state of its own. Each step's result is handed to the host as a
journal entry (:mod:`tiny_harness.core.turn`) before the loop goes on, and a turn run again with
its saved journal replays those entries instead of calling the model, the tools or the host
again, so a host that is killed mid-turn resumes without repeating a side effect. Everything
between two steps is deterministic: intrinsics do no I/O, ids are positional, and the prompt is
built from the replayed state.

This module is the order of a turn's steps and its end (how each outcome settles the task). The
steps live in their own modules, all over one :class:`~tiny_harness.core.turn_state.TurnState`:
the model calls and their compaction (:mod:`~tiny_harness.core.model_steps`), the tool calls,
intrinsics and approval parks (:mod:`~tiny_harness.core.tool_steps`), and the reader of the
saved journal (:mod:`~tiny_harness.core.replay`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Final

from tiny_harness.core import approval_steps
from tiny_harness.core.agent import AgentChoice
from tiny_harness.core.approval import PendingApproval, distinct_call_ids
from tiny_harness.core.compaction import ContextWindows, estimate_tools_tokens
from tiny_harness.core.completion import CompletionOverride, CompletionVerdict, decide_completion
from tiny_harness.core.intrinsics import (
    INTRINSIC_NAMES,
    INTRINSIC_SPECS,
    SPAWN_SUBTASK,
    spawn_subtask_spec,
)
from tiny_harness.core.llm import ModelAdapter
from tiny_harness.core.loop_config import LoopConfig
from tiny_harness.core.model_steps import ModelSteps
from tiny_harness.core.prompt import sub_task_note
from tiny_harness.core.replay import Skipped
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import Lifecycle
from tiny_harness.core.tool_steps import ToolSteps
from tiny_harness.core.tools import ToolInvoker, ToolRegistrationError, ToolRegistry, TurnTools
from tiny_harness.core.turn import (
    DrainEntry,
    OutcomeKind,
    TurnHost,
    TurnInput,
    TurnOutcome,
    max_calls_text,
)
from tiny_harness.core.turn_state import TurnState
from tiny_harness.core.usage import budget_reached


class CoreLoop:
    """Runs turns of tasks with one model and one set of tools; holds no per-task state."""

    def __init__(
        self,
        model: ModelAdapter,
        windows: ContextWindows,
        tools: ToolRegistry | None = None,
        *,
        config: LoopConfig | None = None,
        completion_override: CompletionOverride | None = None,
    ) -> None:
        self.model = model
        self.windows = windows
        self.config = config or LoopConfig()
        self.completion_override = completion_override
        registry = ToolRegistry()
        for tool in tools or ():
            if tool.spec.name in INTRINSIC_NAMES:
                raise ToolRegistrationError(tool.spec.name, "the name is reserved for an intrinsic")
            registry.include(tool)
        for spec in INTRINSIC_SPECS:
            registry.add(spec, None)
        self.registry = registry
        self.invoker = ToolInvoker(registry)
        self.tool_specs = registry.specs
        self.tools_tokens = estimate_tools_tokens(self.tool_specs)
        self._offers: dict[tuple[AgentChoice, ...], ToolRegistry] = {}

    def registry_for(self, agents: tuple[AgentChoice, ...]) -> ToolRegistry:
        """The tools of a turn that may hand work to ``agents``: the loop's, with
        ``spawn_subtask`` naming them (built once per set of agents, a few at most)."""
        if not agents:
            return self.registry
        found = self._offers.get(agents)
        if found is None:
            found = ToolRegistry()
            for tool in self.registry:
                if tool.spec.name == SPAWN_SUBTASK:
                    found.add(spawn_subtask_spec(agents), None)
                else:
                    found.include(tool)
            if len(self._offers) >= 64:
                self._offers.clear()
            self._offers[agents] = found
        return found

    async def run_turn(
        self, host: TurnHost, turn: TurnInput, tools: TurnTools | None = None
    ) -> TurnOutcome:
        """Run (or resume, from ``turn.journal``) one turn and settle the task through ``host``;
        ``tools`` are this turn's own, on top of the loop's (see :class:`TurnTools`)."""
        return await _Turn(self, host, turn, tools).run()


class _Turn:
    """One turn as it runs: the order of its steps, and how it ends.

    The steps themselves are the model calls (:class:`~tiny_harness.core.model_steps.ModelSteps`)
    and the tool calls (:class:`~tiny_harness.core.tool_steps.ToolSteps`); all of them read and
    change one :class:`~tiny_harness.core.turn_state.TurnState`, rebuilt identically when a
    journal is replayed.
    """

    def __init__(
        self, loop: CoreLoop, host: TurnHost, turn: TurnInput, tools: TurnTools | None = None
    ) -> None:
        self.loop = loop
        self.host = host
        invoker, tool_specs, tools_tokens = loop.invoker, loop.tool_specs, loop.tools_tokens
        extra = tools.tools if tools is not None else ()
        if extra or turn.agents:
            # This turn's own tools (a task's tool servers) and remote agents, on top of the
            # loop's: only what the turn does live depends on them, never its replay.
            registry = loop.registry_for(turn.agents).extended(extra)
            invoker, tool_specs = ToolInvoker(registry), registry.specs
            tools_tokens = estimate_tools_tokens(tool_specs)
        self.state = TurnState(turn)
        self.ref = turn.ref
        self.lifecycle = turn.task.effective_lifecycle
        self.decided = turn.decided
        self.budget = turn.budget
        self.used = turn.used
        self.model_steps = ModelSteps(
            self.state,
            host,
            model=loop.model,
            windows=loop.windows,
            config=loop.config,
            tool_specs=tool_specs,
            tools_tokens=tools_tokens,
            tool_notes=tools.notes if tools is not None else (),
        )
        self.tool_steps = ToolSteps(self.state, host, invoker, gates=turn.gates, reach=turn.reach)

    async def run(self) -> TurnOutcome:
        s = self.state
        for decided in self.decided:
            await self.tool_steps.decided(decided)
        first = True
        while True:
            await self.drain_point()
            if first and self.lifecycle is Lifecycle.CONVERSATION and not s.has_input():
                # Nothing to answer (a conversation started without a message): no model call.
                return await self.end(OutcomeKind.WAITING_FOR_MESSAGE, s.last_reply())
            first = False
            if s.model_calls >= self.loop.config.max_model_calls:
                return await self.end(
                    OutcomeKind.MAX_MODEL_CALLS, max_calls_text(self.loop.config.max_model_calls)
                )
            over = self.over_budget()
            if over is not None:
                return await over
            response = await self.model_steps.call()
            if response.tool_calls:
                ids = distinct_call_ids([c.id for c in response.tool_calls])
                for call, call_id in zip(response.tool_calls, ids, strict=True):
                    await self.tool_steps.step(call, call_id)
                if s.awaiting:
                    return await self.park_for_approval()
                if s.questions:
                    return await self.end(OutcomeKind.WAITING_FOR_ANSWER, "\n\n".join(s.questions))
                continue
            if await self.drain_point():
                continue  # something arrived during the last call: the model sees it first
            outcome = await self.settle(response.text)
            if outcome is not None:
                return outcome

    async def drain_point(self) -> bool:
        """Take the messages and sub-task news that arrived (journaled as a drain step);
        False when there were none."""
        s = self.state
        entry_id = s.ref.drain(s.drain_index)
        s.drain_index += 1
        entry = s.replay.optional(entry_id, DrainEntry)
        if isinstance(entry, Skipped):
            return False
        if entry is None:
            messages = tuple(await self.host.drain())
            if not messages:
                return False
            entry = DrainEntry(id=entry_id, messages=messages)
            await self.host.checkpoint(entry)
        for message in entry.messages:
            if message.sub_task is None:
                s.history.append(message.said())
                continue
            row = message.sub_task
            s.put_row(row)
            s.history.append(sub_task_note(row, message.content))
            if row.result_unread:
                s.pending_reads.append(row.task_id)
        return True

    # -- the end of the turn --

    async def settle(self, text: str) -> TurnOutcome | None:
        """The turn's end once the model asks for nothing more; None means one more call."""
        s = self.state
        # The text is the last model call's reply, which the history holds under that call's
        # entry id: the status message carries the same id.
        reply_id = s.ref.model(s.model_calls - 1)
        if self.lifecycle is Lifecycle.CONVERSATION:
            return await self.end(OutcomeKind.WAITING_FOR_MESSAGE, text, reply_id)
        decision = decide_completion(s.task, override=self.loop.completion_override)
        if decision.verdict is CompletionVerdict.COMPLETE:
            return await self.end(OutcomeKind.COMPLETED, text, reply_id)
        if decision.verdict is CompletionVerdict.READ_RESULTS:
            for row in s.task.sub_tasks:
                if row.task_id in decision.unread:
                    s.history.append(sub_task_note(row, None))
                    s.pending_reads.append(row.task_id)
            return None
        waiting = f"{text}\n\n({decision.reason})" if text else decision.reason
        return await self.end(OutcomeKind.WAITING_FOR_SUBTASKS, waiting)

    async def park_for_approval(self) -> TurnOutcome:
        """End the turn with its parked calls waiting for decisions; the calls of the same
        response that needed none have run, and their results are in the history."""
        s = self.state
        text, pending = approval_steps.parked(s.awaiting, s.ref.turn, s.questions)
        return await self.end(OutcomeKind.WAITING_FOR_APPROVAL, text, approvals=pending)

    async def end(
        self,
        kind: OutcomeKind,
        text: str,
        message_id: str | None = None,
        *,
        approvals: tuple[PendingApproval, ...] = (),
    ) -> TurnOutcome:
        """Settle the turn. A text that is not a reply as the history holds it (a question, a
        note on open sub-tasks, the call limit) gets this turn's end as its id: a turn ends
        once, so no two texts share it."""
        s = self.state
        s.replay.finish()
        state, sub_state = _SETTLES_AS[kind]
        outcome = TurnOutcome(
            kind=kind,
            state=state,
            sub_state=sub_state,
            text=text,
            message_id=message_id or f"{s.ref.prefix}/end",
            history=tuple(s.history),
            plan=s.task.plan,
            sub_tasks=s.task.sub_tasks,
            model_calls=s.model_calls,
            usage=s.usage,
            approvals=approvals,
            artifacts=s.task.artifacts if s.published else None,
        )
        await self.host.end_turn(outcome)
        return outcome

    def over_budget(self) -> Awaitable[TurnOutcome] | None:
        """End the turn before a model call the budget has no room for. Only live: a resumed
        turn replays what its journal recorded, whatever the budget says now."""
        budget = self.budget
        if budget is None or not self.state.replay.live:
            return None
        reached = budget_reached(budget, self.state.used_with(self.used))
        if reached is None:
            return None
        fails, text = reached
        return self.end(OutcomeKind.BUDGET_EXCEEDED if fails else OutcomeKind.OVER_BUDGET, text)


_SETTLES_AS: Final[dict[OutcomeKind, tuple[TaskState, SubState | None]]] = {
    OutcomeKind.COMPLETED: (TaskState.COMPLETED, None),
    OutcomeKind.WAITING_FOR_MESSAGE: (TaskState.INPUT_REQUIRED, SubState.AWAITING_NEXT_MESSAGE),
    OutcomeKind.WAITING_FOR_ANSWER: (TaskState.INPUT_REQUIRED, SubState.AWAITING_ANSWER),
    OutcomeKind.WAITING_FOR_SUBTASKS: (TaskState.WORKING, None),
    OutcomeKind.MAX_MODEL_CALLS: (TaskState.INPUT_REQUIRED, SubState.AWAITING_NEXT_MESSAGE),
    OutcomeKind.OVER_BUDGET: (TaskState.INPUT_REQUIRED, SubState.AWAITING_BUDGET),
    OutcomeKind.BUDGET_EXCEEDED: (TaskState.FAILED, None),
    OutcomeKind.WAITING_FOR_APPROVAL: (TaskState.INPUT_REQUIRED, SubState.AWAITING_APPROVAL),
}
