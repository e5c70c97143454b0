"""Running one command: the ``command.invoked`` chains, and the result the operator applies.

The operator calls :func:`run_command` for each message :func:`~.parse.parse_command`
recognises, instead of handing the message to the model. Whatever goes wrong, it returns a
:class:`~.context.CommandResult` and never raises: a refusal (``refused: <reason>``) or a failure
(``/<name> failed: <message>``) is a reply with no intents, so the task's settings and children
stay as they were. Failures are logged with the command's name and the task id, never with its
arguments, which may hold anything a participant typed.

Before returning, it applies the fixed rules no hook can loosen: a non-member's command yields
no intents, nor does one whose intents make a change the authority table
(:mod:`tiny_harness.core.authority`) does not give the sender's role (a watcher changes
nothing; only a reporter or an admin changes the budget); and when given the catalog, a command
may not switch the task to a model that is not selectable.
"""

from __future__ import annotations

import logging

from tiny_harness.core.authority import BUDGET, EFFORT, MODEL, SUB_TASKS, Authority, refusal
from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.commands.command_errors import CommandError, HookAbort
from tiny_harness.core.commands.context import (
    CommandInvokedIn,
    CommandInvokedPost,
    CommandInvokedPre,
    CommandResult,
    TaskSnapshot,
)
from tiny_harness.core.commands.hooks import HookRunner, promote
from tiny_harness.core.commands.parse import CommandCall
from tiny_harness.core.commands.registry import (
    COMMAND_INVOKED_IN,
    COMMAND_INVOKED_POST,
    COMMAND_INVOKED_PRE,
)
from tiny_harness.core.task import Role

log = logging.getLogger(__name__)


async def run_command(
    runner: HookRunner,
    call: CommandCall,
    *,
    sender: str,
    role: Role | None,
    snapshot: TaskSnapshot,
    catalog: ModelCatalog | None = None,
) -> CommandResult:
    """Run ``call`` for ``sender`` (whose role on the task is ``role``) on ``snapshot``.

    ``runner`` must be frozen (see :meth:`CommandRegistry.freeze`), which is when the command
    bodies are installed; an unfrozen runner is a :class:`CommandError`, a programming mistake.
    Pass ``catalog`` to refuse a result that picks an unselectable model (a plugin's body, say).
    """
    if not runner.frozen:
        raise CommandError(
            "run_command needs a frozen runner: call CommandRegistry.freeze() at start-up"
        )
    name = call.name
    pre = CommandInvokedPre(
        name=name, arguments=call.arguments, sender=sender, sender_role=role, task=snapshot
    )
    try:
        pre = await runner.run_chain(COMMAND_INVOKED_PRE, pre)
        within = await runner.run_chain(COMMAND_INVOKED_IN, promote(pre, CommandInvokedIn))
        post = await runner.run_chain(COMMAND_INVOKED_POST, promote(within, CommandInvokedPost))
    except HookAbort as abort:
        _log_outcome(name, snapshot.id, "refused")
        return CommandResult(reply=f"refused: {abort.reason}")
    except Exception as exc:
        # Logged without the arguments and without the traceback's locals: only the name, the
        # task and what broke.
        log.error(
            "command /%s on task %s failed: %s: %s",
            name,
            snapshot.id,
            type(exc).__name__,
            exc,
            extra={"command": name, "task_id": snapshot.id, "outcome": "failed"},
        )
        return CommandResult(reply=f"/{name} failed: {str(exc) or type(exc).__name__}")
    result = post.result
    if result is None:
        _log_outcome(name, snapshot.id, "no-handler")
        return CommandResult(reply=f"command /{name} has no handler")
    refusal = _fixed_rules(result, sender=sender, role=role, snapshot=snapshot, catalog=catalog)
    if refusal is not None:
        _log_outcome(name, snapshot.id, "refused")
        return CommandResult(reply=f"refused: {refusal}")
    _log_outcome(name, snapshot.id, "ok")
    return result


def _fixed_rules(
    result: CommandResult,
    *,
    sender: str,
    role: Role | None,
    snapshot: TaskSnapshot,
    catalog: ModelCatalog | None,
) -> str | None:
    """Why ``result``'s intents may not be applied, or None when they may."""
    if not result.has_intents:
        return None
    if role is None:
        return f"{sender} is not a participant of this task"
    for row in changes_of(result, snapshot):
        refused = refusal(row, sender, role, snapshot.id)
        if refused is not None:
            return refused
    settings = result.settings
    if (
        catalog is not None
        and settings is not None
        and settings.model is not None
        and settings.model != snapshot.settings.model
        and not catalog.is_selectable(settings.model)
    ):
        return f"model {settings.model!r} is not selectable; choose one of: " + ", ".join(
            catalog.selectable
        )
    return None


def changes_of(result: CommandResult, snapshot: TaskSnapshot) -> tuple[Authority, ...]:
    """The changes of the authority table ``result``'s intents would make to ``snapshot``."""
    changes: list[Authority] = []
    settings = result.settings
    if settings is not None and settings.model != snapshot.settings.model:
        changes.append(MODEL)
    if settings is not None and settings.reasoning_effort != snapshot.settings.reasoning_effort:
        changes.append(EFFORT)
    if result.budget is not None and result.budget != snapshot.budget:
        changes.append(BUDGET)
    if result.spawn is not None:
        changes.append(SUB_TASKS)
    return tuple(changes)


def _log_outcome(name: str, task_id: str, outcome: str) -> None:
    log.info(
        "command /%s on task %s: %s",
        name,
        task_id,
        outcome,
        extra={"command": name, "task_id": task_id, "outcome": outcome},
    )
