"""The built-in commands: ``/model``, ``/effort``, ``/sub-task``, ``/status`` and ``/budget``.

Each is a pure function of the ``command.invoked.in`` context and the operator's
:class:`~tiny_harness.core.catalog.ModelCatalog`: no I/O, no model call, no state change. Each
validates its own arguments with a fixed rule (an exact match in the selectable models, a closed
set of efforts, a bounded goal text) and returns intents for the operator to apply.

Arguments are opaque text. They are never formatted into anything but a plain reply, never
reach a shell or a path, and a reply that repeats one shows it escaped (``repr``), so control
characters cannot reach a terminal.
"""

from __future__ import annotations

import unicodedata
from functools import partial
from typing import Final

from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.command_spec import CommandSpec
from tiny_harness.core.commands.context import CommandInvokedIn, CommandResult, SpawnRequest
from tiny_harness.core.commands.registry import (
    DEFAULT_BODY_PRIORITY,
    CommandHandler,
    CommandRegistry,
)
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import BUDGET_MAX, EFFORTS, TEXT_MAX, Budget
from tiny_harness.core.turn import TaskSettings

MODEL: Final = CommandSpec(
    name="model",
    description="Show the model, or choose one of the selectable models",
    argument_hint="[<model>]",
)
EFFORT: Final = CommandSpec(
    name="effort",
    description="Show the reasoning effort, or set it",
    argument_hint="[low|medium|high]",
)
SUB_TASK: Final = CommandSpec(
    name="sub-task",
    description="Start a sub-task you can talk to, with this goal",
    argument_hint="<description>",
)
STATUS: Final = CommandSpec(
    name="status", description="Show the task's state, settings, plan progress and sub-tasks"
)
BUDGET: Final = CommandSpec(
    name="budget",
    description="Show the budget and what is used, or set a limit (reporters and admins)",
    argument_hint="[tokens <n> | calls <n>]",
)

BUILTIN_SPECS: Final = (MODEL, EFFORT, SUB_TASK, STATUS, BUDGET)

#: The longest argument a reply repeats; the rest is cut, so a reply stays one short line.
_SHOWN_MAX: Final = 64


def register_builtins(
    registry: CommandRegistry, catalog: ModelCatalog, *, priority: int = DEFAULT_BODY_PRIORITY
) -> None:
    """Register the built-ins on ``registry``, answered from ``catalog``."""
    builtins: tuple[tuple[CommandSpec, CommandHandler], ...] = (
        (MODEL, partial(model_command, catalog=catalog)),
        (EFFORT, partial(effort_command, catalog=catalog)),
        (SUB_TASK, sub_task_command),
        (STATUS, partial(status_command, catalog=catalog)),
        (BUDGET, budget_command),
    )
    for spec, handler in builtins:
        registry.register(spec, handler, priority=priority, hook=f"builtin/{spec.name}")


def model_command(ctx: CommandInvokedIn, *, catalog: ModelCatalog) -> CommandResult:
    """``/model``: the current model and the choices; ``/model <name>``: choose one."""
    current = ctx.task.settings
    choices = ", ".join(catalog.selectable)
    wanted = ctx.arguments.strip()
    if not wanted:
        model = current.model or catalog.default
        default = " (the default)" if current.model is None else ""
        return CommandResult(reply=f"model: {model}{default}\nselectable: {choices}")
    if not catalog.is_selectable(wanted):
        return CommandResult(
            reply=f"refused: model {shown(wanted)} is not selectable; choose one of: {choices}"
        )
    return CommandResult(
        reply=f"model set to {wanted}",
        settings=TaskSettings(model=wanted, reasoning_effort=current.reasoning_effort),
    )


def effort_command(ctx: CommandInvokedIn, *, catalog: ModelCatalog) -> CommandResult:
    """``/effort``: the current effort and the choices; ``/effort <v>``: set it."""
    current = ctx.task.settings
    choices = ", ".join(EFFORTS)
    wanted = ctx.arguments.strip()
    if not wanted:
        return CommandResult(reply=f"effort: {effort_text(current, catalog)}\nchoices: {choices}")
    for effort in EFFORTS:
        if wanted == effort:
            return CommandResult(
                reply=f"effort set to {effort}",
                settings=TaskSettings(model=current.model, reasoning_effort=effort),
            )
    return CommandResult(
        reply=f"refused: effort {shown(wanted)} is not one of: {choices}",
    )


