"""The command registry: names checked at registration, one body per name, frozen at start-up."""

from __future__ import annotations

import pytest

from tiny_harness.core.command_spec import CommandSpec, commands_params
from tiny_harness.core.commands.builtins import BUILTIN_SPECS
from tiny_harness.core.commands.command_errors import CommandError, HookError
from tiny_harness.core.commands.context import CommandInvokedIn, CommandResult
from tiny_harness.core.commands.registry import (
    COMMAND_INVOKED_IN,
    COMMAND_INVOKED_PRE,
    CommandRegistry,
    command_spec,
)
from tiny_harness.core.commands.setup import build_command_registry

from .support import CATALOG, send


def hello(ctx: CommandInvokedIn) -> CommandResult:
    return CommandResult(reply=f"hello {ctx.sender}")


def spec(name: str = "hello") -> CommandSpec:
    return CommandSpec(name=name, description="Say hello")


def test_the_built_ins_are_listed_in_order_for_the_card() -> None:
    built = build_command_registry(CATALOG)
    assert built.registry.specs == BUILTIN_SPECS
    assert [c["name"] for c in commands_params(built.registry)["commands"]] == [
        "model",
        "effort",
        "sub-task",
        "status",
        "budget",
    ]
    assert built.registry.frozen
    assert built.hooks.frozen


def test_registering_a_name_twice_from_code_is_an_error() -> None:
    registry = CommandRegistry()
    registry.register(spec(), hello)
    with pytest.raises(CommandError, match=r"/hello is already registered.*override=True"):
        registry.register(spec(), hello)


def test_registering_a_built_in_name_from_code_needs_override() -> None:
    def configure(registry: CommandRegistry) -> None:
        registry.register(CommandSpec(name="status", description="mine"), hello)

    with pytest.raises(CommandError, match="/status is already registered"):
        build_command_registry(CATALOG, configure=configure)


async def test_override_replaces_a_built_in_spec_and_body() -> None:
    def configure(registry: CommandRegistry) -> None:
        registry.register(CommandSpec(name="status", description="mine"), hello, override=True)

    registry = build_command_registry(CATALOG, configure=configure).registry
    assert registry.get("status") == CommandSpec(name="status", description="mine")
    assert [s.name for s in registry.specs] == ["model", "effort", "sub-task", "status", "budget"]
    result = await send(registry, "/status")
    assert result == CommandResult(reply="hello alice")


@pytest.mark.parametrize("name", ["Hello", "1st", "-x", "with space", "sub_task", "a" * 65, ""])
def test_an_invalid_name_from_code_is_an_error(name: str) -> None:
    registry = CommandRegistry()
    invalid = CommandSpec.model_construct(name=name, description="x", argument_hint="")
    with pytest.raises(CommandError, match="invalid command name"):
        registry.register(invalid, hello)
    with pytest.raises(CommandError, match="invalid command name"):
        registry.command(name, "x")


def test_a_bad_description_from_the_decorator_names_the_field() -> None:
    with pytest.raises(CommandError, match=r"/hello: description"):
        CommandRegistry().command("hello", "")
    with pytest.raises(CommandError, match=r"/hello: description"):
        command_spec("hello", "")


async def test_a_command_registered_with_the_decorator_answers() -> None:
    def configure(registry: CommandRegistry) -> None:
        @registry.command("hello", "Say hello", "[<name>]")
        async def greet(ctx: CommandInvokedIn) -> CommandResult:
            return CommandResult(reply=f"hello {ctx.arguments or ctx.sender}")

    registry = build_command_registry(CATALOG, configure=configure).registry
    assert registry.get("hello") == CommandSpec(
        name="hello", description="Say hello", argument_hint="[<name>]"
    )
    assert await send(registry, "/hello world") == CommandResult(reply="hello world")


def test_a_frozen_registry_and_its_runner_refuse_registrations() -> None:
    registry = CommandRegistry()
    registry.freeze()
    with pytest.raises(CommandError, match="frozen"):
        registry.register(spec(), hello)
    with pytest.raises(HookError, match="frozen"):
        registry.hooks.register(COMMAND_INVOKED_PRE, lambda ctx: None)


def test_freezing_installs_each_body_filtered_on_command_invoked_in() -> None:
    registry = CommandRegistry()
    registry.register(spec("hello"), hello, priority=300)
    registry.register(spec("bye"), hello, hook="mine/bye")
    assert registry.hooks.chain(COMMAND_INVOKED_IN) == ()
    registry.freeze()
    chain = registry.hooks.chain(COMMAND_INVOKED_IN)
    assert [(h.name, h.priority) for h in chain] == [("command/hello", 300), ("mine/bye", 500)]


def test_every_registry_carries_the_role_check() -> None:
    pre = CommandRegistry().hooks.chain(COMMAND_INVOKED_PRE)
    assert [(h.name, h.priority) for h in pre] == [("builtin/role-check", 100)]


def test_membership_and_lookup() -> None:
    registry = build_command_registry(CATALOG).registry
    assert "model" in registry
    assert "unknown" not in registry
    assert registry.get("unknown") is None
    assert len(registry) == 5
