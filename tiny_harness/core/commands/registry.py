"""The command registry: which ``/names`` exist, and the body that answers each.

It is filled at start-up, from the built-ins, from code and from plugins, and frozen before the
operator runs. Freezing installs each command's body on ``command.invoked.in``, wrapped in a
:class:`ForCommand` filter, so a body only ever sees its own command: it cannot read another
command's arguments, answer twice, or answer a command another body already answered. A bad or
duplicate name registered from code is a :class:`~.command_errors.CommandError` at start-up, never a
surprise at run time.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from tiny_harness.core.command_spec import COMMAND_NAME_MAX, COMMAND_NAME_PATTERN, CommandSpec
from tiny_harness.core.commands.command_errors import CommandError, HookError
from tiny_harness.core.commands.context import CommandInvokedIn, CommandResult
from tiny_harness.core.commands.hooks import (
    DEFAULT_PRIORITY,
    HookPoint,
    HookRunner,
    Operation,
    Phase,
)
from tiny_harness.core.commands.roles import ROLE_CHECK_PRIORITY, role_check

#: The priority of a command body registered without one; a lower-priority ``in`` executor
#: runs first, so it can answer a built-in command instead.
DEFAULT_BODY_PRIORITY: Final = DEFAULT_PRIORITY

COMMAND_INVOKED_PRE: Final = HookPoint(Operation.COMMAND_INVOKED, Phase.PRE)
COMMAND_INVOKED_IN: Final = HookPoint(Operation.COMMAND_INVOKED, Phase.IN)
COMMAND_INVOKED_POST: Final = HookPoint(Operation.COMMAND_INVOKED, Phase.POST)

#: A command's body from code: the context in, the result out (sync or async). A plugin body may
#: also return the context with ``result`` set, or None for "no answer".
CommandHandler = Callable[[CommandInvokedIn], CommandResult | Awaitable[CommandResult]]

_NAME: Final = re.compile(COMMAND_NAME_PATTERN)


class ForCommand:
    """A body executor that runs only for its own command, and only while none has answered.

    Every other context passes through untouched, so the inner executor never sees another
    command's name or arguments, and never runs after a lower-priority body set the result.
    """

    def __init__(self, name: str, inner: Callable[[CommandInvokedIn], object]) -> None:
        self.name = name
        self.inner = inner

    async def __call__(self, ctx: CommandInvokedIn) -> CommandInvokedIn | None:
        if ctx.name != self.name or ctx.result is not None:
            return None
        returned = self.inner(ctx)
        if inspect.isawaitable(returned):
            returned = await returned
        if returned is None:
            return None
        if isinstance(returned, CommandResult):
            return ctx.model_copy(update={"result": returned})
        if isinstance(returned, CommandInvokedIn):
            # Only the result is taken: a body may not rewrite the name, sender or snapshot.
            return ctx.model_copy(update={"result": returned.result})
        raise HookError(
            f"the body of /{self.name} returned {type(returned).__name__}; return a CommandResult"
        )


@dataclass(frozen=True)
class _Command:
    spec: CommandSpec
    body: Callable[[CommandInvokedIn], object]
    priority: int
    hook: str


class CommandRegistry:
    """The commands a harness accepts, each with one body. Iterating yields their specs."""

    def __init__(self, hooks: HookRunner | None = None) -> None:
        self.hooks = hooks or HookRunner()
        self._commands: dict[str, _Command] = {}
        self._frozen = False
        # Always on: a registry without it would let anyone with no role run anything.
        self.hooks.register(
            COMMAND_INVOKED_PRE, role_check, priority=ROLE_CHECK_PRIORITY, name="builtin/role-check"
        )

    # -- reading --

    def __contains__(self, name: object) -> bool:
        return name in self._commands

    def __iter__(self) -> Iterator[CommandSpec]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self._commands)

    def get(self, name: str) -> CommandSpec | None:
        command = self._commands.get(name)
        return command.spec if command is not None else None

    @property
    def specs(self) -> tuple[CommandSpec, ...]:
        """The commands in registration order: what the card's commands extension lists."""
        return tuple(c.spec for c in self._commands.values())

    @property
    def frozen(self) -> bool:
        return self._frozen

    # -- filling --

    def register(
        self,
        spec: CommandSpec,
        handler: CommandHandler | Callable[[CommandInvokedIn], Any],
        *,
        priority: int = DEFAULT_BODY_PRIORITY,
        override: bool = False,
        hook: str | None = None,
    ) -> None:
        """Add the command ``spec`` answered by ``handler`` at ``priority``.

        ``override=True`` replaces a command of the same name (its spec and its body); without it
        a second registration of a name is a :class:`CommandError`, as is a name that does not
        match ``[a-z][a-z0-9-]*`` or a registry already frozen. ``hook`` names the body in logs.
        """
        if self._frozen:
            raise CommandError(
                f"cannot register /{spec.name}: the command registry is frozen; "
                "register commands before the operator starts"
            )
        check_name(spec.name)
        if spec.name in self._commands and not override:
            raise CommandError(
                f"/{spec.name} is already registered; pass override=True to replace it"
            )
        if not callable(handler):
            raise CommandError(f"the handler of /{spec.name} is not callable")
        self._commands[spec.name] = _Command(
            spec, handler, priority, hook or f"command/{spec.name}"
        )

    def command(
        self,
        name: str,
        description: str,
        argument_hint: str = "",
        *,
        priority: int = DEFAULT_BODY_PRIORITY,
        override: bool = False,
    ) -> Callable[[CommandHandler], CommandHandler]:
        """Register the decorated function as the body of ``/<name>``."""
        spec = command_spec(name, description, argument_hint)

        def decorate(handler: CommandHandler) -> CommandHandler:
            self.register(spec, handler, priority=priority, override=override)
            return handler

        return decorate

    def freeze(self) -> None:
        """Install every body on ``command.invoked.in`` and freeze the registry and its runner."""
        if self._frozen:
            return
        for command in self._commands.values():
            self.hooks.register(
                COMMAND_INVOKED_IN,
                ForCommand(command.spec.name, command.body),
                priority=command.priority,
                name=command.hook,
            )
        self._frozen = True
        self.hooks.freeze()


def check_name(name: str) -> None:
    """Raise :class:`CommandError` unless ``name`` is a valid command name."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > COMMAND_NAME_MAX:
        raise CommandError(
            f"invalid command name {name!r}: use lower-case letters, digits and '-', starting "
            f"with a letter, at most {COMMAND_NAME_MAX} characters"
        )


def command_spec(name: str, description: str, argument_hint: str = "") -> CommandSpec:
    """A :class:`CommandSpec`, with any problem as a :class:`CommandError` naming the field."""
    check_name(name)
    try:
        return CommandSpec(name=name, description=description, argument_hint=argument_hint)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise CommandError(f"/{name}: {field}: {first['msg']}") from None
