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
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Sequence
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from tiny_harness.core import approval_steps
from tiny_harness.core.agent import AgentChoice
from tiny_harness.core.approval import PendingApproval, distinct_call_ids
from tiny_harness.core.artifacts import ChunkRef, apply_chunk, local_entry_id, tool_files_chunk
from tiny_harness.core.compaction import (
    ContextWindows,
    compact,
    compacted_history,
    estimate_history_tokens,
    estimate_tokens,
    estimate_tools_tokens,
)
from tiny_harness.core.completion import CompletionOverride, CompletionVerdict, decide_completion
from tiny_harness.core.context import assemble_context, sub_task_note, system_prompt
from tiny_harness.core.errors import ConfigError
from tiny_harness.core.intrinsics import (
    INTRINSIC_NAMES,
    INTRINSIC_SPECS,
    SPAWN_SUBTASK,
    apply_intrinsic,
    record_spawn,
    spawn_subtask_spec,
    with_row,
)
from tiny_harness.core.llm import ChatMessage, LLMResponse, ModelAdapter, ToolCall, Usage
from tiny_harness.core.sizes import entry_text
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import Lifecycle, SubTaskRow, TaskUsage
from tiny_harness.core.tools import (
    InvalidToolCallError,
    ToolContext,
    ToolInvoker,
    ToolRegistrationError,
    ToolRegistry,
    TurnTools,
)
from tiny_harness.core.tracing import tool_result, tool_span
from tiny_harness.core.turn import (
    AwaitEntry,
    CompactionEntry,
    DecidedCall,
    DrainEntry,
    JournalEntry,
    JournalMismatchError,
    ModelEntry,
    OutcomeKind,
    TaskSettings,
    ToolEntry,
    TurnHost,
    TurnInput,
    TurnOutcome,
    TurnRef,
    max_calls_text,
)
from tiny_harness.core.usage import budget_reached


