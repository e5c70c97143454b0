"""The built-in role check: who may run which command, as a ``command.invoked.pre`` executor.

It refuses any command from a sender with no role on the task, and a command that would make a
change the authority table (:mod:`tiny_harness.core.authority`) does not give the sender's role:
``/model <x>``, ``/effort <x>`` and ``/sub-task`` (assignee, reporter or admin), ``/budget <x>``
(reporter or admin, never the assignee the budget bounds), in the same words the admission
policy uses for the same change written into the spec. Being a hook, it runs whoever implements
the command (a plugin that replaces ``/model`` is checked the same way), and an operator can
tighten the rule by adding a pre executor of their own. It cannot be loosened:
:func:`~tiny_harness.core.commands.run.run_command` also drops any intent the table does not
give the sender, whatever the hooks said.
"""

from __future__ import annotations

from typing import Final

from tiny_harness.core.authority import BUDGET, EFFORT, MODEL, SUB_TASKS, Authority, refusal
from tiny_harness.core.commands.command_errors import HookAbort
from tiny_harness.core.commands.context import CommandInvokedPre

#: Runs before ordinary pre executors (DEFAULT_PRIORITY is 500), so a refusal comes first.
ROLE_CHECK_PRIORITY: Final = 100

#: The change each built-in command makes when given arguments (without, it only shows).
COMMAND_CHANGES: Final[dict[str, Authority]] = {
    "model": MODEL,
    "effort": EFFORT,
    "budget": BUDGET,
    "sub-task": SUB_TASKS,
}
#: Commands that change something even without arguments (``/sub-task`` alone is its usage,
#: refused to whoever may not start one, as it always was).
_CHANGES_WITHOUT_ARGUMENTS: Final = frozenset({"sub-task"})


def change_of(name: str, arguments: str) -> Authority | None:
    """The change ``/<name> <arguments>`` asks for, or None for a command that only reads."""
    row = COMMAND_CHANGES.get(name)
    if row is None or (not arguments.strip() and name not in _CHANGES_WITHOUT_ARGUMENTS):
        return None
    return row


def role_check(ctx: CommandInvokedPre) -> None:
    """Refuse a sender with no role, and a change the authority table does not give them."""
    if ctx.sender_role is None:
        raise HookAbort(f"{ctx.sender} is not a participant of this task")
    row = change_of(ctx.name, ctx.arguments)
    refused = refusal(row, ctx.sender, ctx.sender_role, ctx.task.id) if row else None
    if refused is not None:
        raise HookAbort(refused)
