"""The built-in role check: who may run which command, as a ``command.invoked.pre`` executor.

It refuses any command from a sender with no role on the task, and refuses a watcher the commands
that change something: ``/model <x>``, ``/effort <x>`` and ``/sub-task``. Being a hook, it runs
whoever implements the command (a plugin that replaces ``/model`` is checked the same way), and
an operator can tighten the rule by adding a pre executor of their own. It cannot be loosened:
:func:`~tiny_harness.core.commands.run.run_command` also drops any intent a watcher's command
returns, whatever the hooks said.
"""

from __future__ import annotations

from typing import Final

from tiny_harness.core.commands.context import CommandInvokedPre
from tiny_harness.core.commands.errors import HookAbort
from tiny_harness.core.task import Role

#: Runs before ordinary pre executors (DEFAULT_PRIORITY is 500), so a refusal comes first.
ROLE_CHECK_PRIORITY: Final = 100

#: What a watcher may not do with each restricted command.
_WATCHER_REFUSALS: Final = {
    "model": "change the model",
    "effort": "change the reasoning effort",
    "sub-task": "start a sub-task",
}
#: Of those, the ones a watcher may still run without arguments (to read the current value).
_READABLE_WITHOUT_ARGUMENTS: Final = frozenset({"model", "effort"})


def watcher_may_run(name: str, arguments: str) -> bool:
    """Whether a watcher may run ``/<name> <arguments>`` (any command that changes nothing)."""
    if name not in _WATCHER_REFUSALS:
        return True
    return name in _READABLE_WITHOUT_ARGUMENTS and not arguments.strip()


#: Who may change a task's budget: those who asked for the work or run the task space, not
#: the assignee whose spending it bounds.
BUDGET_ROLES: Final = frozenset({Role.REPORTER, Role.ADMIN})


def role_check(ctx: CommandInvokedPre) -> None:
    """Refuse a sender with no role, a watcher's state-changing command, and a budget change
    from anyone but a reporter or an admin."""
    if ctx.sender_role is None:
        raise HookAbort(f"{ctx.sender} is not a participant of this task")
    if ctx.name == "budget" and ctx.arguments.strip() and ctx.sender_role not in BUDGET_ROLES:
        raise HookAbort(
            f"{ctx.sender} is {ctx.sender_role.value} and may not change the budget; "
            "ask a reporter or an admin of the task"
        )
    if ctx.sender_role is Role.WATCHER and not watcher_may_run(ctx.name, ctx.arguments):
        raise HookAbort(f"{ctx.sender} is a watcher and may not {_WATCHER_REFUSALS[ctx.name]}")
