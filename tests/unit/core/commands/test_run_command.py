"""Running a command: refusals and failures become replies without intents, and the fixed rules
(no intents for a watcher, selectable models only) hold whatever the hooks do."""

from __future__ import annotations

import logging

import pytest

from tiny_harness.core.command_spec import CommandSpec
from tiny_harness.core.commands.command_errors import CommandError, HookAbort
from tiny_harness.core.commands.context import (
    CommandInvokedIn,
    CommandInvokedPre,
    CommandResult,
    SpawnRequest,
)
from tiny_harness.core.commands.parse import CommandCall
from tiny_harness.core.commands.registry import (
    COMMAND_INVOKED_IN,
    COMMAND_INVOKED_PRE,
    CommandRegistry,
    ForCommand,
)
from tiny_harness.core.commands.run import run_command
from tiny_harness.core.task import Budget, Role
from tiny_harness.core.turn import TaskSettings

from .support import registry, send, snapshot


def with_commands(configure: object) -> CommandRegistry:
    return registry(configure=configure)


async def test_a_handler_that_raises_replies_failed_and_logs_name_and_task_not_arguments(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def configure(reg: CommandRegistry) -> None:
        @reg.command("deploy", "Deploy", "<env>")
        def deploy(ctx: CommandInvokedIn) -> CommandResult:
            raise RuntimeError("the cluster is unreachable")

    reg = with_commands(configure)
    with caplog.at_level(logging.INFO, logger="tiny_harness.core.commands"):
        result = await send(reg, "/deploy secret-token-123")
    assert result == CommandResult(reply="/deploy failed: the cluster is unreachable")
    failure = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failure) == 1
    assert "/deploy" in failure[0].getMessage()
    assert "t1" in failure[0].getMessage()
    assert "secret-token-123" not in caplog.text


async def test_a_handler_raising_without_a_message_names_the_exception() -> None:
    def configure(reg: CommandRegistry) -> None:
        @reg.command("oops", "Fail")
        def oops(ctx: CommandInvokedIn) -> CommandResult:
            raise KeyError

    assert await send(with_commands(configure), "/oops") == CommandResult(
        reply="/oops failed: KeyError"
    )


async def test_a_body_returning_something_else_fails_the_command() -> None:
    def configure(reg: CommandRegistry) -> None:
        reg.register(CommandSpec(name="odd", description="x"), lambda ctx: "a string")

    result = await send(with_commands(configure), "/odd")
    assert result is not None
    assert result.reply == "/odd failed: the body of /odd returned str; return a CommandResult"


async def test_a_body_that_answers_nothing_leaves_no_handler_reply() -> None:
    def configure(reg: CommandRegistry) -> None:
        reg.register(CommandSpec(name="mute", description="x"), lambda ctx: None)

    assert await send(with_commands(configure), "/mute") == CommandResult(
        reply="command /mute has no handler"
    )


async def test_a_sender_with_no_role_is_refused_any_command() -> None:
    result = await send(registry(), "/status", "mallory")
    assert result == CommandResult(reply="refused: mallory is not a participant of this task")


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("/model gpt-5", "change the model of task t1"),
        ("/effort high", "change the reasoning effort of task t1"),
        ("/sub-task look around", "start a sub-task of task t1"),
        ("/sub-task", "start a sub-task of task t1"),
    ],
)
async def test_a_watcher_is_refused_commands_that_change_something(text: str, what: str) -> None:
    result = await send(registry(), text, "bob")
    assert result == CommandResult(
        reply=f"refused: bob is a watcher and may not {what}: only its assignee, reporter or "
        "admin may; ask one of them"
    )


@pytest.mark.parametrize("sender", ["alice", "agent", "root"])
async def test_reporters_assignees_and_admins_may_change_settings(sender: str) -> None:
    result = await send(registry(), "/effort low", sender)
    assert result is not None
    assert result.settings == TaskSettings(reasoning_effort="low")


async def test_a_watchers_plugin_command_yields_no_intents_whatever_it_returns() -> None:
    def configure(reg: CommandRegistry) -> None:
        @reg.command("turbo", "Go fast")
        def turbo(ctx: CommandInvokedIn) -> CommandResult:
            return CommandResult(
                reply="ok", settings=TaskSettings(model="gpt-5"), spawn=SpawnRequest(goal="x")
            )

    reg = with_commands(configure)
    refused = await send(reg, "/turbo", "bob")
    assert refused == CommandResult(
        reply="refused: bob is a watcher and may not change the model of task t1: only its "
        "assignee, reporter or admin may; ask one of them"
    )
    allowed = await send(reg, "/turbo", "alice")
    assert allowed is not None
    assert allowed.settings == TaskSettings(model="gpt-5")