SUB_TASK_USAGE: Final = "usage: /sub-task <description>: what the sub-task should achieve"


def sub_task_command(ctx: CommandInvokedIn) -> CommandResult:
    """``/sub-task <description>``: ask the operator to start a conversation sub-task."""
    goal = ctx.arguments.strip()
    if not goal:
        return CommandResult(reply=SUB_TASK_USAGE)
    if len(goal) > TEXT_MAX:
        return CommandResult(reply=f"refused: the description is longer than {TEXT_MAX} characters")
    if has_control_characters(goal):
        return CommandResult(
            reply="refused: the description contains control characters; send plain text"
        )
    return CommandResult(reply="starting a sub-task", spawn=SpawnRequest(goal=goal))


BUDGET_USAGE: Final = "usage: /budget, /budget tokens <n> or /budget calls <n> (n a whole number)"
#: The /budget argument that names each limit, and the budget field it sets.
_LIMITS: Final = {"tokens": "max_tokens", "calls": "max_model_calls"}


def budget_command(ctx: CommandInvokedIn) -> CommandResult:
    """``/budget``: the budget and what the task has used; ``/budget tokens <n>`` or
    ``/budget calls <n>``: set that limit (the other one and ``on_exceeded`` are kept)."""
    task = ctx.task
    used = task.usage + task.sub_task_usage if task.sub_task_usage else task.usage
    current = task.budget
    words = ctx.arguments.split()
    if not words:
        shown_budget = current.text() if current is not None else "none (no limit)"
        return CommandResult(reply=f"budget: {shown_budget}\nused: {used.text()}")
    malformed = len(words) != 2 or words[0] not in _LIMITS or not words[1].isdigit()
    if malformed or not 1 <= int(words[1]) <= BUDGET_MAX:
        return CommandResult(reply=f"refused: {shown(ctx.arguments.strip())}; {BUDGET_USAGE}")
    value = int(words[1])
    budget = (current or Budget()).model_copy(update={_LIMITS[words[0]]: value})
    return CommandResult(reply=f"budget set: {budget.text()}", budget=budget)


def status_command(ctx: CommandInvokedIn, *, catalog: ModelCatalog) -> CommandResult:
    """``/status``: the task's id, name, state, settings, plan progress, sub-tasks and what it
    has used (model calls, tokens, tool calls; with its sub-tasks' when it has any)."""
    task = ctx.task
    title = f"task {task.id}" + (f" ({task.name})" if task.name else "")
    state = state_text(task.state) + (f" ({task.sub_state})" if task.sub_state else "")
    model = task.settings.model or catalog.default
    lines = [
        title,
        f"state: {state}",
        f"model: {model}" + (" (the default)" if task.settings.model is None else ""),
        f"effort: {effort_text(task.settings, catalog)}",
        f"plan: {task.steps_done}/{task.steps_total} steps done"
        if task.steps_total
        else "plan: none",
    ]
    if task.children:
        lines.append("sub-tasks:")
        lines.extend(
            f"  {c.task_id}: {state_text(c.state)}" + (f" ({c.sub_state})" if c.sub_state else "")
            for c in task.children
        )
    else:
        lines.append("sub-tasks: none")
    lines.append(f"usage: {task.usage.text()}")
    if task.sub_task_usage is not None:
        lines.append(f"usage with sub-tasks: {(task.usage + task.sub_task_usage).text()}")
    return CommandResult(reply="\n".join(lines))


# -- helpers --------------------------------------------------------------------------------------


def effort_text(settings: TaskSettings, catalog: ModelCatalog) -> str:
    if settings.reasoning_effort is not None:
        return settings.reasoning_effort
    if catalog.default_effort is not None:
        return f"{catalog.default_effort} (the default)"
    return "provider default"


def state_text(state: TaskState) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` as ``input-required``."""
    return state.value.removeprefix("TASK_STATE_").lower().replace("_", "-")


def shown(argument: str) -> str:
    """An argument as a reply may repeat it: quoted, escaped, and cut to a short length."""
    cut = argument[:_SHOWN_MAX] + ("..." if len(argument) > _SHOWN_MAX else "")
    return repr(cut)


def has_control_characters(text: str) -> bool:
    """Whether ``text`` holds a control character other than tab and newline (an escape
    sequence, a NUL, a carriage return that could hide text in a terminal)."""
    return any(unicodedata.category(ch) == "Cc" and ch not in "\t\n" for ch in text)