class LoopConfig(BaseModel):
    """The loop's settings, validated once when the loop is built."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_model_calls: int = Field(
        default=32, ge=1, description="Model calls one turn may make before it parks."
    )
    reserve_tokens: int = Field(
        default=8192, ge=0, description="Tokens of the window kept free for the model's answer."
    )
    keep_fraction: float = Field(
        default=0.5, gt=0, lt=1, description="Share of the history budget the kept tail may use."
    )
    summary_max_tokens: int = Field(
        default=2048, ge=1, description="The longest summary a compaction asks for."
    )


# -- the loop -------------------------------------------------------------------------------------


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


_E = TypeVar("_E", ModelEntry, ToolEntry, DrainEntry, CompactionEntry)


class _Skipped:
    """At an optional step the recorded turn did not take (it drained nothing, say)."""


SKIPPED: Final = _Skipped()


class _Replay:
    """The saved journal, consumed in order as the turn retraces its steps."""

    def __init__(self, ref: TurnRef, entries: Sequence[JournalEntry]) -> None:
        self._ref = ref
        self._entries = entries
        self._next = 0

    @property
    def live(self) -> bool:
        return self._next >= len(self._entries)

    def _mismatch(self, expected: str) -> JournalMismatchError:
        found = self._entries[self._next].id if not self.live else "the end of the journal"
        return JournalMismatchError(self._ref.prefix, self._next, expected, found)

    def step(self, entry_id: str, kind: type[_E]) -> _E | None:
        """The recorded entry of a step every path takes; None once the journal is used up."""
        if self.live:
            return None
        entry = self._entries[self._next]
        if entry.id != entry_id or not isinstance(entry, kind):
            raise self._mismatch(entry_id)
        self._next += 1
        return entry

    def optional(self, entry_id: str, kind: type[_E]) -> _E | _Skipped | None:
        """Like :meth:`step` for a step only recorded when it did something: SKIPPED while
        replaying past a point where nothing was recorded."""
        if self.live:
            return None
        entry = self._entries[self._next]
        if entry.id != entry_id:
            return SKIPPED
        if not isinstance(entry, kind):
            raise self._mismatch(entry_id)
        self._next += 1
        return entry

    def call(self, entry_id: str) -> ToolEntry | AwaitEntry | None:
        """The recorded outcome of a tool step: its result, or its park for approval."""
        if self.live:
            return None
        entry = self._entries[self._next]
        if entry.id != entry_id or not isinstance(entry, ToolEntry | AwaitEntry):
            raise self._mismatch(entry_id)
        self._next += 1
        return entry

    def finish(self) -> None:
        if not self.live:
            raise self._mismatch("the end of the turn")


class _Turn:
    """The state of one turn as it runs; rebuilt identically when a journal is replayed."""

    def __init__(
        self, loop: CoreLoop, host: TurnHost, turn: TurnInput, tools: TurnTools | None = None
    ) -> None:
        self.loop = loop
        self.invoker, self.tool_specs = loop.invoker, loop.tool_specs
        self.tools_tokens = loop.tools_tokens
        self.tool_notes: tuple[str, ...] = ()
        extra = tools.tools if tools is not None else ()
        if extra or turn.agents:
            # This turn's own tools (a task's tool servers) and remote agents, on top of the
            # loop's: only what the turn does live depends on them, never its replay.
            registry = loop.registry_for(turn.agents).extended(extra)
            self.invoker, self.tool_specs = ToolInvoker(registry), registry.specs
            self.tools_tokens = estimate_tools_tokens(self.tool_specs)
        if tools is not None:
            self.tool_notes = tools.notes
        self.host = host
        self.ref = turn.ref
        self.task = turn.task
        self.lifecycle = turn.task.effective_lifecycle
        self.history: list[ChatMessage] = list(turn.history)
        self.replay = _Replay(self.ref, turn.journal)
        self.model_calls = 0
        self.tool_index = 0
        self.drain_index = 0
        self.pending_reads: list[str] = []
        self.questions: list[str] = []
        self.gates = turn.gates
        self.decided = turn.decided
        self.reach = turn.reach
        self.awaiting: list[AwaitEntry] = []
        self.input_tokens = 0
        self.output_tokens = 0
        self.budget = turn.budget
        self.used = turn.used
        self.published = False
        #: The index already holds this turn's chunks: the turn's end was written, and this is
        #: its replay after a crash (the status is written at a turn's end and only then).
        self.indexed = any(
            ref.turn == turn.turn for row in turn.task.artifacts for ref in row.chunks
        )

    async def run(self) -> TurnOutcome:
        for decided in self.decided:
            await self.decided_step(decided)
        first = True
        while True:
            await self.drain_point()
            if first and self.lifecycle is Lifecycle.CONVERSATION and not self.has_input():
                # Nothing to answer (a conversation started without a message): no model call.
                return await self.end(OutcomeKind.WAITING_FOR_MESSAGE, self.last_reply())
            first = False
            if self.model_calls >= self.loop.config.max_model_calls:
                return await self.end(
                    OutcomeKind.MAX_MODEL_CALLS, max_calls_text(self.loop.config.max_model_calls)
                )
            over = self.over_budget()
            if over is not None:
                return await over
            response = await self.model_step()
            if response.tool_calls:
                ids = distinct_call_ids([c.id for c in response.tool_calls])
                for call, call_id in zip(response.tool_calls, ids, strict=True):
                    await self.tool_step(call, call_id)
                if self.awaiting:
                    return await self.park_for_approval()
                if self.questions:
                    return await self.end(
                        OutcomeKind.WAITING_FOR_ANSWER, "\n\n".join(self.questions)
                    )
                continue
            if await self.drain_point():
                continue  # something arrived during the last call: the model sees it first
            outcome = await self.settle(response.text)
            if outcome is not None:
                return outcome

    # -- steps --

    async def drain_point(self) -> bool:
        entry_id = self.ref.drain(self.drain_index)
        self.drain_index += 1
        entry = self.replay.optional(entry_id, DrainEntry)
        if isinstance(entry, _Skipped):
            return False
        if entry is None:
            messages = tuple(await self.host.drain())
            if not messages:
                return False
            entry = DrainEntry(id=entry_id, messages=messages)
            await self.host.checkpoint(entry)
        for message in entry.messages:
            if message.sub_task is None:
                self.history.append(message.said())
                continue
            row = message.sub_task
            self.put_row(row)
            self.history.append(sub_task_note(row, message.content))
            if row.result_unread:
                self.pending_reads.append(row.task_id)
        return True

    async def model_step(self) -> LLMResponse:
        index = self.model_calls
        compaction = self.replay.optional(self.ref.compaction(index), CompactionEntry)
        if isinstance(compaction, CompactionEntry):
            self.history = list(
                compacted_history(self.history, compaction.replaced, compaction.summary)
            )
            self.count(compaction.usage)
        entry = self.replay.step(self.ref.model(index), ModelEntry)
        if entry is None:
            settings = await self.host.settings()
            system = "\n\n".join(
                (system_prompt(self.task, task_id=self.ref.task_id), *self.tool_notes)
            )
            if compaction is None:
                await self.compact_if_needed(index, settings, system)
            request = assemble_context(
                self.task,
                task_id=self.ref.task_id,
                history=self.history,
                tools=self.tool_specs,
                settings=settings,
                system=system,
            )
            response = await self.loop.model.complete(request)
            entry = ModelEntry(
                id=self.ref.model(index),
                response=response,
                read_sub_tasks=tuple(self.pending_reads),
            )
            await self.host.checkpoint(entry)
        response = entry.response
        self.history.append(
            ChatMessage(role="assistant", content=response.text, tool_calls=response.tool_calls)
        )
        for task_id in entry.read_sub_tasks:
            for row in self.task.sub_tasks:
                if row.task_id == task_id:
                    self.put_row(row.model_copy(update={"result_unread": False}))
        self.pending_reads.clear()
        self.model_calls += 1
        self.count(response.usage)
        return response

    async def compact_if_needed(self, index: int, settings: TaskSettings, system: str) -> None:
        config = self.loop.config
        model = settings.model or self.loop.model.default_model
        window = self.loop.windows.context_window(model)
        budget = window - config.reserve_tokens
        if budget <= 0:
            raise ConfigError(
                "reserve_tokens",
                f"the reserve ({config.reserve_tokens} tokens) must be smaller than the context "
                f"window of {model} ({window} tokens)",
            )
        history_budget = budget - estimate_tokens(system) - self.tools_tokens
        if estimate_history_tokens(self.history) <= history_budget:
            return
        result = await compact(
            self.history,
            adapter=self.loop.model,
            history_budget=max(history_budget, 1),
            summary_budget=budget,
            model=settings.model,
            reasoning_effort=settings.reasoning_effort,
            keep_fraction=config.keep_fraction,
            summary_max_tokens=config.summary_max_tokens,
        )
        if result is None:
            return  # only the last exchange is left; the model call goes ahead as it is
        entry = CompactionEntry(
            id=self.ref.compaction(index),
            summary=result.summary,
            replaced=result.replaced,
            usage=result.usage,
        )
        await self.host.checkpoint(entry)
        self.history = list(compacted_history(self.history, entry.replaced, entry.summary))
        self.count(entry.usage)

    async def tool_step(self, call: ToolCall, call_id: str) -> None:
        """Run (or park) one call of the model's answer; ``call_id`` is its id in a park,
        unique among the answer's calls whatever ids the model gave them."""
        entry_id = self.ref.tool(self.tool_index, call.id)
        self.tool_index += 1
        entry = self.replay.call(entry_id)
        if entry is None:
            entry = self.gate(call, entry_id, call_id) or await self.run_call(call, entry_id)
            await self.host.checkpoint(entry)
        if isinstance(entry, AwaitEntry):
            self.awaiting.append(entry)  # no result yet: the next turn gives it, decided
            return
        self.took(entry)

    def gate(self, call: ToolCall, entry_id: str, call_id: str) -> AwaitEntry | ToolEntry | None:
        return approval_steps.gate(
            self.gates,
            self.invoker,
            call,
            entry_id,
            self.awaiting,
            turn=self.ref.turn,
            call_id=call_id,
        )

    async def decided_step(self, decided: DecidedCall) -> None:
        """A call an earlier turn parked, now decided: run it as approved (with the edited
        arguments, if any), or give the model the rejection as its result. Journaled as any
        tool step, so a call approved once runs once, however often this turn is resumed."""
        entry_id = self.ref.tool(self.tool_index, decided.call_id)
        self.tool_index += 1
        entry = self.replay.step(entry_id, ToolEntry)
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
        self.history.append(entry.message())
        if entry.plan is not None:
            self.task = self.task.model_copy(update={"plan": entry.plan})
        if entry.spawned is not None:
            self.put_row(entry.spawned)
        if entry.question is not None:
            self.questions.append(entry.question)
        if entry.artifact is not None:
            # Journaled in this entry, so published once: a replay applies the same chunk at
            # the same place, unless the index is already the one this turn's end wrote.
            self.published = True
            if not self.indexed:
                ref = ChunkRef(
                    turn=self.ref.turn, entry=local_entry_id(entry.id), size=entry.artifact.size
                )
                artifacts = apply_chunk(self.task.artifacts, entry.artifact, ref)
                self.task = self.task.model_copy(update={"artifacts": artifacts})

    async def run_call(self, call: ToolCall, entry_id: str) -> ToolEntry:
        with tool_span(call, intrinsic=call.name in INTRINSIC_NAMES) as span:
            result = await self.call_tool(call, entry_id)
            tool_result(span, is_error=result.is_error, content=result.content)
            return result

    async def call_tool(self, call: ToolCall, entry_id: str) -> ToolEntry:
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
            context = ToolContext(task_id=self.ref.task_id, call_id=entry_id)
            result = await self.invoker.run(call, args, context)
            if result.files and not result.is_error:
                chunk, kept = tool_files_chunk(
                    self.task.artifacts, call.name, call.id, result.files
                )
                return entry(f"{result.content}\n\n{kept}", artifact=chunk)
            return entry(result.content, is_error=result.is_error)
        applied = apply_intrinsic(
            call.name, args, self.task, task_id=self.ref.task_id, step_id=entry_id, reach=self.reach
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
        plan, row, content = record_spawn(self.task, applied.spawn, child_id)
        return entry(content, plan=plan if plan is not self.task.plan else None, spawned=row)

    # -- the end of the turn --

    async def settle(self, text: str) -> TurnOutcome | None:
        """The turn's end once the model asks for nothing more; None means one more call."""
        # The text is the last model call's reply, which the history holds under that call's
        # entry id: the status message carries the same id.
        reply_id = self.ref.model(self.model_calls - 1)
        if self.lifecycle is Lifecycle.CONVERSATION:
            return await self.end(OutcomeKind.WAITING_FOR_MESSAGE, text, reply_id)
        decision = decide_completion(self.task, override=self.loop.completion_override)
        if decision.verdict is CompletionVerdict.COMPLETE:
            return await self.end(OutcomeKind.COMPLETED, text, reply_id)
        if decision.verdict is CompletionVerdict.READ_RESULTS:
            for row in self.task.sub_tasks:
                if row.task_id in decision.unread:
                    self.history.append(sub_task_note(row, None))
                    self.pending_reads.append(row.task_id)
            return None
        waiting = f"{text}\n\n({decision.reason})" if text else decision.reason
        return await self.end(OutcomeKind.WAITING_FOR_SUBTASKS, waiting)

    async def park_for_approval(self) -> TurnOutcome:
        """End the turn with its parked calls waiting for decisions; the calls of the same
        response that needed none have run, and their results are in the history."""
        text, pending = approval_steps.parked(self.awaiting, self.ref.turn, self.questions)
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
        self.replay.finish()
        state, sub_state = _SETTLES_AS[kind]
        outcome = TurnOutcome(
            kind=kind,
            state=state,
            sub_state=sub_state,
            text=text,
            message_id=message_id or f"{self.ref.prefix}/end",
            history=tuple(self.history),
            plan=self.task.plan,
            sub_tasks=self.task.sub_tasks,
            model_calls=self.model_calls,
            usage=Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens),
            approvals=approvals,
            artifacts=self.task.artifacts if self.published else None,
        )
        await self.host.end_turn(outcome)
        return outcome

    # -- helpers --

    def has_input(self) -> bool:
        if not self.history:
            return False
        last = self.history[-1]
        return not (last.role == "assistant" and not last.tool_calls)

    def last_reply(self) -> str:
        for message in reversed(self.history):
            if message.role == "assistant":
                return message.content
        return ""

    def over_budget(self) -> Awaitable[TurnOutcome] | None:
        """End the turn before a model call the budget has no room for. Only live: a resumed
        turn replays what its journal recorded, whatever the budget says now."""
        budget = self.budget
        if budget is None or not self.replay.live:
            return None
        used = self.used + TaskUsage(
            model_calls=self.model_calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
        )
        reached = budget_reached(budget, used)
        if reached is None:
            return None
        fails, text = reached
        return self.end(OutcomeKind.BUDGET_EXCEEDED if fails else OutcomeKind.OVER_BUDGET, text)

    def put_row(self, row: SubTaskRow) -> None:
        self.task = with_row(self.task, row)

    def count(self, usage: Usage) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens


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
