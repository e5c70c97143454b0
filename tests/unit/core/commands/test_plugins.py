"""Loading plugin folders: hooks and commands registered, every invalid entry skipped and
reported, and a command's body only ever seeing its own command."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiny_harness.core.commands.command_errors import PluginError
from tiny_harness.core.commands.context import CommandResult
from tiny_harness.core.commands.hooks import TASK_COMPLETE_IN, completion_override
from tiny_harness.core.commands.plugins import ComponentKind, SkippedComponent
from tiny_harness.core.commands.registry import COMMAND_INVOKED_IN, COMMAND_INVOKED_PRE
from tiny_harness.core.commands.setup import BuiltCommands, build_command_registry
from tiny_harness.core.completion import decide_completion
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Lifecycle, SubTaskRow, TaskExtension

from .support import CATALOG, PluginFactory, send

EXECUTORS = """
    from tiny_harness.core.commands.context import CommandResult
    from tiny_harness.core.commands.command_errors import HookAbort

    seen = []

    def hello(ctx):
        seen.append((ctx.name, ctx.arguments))
        return CommandResult(reply=f"hello {ctx.arguments or ctx.sender}")

    async def hello_async(ctx):
        seen.append((ctx.name, ctx.arguments))
        return ctx.model_copy(update={"result": CommandResult(reply="hello, later")})

    def quiet_status(ctx):
        return CommandResult(reply="status: fine")

    def no_shouting(ctx):
        if ctx.arguments.isupper():
            raise HookAbort("no shouting")

    def always_complete(ctx):
        return ctx.model_copy(update={"override": True})

    async def async_complete(ctx):
        return ctx.model_copy(update={"override": True})

    class Holder:
        @staticmethod
        def nested(ctx):
            return CommandResult(reply="nested")

    not_callable = 42
