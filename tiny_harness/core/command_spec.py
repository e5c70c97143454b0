"""What clients see of a command, and the commands extension that advertises them on the card.

Clients (the TUI, the web UI, ``kubectl harness``) list the ``/commands`` a harness accepts from
the agent card they already fetch: the card's capabilities carry the extension
:data:`~tiny_harness.core.extensions.COMMANDS_EXT_URI` with params ``{"commands": [...]}``.
This module is that shape and nothing more; parsing and running commands live elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tiny_harness.core.errors import InvalidExtensionError
from tiny_harness.core.extensions import COMMANDS_EXT_URI

#: A command's name: what follows the slash. Lower case so ``/Model`` is never a command.
COMMAND_NAME_PATTERN: Final = r"^[a-z][a-z0-9-]*$"
COMMAND_NAME_MAX: Final = 64


class CommandSpec(BaseModel):
    """One command as clients see it: ``/<name> <argument_hint>`` and what it does."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[
        str, Field(min_length=1, max_length=COMMAND_NAME_MAX, pattern=COMMAND_NAME_PATTERN)
    ] = Field(description="The command's name, typed after a slash: [a-z][a-z0-9-]*.")
    description: str = Field(
        min_length=1, max_length=1024, description="One line saying what the command does."
    )
    argument_hint: str = Field(
        default="",
        max_length=256,
        description="How to write the arguments, e.g. '<model>'; empty when it takes none.",
    )


class CommandsExtensionParams(BaseModel):
    """The params of the commands extension on the agent card: ``{"commands": [...]}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    commands: tuple[CommandSpec, ...] = Field(
        default=(), description="The commands this harness accepts, each name once."
    )

    @model_validator(mode="after")
    def _unique_names(self) -> CommandsExtensionParams:
        seen: set[str] = set()
        for c in self.commands:
            if c.name in seen:
                raise ValueError(f"command /{c.name} is listed twice")
            seen.add(c.name)
        return self


def commands_params(commands: Iterable[CommandSpec]) -> dict[str, Any]:
    """The card params advertising ``commands``, in the order given."""
    return CommandsExtensionParams(commands=tuple(commands)).model_dump(mode="json")


def commands_from_params(params: Mapping[str, Any]) -> tuple[CommandSpec, ...]:
    """The commands a card's extension params advertise.

    Raises :class:`InvalidExtensionError` naming the offending entry when the params are malformed.
    """
    try:
        return CommandsExtensionParams.model_validate(dict(params)).commands
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        field = f"{COMMANDS_EXT_URI} params.{loc}" if loc else f"{COMMANDS_EXT_URI} params"
        raise InvalidExtensionError(
            field, str(first["msg"]).removeprefix("Value error, ")
        ) from None