async def test_a_plugin_body_cannot_pick_an_unselectable_model() -> None:
    def configure(reg: CommandRegistry) -> None:
        @reg.command("cheap", "Pick a model")
        def cheap(ctx: CommandInvokedIn) -> CommandResult:
            return CommandResult(reply="ok", settings=TaskSettings(model="very-expensive-model"))

    result = await send(with_commands(configure), "/cheap")
    assert result == CommandResult(
        reply="refused: model 'very-expensive-model' is not selectable; "
        "choose one of: gpt-4o, gpt-5, o4-mini"
    )


async def test_an_operator_can_tighten_the_rules_with_a_pre_executor() -> None:
    def no_sub_tasks_on_weekends(ctx: CommandInvokedPre) -> None:
        if ctx.name == "sub-task":
            raise HookAbort("sub-tasks are paused")

    def configure(reg: CommandRegistry) -> None:
        reg.hooks.register(COMMAND_INVOKED_PRE, no_sub_tasks_on_weekends)

    reg = with_commands(configure)
    assert await send(reg, "/sub-task go", "alice") == CommandResult(
        reply="refused: sub-tasks are paused"
    )
    status = await send(reg, "/status", "alice")
    assert status is not None
    assert status.reply.startswith("task t1")


async def test_a_lower_priority_in_executor_answers_a_built_in_instead() -> None:
    async def my_status(ctx: CommandInvokedIn) -> CommandInvokedIn | None:
        if ctx.name != "status":
            return None
        return ctx.model_copy(update={"result": CommandResult(reply="all good")})

    def configure(reg: CommandRegistry) -> None:
        reg.hooks.register(COMMAND_INVOKED_IN, my_status, priority=400)

    reg = with_commands(configure)
    assert await send(reg, "/status") == CommandResult(reply="all good")
    model = await send(reg, "/model")
    assert model is not None
    assert model.reply.startswith("model: gpt-4o")


async def test_an_in_executor_after_the_body_sees_the_result_already_set() -> None:
    seen: list[str | None] = []

    def observer(ctx: CommandInvokedIn) -> None:
        seen.append(ctx.result.reply.splitlines()[0] if ctx.result else None)

    def configure(reg: CommandRegistry) -> None:
        reg.hooks.register(COMMAND_INVOKED_IN, observer, priority=900)

    result = await send(with_commands(configure), "/status")
    assert result is not None
    assert seen == ["task t1 (trip)"]


async def test_for_command_passes_other_commands_and_answered_contexts_through() -> None:
    seen: list[str] = []

    def body(ctx: CommandInvokedIn) -> CommandInvokedIn:
        seen.append(ctx.name)
        # Tries to rewrite the sender too; only the result is taken.
        return ctx.model_copy(update={"sender": "root", "result": CommandResult(reply="mine")})

    wrapped = ForCommand("mine", body)
    base = {"arguments": "", "sender": "alice", "sender_role": Role.REPORTER, "task": snapshot()}
    assert await wrapped(CommandInvokedIn(name="other", **base)) is None
    answered = CommandInvokedIn(name="mine", result=CommandResult(reply="first"), **base)
    assert await wrapped(answered) is None
    out = await wrapped(CommandInvokedIn(name="mine", **base))
    assert out is not None
    assert out.result == CommandResult(reply="mine")
    assert out.sender == "alice"
    assert seen == ["mine"]


async def test_running_on_an_unfrozen_runner_is_a_programming_error() -> None:
    with pytest.raises(CommandError, match=r"freeze\(\)"):
        await run_command(
            CommandRegistry().hooks,
            CommandCall("status"),
            sender="alice",
            role=Role.REPORTER,
            snapshot=snapshot(),
        )


async def test_a_plugin_cannot_raise_the_budget_for_the_assignee_it_bounds() -> None:
    """The fixed rules ask the authority table whatever the hooks did: a plugin body that
    returns a budget for the assignee's command yields nothing, in the table's words."""

    def configure(reg: CommandRegistry) -> None:
        @reg.command("more", "More room")
        def more(ctx: CommandInvokedIn) -> CommandResult:
            return CommandResult(reply="ok", budget=Budget(max_tokens=10**9))

    result = await send(with_commands(configure), "/more", "agent")
    assert result == CommandResult(
        reply="refused: agent is an assignee and may not change the budget of task t1 "
        "(spec.budget): only its reporter or admin may; ask one of them"
    )
