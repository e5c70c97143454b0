"""A turn's model calls: the context each one is given, compacted first when it is over
budget, and the answer journaled before the turn acts on it.

A model call is a step like any other (:mod:`tiny_harness.core.turn`): live, it asks the host
for the task's settings, builds the request (:func:`~tiny_harness.core.prompt.assemble_context`)
and checkpoints the answer as a :class:`~tiny_harness.core.turn.ModelEntry`; replayed, it takes
the answer from the journal and calls nothing. A compaction before it is journaled the same way
(a :class:`~tiny_harness.core.turn.CompactionEntry`), so a resumed turn sees the history it had.
"""

from __future__ import annotations

from collections.abc import Sequence

from tiny_harness.core.compaction import (
    ContextWindows,
    compact,
    compacted_history,
    estimate_history_tokens,
    estimate_tokens,
)
from tiny_harness.core.errors import ConfigError
from tiny_harness.core.llm import ChatMessage, LLMResponse, ModelAdapter, ToolSpec
from tiny_harness.core.loop_config import LoopConfig
from tiny_harness.core.prompt import assemble_context, system_prompt
from tiny_harness.core.turn import CompactionEntry, ModelEntry, TaskSettings, TurnHost
from tiny_harness.core.turn_state import TurnState


class ModelSteps:
    """The model calls of one turn, with the tools that turn offers."""

    def __init__(
        self,
        state: TurnState,
        host: TurnHost,
        *,
        model: ModelAdapter,
        windows: ContextWindows,
        config: LoopConfig,
        tool_specs: Sequence[ToolSpec],
        tools_tokens: int,
        tool_notes: tuple[str, ...],
    ) -> None:
        self.state = state
        self.host = host
        self.model = model
        self.windows = windows
        self.config = config
        self.tool_specs = tool_specs
        self.tools_tokens = tools_tokens
        self.tool_notes = tool_notes

    async def call(self) -> LLMResponse:
        """The turn's next model call (compacting the history first if it must), replayed
        from the journal when it was recorded."""
        s = self.state
        index = s.model_calls
        compaction = s.replay.optional(s.ref.compaction(index), CompactionEntry)
        if isinstance(compaction, CompactionEntry):
            s.history = list(compacted_history(s.history, compaction.replaced, compaction.summary))
            s.count(compaction.usage)
        entry = s.replay.step(s.ref.model(index), ModelEntry)
        if entry is None:
            settings = await self.host.settings()
            system = "\n\n".join((system_prompt(s.task, task_id=s.ref.task_id), *self.tool_notes))
            if compaction is None:
                await self.compact_if_needed(index, settings, system)
            request = assemble_context(
                s.task,
                task_id=s.ref.task_id,
                history=s.history,
                tools=self.tool_specs,
                settings=settings,
                system=system,
            )
            response = await self.model.complete(request)
            entry = ModelEntry(
                id=s.ref.model(index),
                response=response,
                read_sub_tasks=tuple(s.pending_reads),
            )
            await self.host.checkpoint(entry)
        response = entry.response
        s.history.append(
            ChatMessage(role="assistant", content=response.text, tool_calls=response.tool_calls)
        )
        for task_id in entry.read_sub_tasks:
            for row in s.task.sub_tasks:
                if row.task_id == task_id:
                    s.put_row(row.model_copy(update={"result_unread": False}))
        s.pending_reads.clear()
        s.model_calls += 1
        s.count(response.usage)
        return response

    async def compact_if_needed(self, index: int, settings: TaskSettings, system: str) -> None:
        s = self.state
        config = self.config
        model = settings.model or self.model.default_model
        window = self.windows.context_window(model)
        budget = window - config.reserve_tokens
        if budget <= 0:
            raise ConfigError(
                "reserve_tokens",
                f"the reserve ({config.reserve_tokens} tokens) must be smaller than the context "
                f"window of {model} ({window} tokens)",
            )
        history_budget = budget - estimate_tokens(system) - self.tools_tokens
        if estimate_history_tokens(s.history) <= history_budget:
            return
        result = await compact(
            s.history,
            adapter=self.model,
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
            id=s.ref.compaction(index),
            summary=result.summary,
            replaced=result.replaced,
            usage=result.usage,
        )
        await self.host.checkpoint(entry)
        s.history = list(compacted_history(s.history, entry.replaced, entry.summary))
        s.count(entry.usage)
