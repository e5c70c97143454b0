"""The hook runner: chains in priority order, contexts passed along, aborts, and the
``task.complete`` chains as the completion override of ``decide_completion``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tiny_harness.core.commands.command_errors import HookAbort, HookError
from tiny_harness.core.commands.context import (
    CommandInvokedIn,
    CommandInvokedPost,
    CommandInvokedPre,
    CommandResult,
)
from tiny_harness.core.commands.hooks import (
    HOOK_POINT_NAMES,
    TASK_COMPLETE_IN,
    TASK_COMPLETE_POST,
    TASK_COMPLETE_PRE,
    HookPoint,
    HookRunner,
    Operation,
    Phase,
    TaskCompleteIn,
    TaskCompletePost,
    TaskCompletePre,
    completion_override,
)
from tiny_harness.core.commands.parse import CommandCall
from tiny_harness.core.commands.registry import (
    COMMAND_INVOKED_IN,
    COMMAND_INVOKED_POST,
    COMMAND_INVOKED_PRE,
    CommandRegistry,
)
from tiny_harness.core.commands.run import run_command
from tiny_harness.core.completion import CompletionVerdict, decide_completion
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Lifecycle, Role, SubTaskRow, TaskExtension

from .support import snapshot


def pre_context(name: str = "status", arguments: str = "") -> CommandInvokedPre:
    return CommandInvokedPre(
        name=name, arguments=arguments, sender="alice", sender_role=Role.REPORTER, task=snapshot()
    )


def test_hook_points_are_operation_dot_phase() -> None:
    assert HOOK_POINT_NAMES == (
        "command.invoked.pre",
        "command.invoked.in",
        "command.invoked.post",
        "task.complete.pre",
        "task.complete.in",
        "task.complete.post",
    )
    assert HookPoint.parse("task.complete.in") == HookPoint(Operation.TASK_COMPLETE, Phase.IN)
    with pytest.raises(HookError, match=r"unknown hook point 'command\.invoked\.during'"):
        HookPoint.parse("command.invoked.during")


async def test_a_chain_runs_lower_priorities_first_and_ties_in_registration_order() -> None:
    runner = HookRunner()
    ran: list[str] = []

    def record(label: str) -> Callable[[CommandInvokedPre], None]:
        def executor(ctx: CommandInvokedPre) -> None:
            ran.append(label)

        return executor

    runner.register(COMMAND_INVOKED_PRE, record("late"), priority=900)
    runner.register(COMMAND_INVOKED_PRE, record("first-at-500"))
    runner.register(COMMAND_INVOKED_PRE, record("early"), priority=10)
    runner.register(COMMAND_INVOKED_PRE, record("second-at-500"), priority=500)
    await runner.run_chain(COMMAND_INVOKED_PRE, pre_context())
    assert ran == ["early", "first-at-500", "second-at-500", "late"]


async def test_each_executor_sees_the_context_the_previous_one_returned() -> None:
    runner = HookRunner()

    def shout(ctx: CommandInvokedPre) -> CommandInvokedPre:
        return ctx.model_copy(update={"arguments": ctx.arguments.upper()})

    async def exclaim(ctx: CommandInvokedPre) -> CommandInvokedPre:
        return ctx.model_copy(update={"arguments": ctx.arguments + "!"})

    def unchanged(ctx: CommandInvokedPre) -> None:
        return None

    runner.register(COMMAND_INVOKED_PRE, exclaim, priority=2)
    runner.register(COMMAND_INVOKED_PRE, shout, priority=1)
    runner.register(COMMAND_INVOKED_PRE, unchanged, priority=3)
    out = await runner.run_chain(COMMAND_INVOKED_PRE, pre_context(arguments="hi"))
    assert out.arguments == "HI!"


async def test_an_executor_returning_anything_but_its_context_is_a_hook_error() -> None:
    runner = HookRunner()
    runner.register(COMMAND_INVOKED_PRE, lambda ctx: "yes", name="sloppy")
    with pytest.raises(HookError, match=r"hook 'sloppy' on command\.invoked\.pre returned str"):
        await runner.run_chain(COMMAND_INVOKED_PRE, pre_context())


async def test_a_pre_executor_may_abort_but_an_in_or_post_executor_may_not() -> None:
    def refuse(ctx: object) -> None:
        raise HookAbort("not today")

    runner = HookRunner()
    for point in (COMMAND_INVOKED_PRE, COMMAND_INVOKED_IN, COMMAND_INVOKED_POST):
        runner.register(point, refuse, name="refuse")
    with pytest.raises(HookAbort, match="not today"):
        await runner.run_chain(COMMAND_INVOKED_PRE, pre_context())
    within = CommandInvokedIn(**dict(pre_context()))
    with pytest.raises(HookError, match=r"only a pre executor may refuse"):
        await runner.run_chain(COMMAND_INVOKED_IN, within)
    with pytest.raises(HookError, match=r"only a pre executor may refuse"):
        await runner.run_chain(COMMAND_INVOKED_POST, CommandInvokedPost(**dict(within)))


def test_task_complete_takes_synchronous_executors_only() -> None:
    async def later(ctx: TaskCompleteIn) -> None:
        return None

    with pytest.raises(HookError, match="must be synchronous"):
        HookRunner().register(TASK_COMPLETE_IN, later)
    with pytest.raises(HookError, match="not callable"):
        HookRunner().register(TASK_COMPLETE_IN, "nope")  # type: ignore[arg-type]


async def test_the_command_chains_run_pre_then_in_then_post() -> None:
    registry = CommandRegistry()
    seen: list[str] = []

    def pre(ctx: CommandInvokedPre) -> None:
        seen.append(f"pre:{type(ctx).__name__}")

    def body(ctx: CommandInvokedIn) -> CommandResult:
        seen.append(f"in:{type(ctx).__name__}")
        return CommandResult(reply="body")

    def post(ctx: CommandInvokedPost) -> CommandInvokedPost:
        seen.append(f"post:{type(ctx).__name__}:{ctx.result.reply if ctx.result else None}")
        assert ctx.result is not None
        return ctx.model_copy(update={"result": ctx.result.model_copy(update={"reply": "amended"})})

    registry.hooks.register(COMMAND_INVOKED_PRE, pre)
    registry.hooks.register(COMMAND_INVOKED_POST, post)
    registry.command("demo", "A demo")(body)
    registry.freeze()
    result = await run_command(
        registry.hooks,
        CommandCall("demo"),
        sender="alice",
        role=Role.REPORTER,
        snapshot=snapshot(),
    )
    assert result == CommandResult(reply="amended")
    assert seen == ["pre:CommandInvokedPre", "in:CommandInvokedIn", "post:CommandInvokedPost:body"]


# -- task.complete as the completion override -------------------------------------------------


def task_with_open_child() -> TaskExtension:
    return TaskExtension(
        goal="ship it",
        lifecycle=Lifecycle.CONVERSATION,
        sub_tasks=(SubTaskRow(task_id="t1.1", state=TaskState.WORKING),),
    )


def test_without_task_complete_hooks_an_open_sub_task_still_refuses_completion() -> None:
    decision = decide_completion(
        task_with_open_child(), "alice", override=completion_override(HookRunner(), "alice")
    )
    assert decision.verdict is CompletionVerdict.WAIT_FOR_SUBTASKS
    assert not decision.overridden


def test_an_in_executor_may_let_a_task_complete_with_an_open_sub_task() -> None:
    runner = HookRunner()
    seen: list[TaskCompleteIn] = []

    def admins_decide(ctx: TaskCompleteIn) -> TaskCompleteIn:
        seen.append(ctx)
        return ctx.model_copy(update={"override": ctx.requested_by == "alice"})

    runner.register(TASK_COMPLETE_IN, admins_decide)
    runner.freeze()
    decision = decide_completion(
        task_with_open_child(), "alice", override=completion_override(runner, "alice")
    )
    assert decision.complete
    assert decision.overridden
    assert seen[0].requested_by == "alice"
    assert seen[0].decision.unresolved == ("t1.1",)
    refused = decide_completion(
        task_with_open_child(), "carol", override=completion_override(runner, "carol")
    )
    assert not refused.complete


def test_a_pre_abort_or_a_failing_executor_grants_no_override(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def yes(ctx: TaskCompleteIn) -> TaskCompleteIn:
        return ctx.model_copy(update={"override": True})

    def veto(ctx: TaskCompletePre) -> None:
        raise HookAbort("frozen by policy")

    def broken(ctx: TaskCompletePost) -> None:
        raise RuntimeError("boom")

    vetoed = HookRunner()
    vetoed.register(TASK_COMPLETE_IN, yes)
    vetoed.register(TASK_COMPLETE_PRE, veto)
    assert not decide_completion(
        task_with_open_child(), override=completion_override(vetoed)
    ).complete

    failing = HookRunner()
    failing.register(TASK_COMPLETE_IN, yes)
    failing.register(TASK_COMPLETE_POST, broken)
    with caplog.at_level("ERROR"):
        assert not decide_completion(
            task_with_open_child(), override=completion_override(failing)
        ).complete
    assert "task.complete hook failed" in caplog.text


def test_an_executor_smuggling_a_coroutine_into_task_complete_grants_nothing() -> None:
    runner = HookRunner()

    class Sneaky:
        def __call__(self, ctx: TaskCompleteIn) -> object:
            async def later() -> TaskCompleteIn:
                return ctx.model_copy(update={"override": True})

            return later()

    runner.register(TASK_COMPLETE_IN, Sneaky())
    assert not decide_completion(
        task_with_open_child(), override=completion_override(runner)
    ).complete


def test_a_post_executor_may_withdraw_an_override() -> None:
    runner = HookRunner()
    runner.register(TASK_COMPLETE_IN, lambda ctx: ctx.model_copy(update={"override": True}))
    runner.register(TASK_COMPLETE_POST, lambda ctx: ctx.model_copy(update={"override": False}))
    assert not decide_completion(
        task_with_open_child(), override=completion_override(runner)
    ).complete
