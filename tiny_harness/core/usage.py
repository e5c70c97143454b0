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
from dataclasses import dataclass
from typing import Protocol

from pydantic import PrivateAttr

from tiny_harness.core.task import Budget, TaskUsage
from tiny_harness.core.turn import CompactionEntry, ModelEntry, ToolEntry


class _Record(Protocol):
    @property
    def entries(self) -> Sequence[object]: ...


@dataclass(frozen=True, slots=True)
class Spent:
    """What one journal entry used, under its id: a few numbers, so what a task used can be
    kept and summed without keeping its journal (the operator keeps these for every record,
    and the journals only of the tasks it works)."""

    id: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    tools: int = 0


def spent_in(entries: Iterable[object]) -> tuple[Spent, ...]:
    """What each entry that used something used (a model call, a compaction's summary
    request, a tool call)."""
    out: list[Spent] = []
    for entry in entries:
        entry_id = getattr(entry, "id", None)
        if entry_id is None:
            continue
        if isinstance(entry, ModelEntry):
            used = entry.response.usage
            out.append(
                Spent(entry_id, 1, used.input_tokens, used.output_tokens, used.cached_input_tokens)
            )
        elif isinstance(entry, CompactionEntry):
            used = entry.usage
            out.append(
                Spent(entry_id, 1, used.input_tokens, used.output_tokens, used.cached_input_tokens)
            )
        elif isinstance(entry, ToolEntry):
            out.append(Spent(entry_id, tools=1))
    return tuple(out)


def summed(spent: Iterable[Spent]) -> TaskUsage:
    """The usage of these entries, each id counted once (a resumed turn may journal an entry
    in a later chunk again)."""
    seen: set[str] = set()
    calls = tokens_in = tokens_out = cached = tools = 0
    for row in spent:
        if row.id in seen:
            continue
        seen.add(row.id)
        calls += row.calls
        tokens_in += row.input_tokens
        tokens_out += row.output_tokens
        cached += row.cached_input_tokens
        tools += row.tools
    return TaskUsage(
        model_calls=calls,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cached_input_tokens=cached,
        tool_calls=tools,
    )


def usage_of(records: Iterable[_Record]) -> TaskUsage:
    """The usage in the task's turn records, each entry counted once."""
    return summed(row for record in records for row in spent_in(record.entries))


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
