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

from pydantic import PrivateAttr

from tiny_harness.core.task import Budget, TaskUsage
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


def budget_reached(budget: Budget, used: TaskUsage) -> tuple[bool, str] | None:
    """Whether ``used`` has reached ``budget`` and the task fails for it (else it waits),
    with what its participants read; None while room is left."""
    reached = budget.exceeded_by(used)
    if reached is None:
        return None
    if budget.on_exceeded == "fail":
        return True, (
            f"the task used its budget ({reached}) and its budget says to fail; give a new "
            "task a larger spec.budget"
        )
    return False, (
        f"This task has used its budget ({reached}) and waits: a reporter or an admin "
        "raises it with /budget tokens <n> or /budget calls <n>."
    )


class TreeBudget(Budget):
    """A task's budget with its ancestors' room folded in (:func:`tree_budget`): reached, it
    says whose budget it is, so the participant raises the right one."""

    _owner: str = PrivateAttr(default="")
    _owner_budget: Budget | None = PrivateAttr(default=None)

    def exceeded_by(self, used: TaskUsage) -> str | None:
        reached = super().exceeded_by(used)
        if reached is None or self._owner_budget is None:
            return reached
        return (
            f"the budget of task {self._owner}, which its sub-tasks share: "
            f"{self._owner_budget.text()}"
        )


def tree_budget(
    own: Budget | None, used: TaskUsage, above: Sequence[tuple[str, Budget | None, TaskUsage]]
) -> Budget | None:
    """The budget a task's turn works within, in the task's own terms: the least room left
    by its own budget (against ``used``, its total) and by each ancestor's (against that
    ancestor's tree total, this task's usage included), so a budget bounds the whole tree below
    it. None when nothing bounds it. The ``on_exceeded`` is that of the budget that binds.

    The ancestors' totals are read from the tree's journals as this replica has them: sub-tasks
    at work at the same time may together pass an ancestor's budget by what their running
    turns spend after their turns began, never more (each turn is bounded by
    ``max_model_calls``).
    """
    calls: tuple[int, str, Budget] | None = None
    tokens: tuple[int, str, Budget] | None = None
    for name, budget, spent in (("", own, used), *above):
        if budget is None:
            continue
        if budget.max_model_calls is not None:
            left = budget.max_model_calls - spent.model_calls
            if calls is None or left < calls[0]:
                calls = (left, name, budget)
        if budget.max_tokens is not None:
            left = budget.max_tokens - (spent.input_tokens + spent.output_tokens)
            if tokens is None or left < tokens[0]:
                tokens = (left, name, budget)
    bounds = [b for b in (calls, tokens) if b is not None]
    if not bounds:
        return None
    _, owner, binding = next((b for b in bounds if b[0] <= 0), bounds[0])
    # Built without validation: the room may be none (a maximum of what is used already),
    # which is exactly a budget reached; a spec could never say so.
    held = TreeBudget.model_construct(
        max_model_calls=used.model_calls + max(calls[0], 0) if calls is not None else None,
        max_tokens=used.input_tokens + used.output_tokens + max(tokens[0], 0)
        if tokens is not None
        else None,
        on_exceeded=binding.on_exceeded,
    )
    if owner:
        held._owner = owner
        held._owner_budget = binding
    return held
