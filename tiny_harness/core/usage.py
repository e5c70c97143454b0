"""What a task has used: model calls, tokens and tool calls, summed from its turn journals.

Every model call's usage is in the journal already (:class:`~tiny_harness.core.turn.ModelEntry`
and the summary request of a :class:`~tiny_harness.core.turn.CompactionEntry`), each entry
once under its id, so the sum over a task's records is exact however often a turn was resumed.
The operator writes it as ``status.usage`` with every write that ends a turn, and the sum of
its sub-tasks' totals as ``status.subTaskUsage`` with every write of their rows, so a parent's
total includes its children's at any depth.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from tiny_harness.core.task import TaskUsage
from tiny_harness.core.turn import CompactionEntry, ModelEntry, ToolEntry


class _Record(Protocol):
    @property
    def entries(self) -> Sequence[object]: ...


def usage_of(records: Iterable[_Record]) -> TaskUsage:
    """The usage in the task's turn records, each entry counted once."""
    seen: set[str] = set()
    calls = tokens_in = tokens_out = cached = tools = 0
    for record in records:
        for entry in record.entries:
            entry_id = getattr(entry, "id", None)
            if entry_id is None or entry_id in seen:
                continue
            seen.add(entry_id)
            if isinstance(entry, ModelEntry):
                calls += 1
                tokens_in += entry.response.usage.input_tokens
                tokens_out += entry.response.usage.output_tokens
                cached += entry.response.usage.cached_input_tokens
            elif isinstance(entry, CompactionEntry):
                calls += 1
                tokens_in += entry.usage.input_tokens
                tokens_out += entry.usage.output_tokens
                cached += entry.usage.cached_input_tokens
            elif isinstance(entry, ToolEntry):
                tools += 1
    return TaskUsage(
        model_calls=calls,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cached_input_tokens=cached,
        tool_calls=tools,
    )


def total(own: TaskUsage | None, sub_tasks: TaskUsage | None) -> TaskUsage:
    """A task's usage with its sub-tasks'."""
    return (own or TaskUsage()) + (sub_tasks or TaskUsage())