"""


def hook(name: str, executor: str, *points: str, priority: int = 500) -> dict[str, object]:
    return {
        "name": name,
        "points": list(points or ("command.invoked.in",)),
        "executor": executor,
        "priority": priority,
    }


def command(name: str, hook_name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "description": f"The {name} command", "hook": hook_name, **extra}


def build(*folders: Path) -> BuiltCommands:
    return build_command_registry(CATALOG, plugin_dirs=folders)


def skipped(built: BuiltCommands) -> set[tuple[str, str]]:
    return {(s.kind.value, s.name) for s in built.report.skipped}


def reason(built: BuiltCommands, kind: ComponentKind, name: str) -> str:
    matches = [s.reason for s in built.report.skipped if s.kind is kind and s.name == name]
    assert len(matches) == 1, built.report.skipped
    return matches[0]


async def test_a_plugin_adds_a_command_and_a_policy_hook(plugins: PluginFactory) -> None:
    mod = plugins.module(EXECUTORS)
    folder = plugins.plugin(
        "greeter",
        hooks=[
            hook("hello-body", f"{mod}:hello"),
            hook("no-shouting", f"{mod}:no_shouting", "command.invoked.pre", priority=200),
        ],
        commands=[command("hello", "hello-body", argument_hint="[<name>]")],
    )
    built = build(folder)
    assert built.report.plugins == ("greeter",)
    assert built.report.commands == ("hello",)
    assert built.report.hooks == ("greeter/no-shouting",)
    assert built.report.skipped == ()
    assert built.registry.get("hello") is not None
    assert [s.name for s in built.registry.specs][-1] == "hello"

    assert await send(built.registry, "/hello world") == CommandResult(reply="hello world")
    assert await send(built.registry, "/hello WORLD") == CommandResult(reply="refused: no shouting")
    # The ordinary policy hook sees every command, built-ins included.
    assert await send(built.registry, "/model GPT") == CommandResult(reply="refused: no shouting")
    pre = [h.name for h in built.hooks.chain(COMMAND_INVOKED_PRE)]
    assert pre == ["builtin/role-check", "greeter/no-shouting"]


async def test_an_async_body_returning_its_context_and_a_nested_executor_path(
    plugins: PluginFactory,
) -> None:
    mod = plugins.module(EXECUTORS)
    folder = plugins.plugin(
        "more",
        hooks=[hook("later", f"{mod}:hello_async"), hook("nested", f"{mod}:Holder.nested")],
        commands=[command("later", "later"), command("nested", "nested")],
    )
    built = build(folder)
    assert built.report.skipped == ()
    assert await send(built.registry, "/later") == CommandResult(reply="hello, later")
    assert await send(built.registry, "/nested") == CommandResult(reply="nested")


async def test_a_plugin_overrides_a_built_in_only_when_it_says_so(plugins: PluginFactory) -> None:
    mod = plugins.module(EXECUTORS)
    polite = plugins.plugin(
        "polite",
        hooks=[hook("status-body", f"{mod}:quiet_status")],
        commands=[command("status", "status-body")],
    )
    built = build(polite)
    assert reason(built, ComponentKind.COMMAND, "status") == (
        '/status is already registered; set "override": true to replace it'
    )
    # Its body is command-owned, so it is not registered anywhere else either.
    assert ("hook", "status-body") in skipped(built)
    assert [h.name for h in built.hooks.chain(COMMAND_INVOKED_IN)] == [
        "builtin/model",
        "builtin/effort",
        "builtin/sub-task",
        "builtin/status",
        "builtin/budget",
    ]

    bold = plugins.plugin(
        "bold",
        hooks=[hook("status-body", f"{mod}:quiet_status")],
        commands=[command("status", "status-body", override=True, description="Quick status")],
    )
    built = build(bold)
    assert built.report.skipped == ()
    assert built.registry.get("status") is not None
    assert built.registry.get("status").description == "Quick status"  # type: ignore[union-attr]
    assert await send(built.registry, "/status") == CommandResult(reply="status: fine")


async def test_a_lower_priority_ordinary_in_hook_answers_a_built_in(
    plugins: PluginFactory,
) -> None:
    mod = plugins.module(
        """
        from tiny_harness.core.commands.context import CommandResult

        def answer_status(ctx):
            if ctx.name == "status":
                return ctx.model_copy(update={"result": CommandResult(reply="from the plugin")})
            return None
        """
    )
    folder = plugins.plugin(
        "early", hooks=[hook("status-first", f"{mod}:answer_status", priority=100)]
    )
    built = build(folder)
    assert await send(built.registry, "/status") == CommandResult(reply="from the plugin")


@pytest.mark.parametrize(
    ("entry", "name", "why"),
    [
        (command("Hello", "body"), "Hello", "invalid name: String should match pattern"),
        (command("with space", "body"), "with space", "invalid name"),
        ({"name": "nodesc", "hook": "body"}, "nodesc", "invalid description: Field required"),
        (command("extra", "body", color="red"), "extra", "invalid color: Extra inputs"),
        ({"hook": "body", "description": "x"}, "#0", "invalid name: Field required"),
    ],
)
def test_an_invalid_command_entry_is_skipped_with_its_reason(
    plugins: PluginFactory, entry: dict[str, object], name: str, why: str
) -> None:
    mod = plugins.module(EXECUTORS)
    folder = plugins.plugin("bad", hooks=[hook("body", f"{mod}:hello")], commands=[entry])
    built = build(folder)
    assert reason(built, ComponentKind.COMMAND, name).startswith(why)
    # The hook it names stays command-owned: never registered unfiltered.
    assert ("hook", "body") in skipped(built)
    assert built.report.hooks == ()
    assert all(not h.name.startswith("bad/") for h in built.hooks.chain(COMMAND_INVOKED_IN))


def test_a_command_naming_no_hookdef_is_skipped(plugins: PluginFactory) -> None:
    folder = plugins.plugin("lonely", commands=[command("lonely", "missing")])
    built = build(folder)
    assert reason(built, ComponentKind.COMMAND, "lonely") == (
        "hook 'missing' names no valid HookDef in lonely/hooks.json"
    )
    assert "lonely" not in built.registry


def test_a_command_body_with_other_points_is_skipped_with_its_hook(
    plugins: PluginFactory,
) -> None:
    mod = plugins.module(EXECUTORS)
    folder = plugins.plugin(
        "greedy",
        hooks=[hook("body", f"{mod}:hello", "command.invoked.in", "command.invoked.pre")],
        commands=[command("greedy", "body")],
    )
    built = build(folder)
    assert reason(built, ComponentKind.COMMAND, "greedy").startswith(
        "hook 'body' is a command body, so it must declare exactly points [\"command.invoked.in\"]"
    )
    assert reason(built, ComponentKind.HOOK, "body").startswith(
        "it is the body of command 'greedy' in commands.json, which was skipped"
    )
    assert "greedy" not in built.registry
    assert all(h.name != "greedy/body" for h in built.hooks.chain(COMMAND_INVOKED_PRE))


def test_a_command_body_on_a_single_other_point_is_skipped(plugins: PluginFactory) -> None:
    mod = plugins.module(EXECUTORS)
    folder = plugins.plugin(
        "wrong",
        hooks=[hook("body", f"{mod}:hello", "command.invoked.post")],
        commands=[command("wrong", "body")],
    )
    built = build(folder)
    assert "must declare exactly points" in reason(built, ComponentKind.COMMAND, "wrong")


async def test_two_commands_may_not_share_a_hook(plugins: PluginFactory) -> None:
    mod = plugins.module(EXECUTORS)
    folder = plugins.plugin(
        "twins",
        hooks=[hook("body", f"{mod}:hello")],
        commands=[command("first", "body"), command("second", "body")],
    )
    built = build(folder)
    assert built.report.commands == ("first",)
    assert reason(built, ComponentKind.COMMAND, "second") == (
        "hook 'body' is already named by /first"
    )
    assert await send(built.registry, "/first") == CommandResult(reply="hello alice")


def test_a_command_listed_twice_keeps_the_first(plugins: PluginFactory) -> None:
    mod = plugins.module(EXECUTORS)
    folder = plugins.plugin(
        "dup",
        hooks=[hook("a", f"{mod}:hello"), hook("b", f"{mod}:hello")],
        commands=[command("dup", "a"), command("dup", "b")],
    )
    built = build(folder)
    assert built.report.commands == ("dup",)
    assert reason(built, ComponentKind.COMMAND, "dup").startswith("/dup is already registered")


@pytest.mark.parametrize(
    ("executor", "why"),
    [
        ("th_no_such_module:hello", "ModuleNotFoundError"),
        ("{mod}:missing", "AttributeError"),
        ("{mod}:not_callable", "TypeError: int is not callable"),
    ],
)
def test_an_executor_that_does_not_load_skips_its_command_and_its_hook(
    plugins: PluginFactory, executor: str, why: str
) -> None:
    mod = plugins.module(EXECUTORS)
    path = executor.format(mod=mod)
    folder = plugins.plugin(
        "broken",
        hooks=[hook("body", path), hook("policy", path, "command.invoked.pre")],
        commands=[command("broken", "body")],
    )
    built = build(folder)
    expected = f"executor {path!r} does not load: {why}"
    assert reason(built, ComponentKind.COMMAND, "broken").startswith(expected)
    assert reason(built, ComponentKind.HOOK, "policy").startswith(expected)
    assert ("hook", "body") in skipped(built)
    assert built.report.commands == ()
    assert built.report.hooks == ()


def test_an_executor_module_that_raises_on_import_is_skipped(plugins: PluginFactory) -> None:
    mod = plugins.module("raise RuntimeError('bad import')\n")
    folder = plugins.plugin("explodes", hooks=[hook("h", f"{mod}:f", "command.invoked.pre")])
    built = build(folder)
    assert reason(built, ComponentKind.HOOK, "h") == (
        f"executor '{mod}:f' does not load: RuntimeError: bad import"
    )


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (hook("h", "not a path", "command.invoked.pre"), "invalid executor"),
        (hook("h", "os:getcwd", "command.invoked.during"), "invalid points.0"),
        ({"name": "h", "points": [], "executor": "os:getcwd"}, "invalid points"),
        (hook("H", "os:getcwd", "command.invoked.pre"), "invalid name"),
    ],
)
def test_an_invalid_hook_entry_is_skipped(
    plugins: PluginFactory, entry: dict[str, object], why: str
) -> None:
    folder = plugins.plugin("hooks", hooks=[entry])
    built = build(folder)
    assert len(built.report.skipped) == 1
    assert built.report.skipped[0].kind is ComponentKind.HOOK
    assert built.report.skipped[0].reason.startswith(why)


def test_a_hook_declared_twice_keeps_the_first(plugins: PluginFactory) -> None:
    mod = plugins.module(EXECUTORS)
    folder = plugins.plugin(
        "twice",
        hooks=[
            hook("h", f"{mod}:no_shouting", "command.invoked.pre"),
            hook("h", f"{mod}:no_shouting", "command.invoked.post"),
        ],
    )
    built = build(folder)
    assert built.report.hooks == ("twice/h",)
    assert (
        reason(built, ComponentKind.HOOK, "h") == "declared twice in hooks.json; the first is kept"
    )


def test_a_plugin_lets_a_task_complete_with_an_open_sub_task(plugins: PluginFactory) -> None:
    mod = plugins.module(EXECUTORS)
    folder = plugins.plugin(
        "closer",
        hooks=[
            hook("close", f"{mod}:always_complete", "task.complete.in"),
            hook("close-async", f"{mod}:async_complete", "task.complete.in"),
        ],
    )
    built = build(folder)
    assert built.report.hooks == ("closer/close",)
    assert reason(built, ComponentKind.HOOK, "close-async") == (
        f"executor '{mod}:async_complete' is async, but task.complete.in takes synchronous "
        "executors only"
    )
    assert [h.name for h in built.hooks.chain(TASK_COMPLETE_IN)] == ["closer/close"]
    task = TaskExtension(
        goal="g",
        lifecycle=Lifecycle.CONVERSATION,
        sub_tasks=(SubTaskRow(task_id="t1.1", state=TaskState.WORKING),),
    )
    decision = decide_completion(task, "alice", override=completion_override(built.hooks, "alice"))
    assert decision.complete
    assert decision.overridden


def test_the_load_report_reads_as_start_up_log_lines(plugins: PluginFactory) -> None:
    mod = plugins.module(EXECUTORS)
    one = plugins.plugin(
        "one",
        hooks=[
            hook("body", f"{mod}:hello"),
            hook("p", f"{mod}:no_shouting", "command.invoked.pre"),
        ],
        commands=[command("hi", "body"), command("Bad", "body")],
    )
    two = plugins.plugin("two", commands=[command("orphan", "none")])
    built = build(one, two)
    assert built.report.plugins == ("one", "two")
    lines = built.report.lines()
    assert lines[0] == "plugins loaded: one, two; hooks: one/p; commands: /hi"
    assert lines[1].startswith("plugin 'one': skipped command /Bad: invalid name")
    assert lines[2] == (
        "plugin 'two': skipped command /orphan: hook 'none' names no valid HookDef in "
        "two/hooks.json"
    )
    assert str(SkippedComponent(ComponentKind.HOOK, "h", "why")) == "skipped hook 'h': why"


# -- files that cannot be read at all --


def test_a_missing_folder_is_a_plugin_error(tmp_path: Path) -> None:
    with pytest.raises(PluginError, match="is not a directory"):
        build(tmp_path / "nowhere")


def test_a_folder_without_plugin_files_is_a_plugin_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(PluginError, match=r"holds neither hooks\.json nor commands\.json"):
        build(tmp_path / "empty")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{not json", "is not valid JSON"),
        ("[]", 'must be a JSON object {"hooks": [...]}'),
        ('{"hooks": {}}', "'hooks' must be a list"),
        ('{"hooks": [], "commands": []}', "unknown top-level key"),
    ],
)
def test_an_unreadable_file_is_a_plugin_error_naming_it(
    tmp_path: Path, text: str, why: str
) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "hooks.json").write_text(text, encoding="utf-8")
    with pytest.raises(PluginError, match=r"hooks\.json") as caught:
        build(folder)
    assert why in str(caught.value)


def test_a_schema_key_and_a_non_object_entry_are_handled(tmp_path: Path) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "hooks.json").write_text(
        '{"$schema": "https://madarauchiha-314.github.io/tiny-harness/plugins/hooks.json",'
        ' "hooks": ["just a string"]}',
        encoding="utf-8",
    )
    built = build(folder)
    assert built.report.skipped == (
        SkippedComponent(ComponentKind.HOOK, "#0", "invalid name: Field required", "odd"),
    )
