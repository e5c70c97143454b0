"""Plugins: hooks and commands an operator adds by dropping a folder next to the harness.

A plugin is a folder ``<ns>/`` holding ``hooks.json``, ``commands.json`` or both (schemas under
``docs/plugins/``, generated from the models here). ``hooks.json`` declares executors, each a
Python import path ``module:function`` on the operator's ``sys.path``, on one or more hook
points. ``commands.json`` declares commands, each answered by a HookDef of the same plugin, which
that command then *owns*.

A command-owned HookDef must declare exactly ``points: ["command.invoked.in"]``, and it is only
ever registered as its command's body, wrapped in
:class:`~tiny_harness.core.commands.registry.ForCommand`: it sees its own command and nothing
else. That is resolved before any ordinary hook is registered, so a body can never also run
unfiltered. Ordinary HookDefs see every command, which is how policy hooks are meant to work.

Plugin folders are operator configuration, read once at start-up with plain file I/O; no
participant can name one. A file that cannot be read at all is a :class:`PluginError` (the
operator does not start half-configured); a single bad entry is skipped and reported in the
:class:`LoadReport` the operator logs.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tiny_harness.core.command_spec import CommandSpec
from tiny_harness.core.commands.command_errors import CommandError, HookError, PluginError
from tiny_harness.core.commands.hooks import DEFAULT_PRIORITY, HookPoint, is_async
from tiny_harness.core.commands.registry import COMMAND_INVOKED_IN, CommandRegistry

HOOKS_FILE: Final = "hooks.json"
COMMANDS_FILE: Final = "commands.json"

HOOK_NAME_PATTERN: Final = r"^[a-z][a-z0-9._-]*$"
EXECUTOR_PATTERN: Final = (
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
    r":[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
)

#: The hook points a HookDef may name (kept equal to ``hooks.HOOK_POINT_NAMES`` by a test).
HookPointName = Literal[
    "command.invoked.pre",
    "command.invoked.in",
    "command.invoked.post",
    "task.complete.pre",
    "task.complete.in",
    "task.complete.post",
]

#: The only points a command-owned HookDef may declare.
COMMAND_BODY_POINTS: Final = (str(COMMAND_INVOKED_IN),)


# -- the file formats -----------------------------------------------------------------------------


class _FileModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class HookDef(_FileModel):
    """One executor of a plugin, on the points it names."""

    name: str = Field(
        min_length=1,
        max_length=128,
        pattern=HOOK_NAME_PATTERN,
        description="The hook's name, unique in its plugin: [a-z][a-z0-9._-]*.",
    )
    points: tuple[HookPointName, ...] = Field(
        min_length=1,
        description="Where it runs, e.g. ['command.invoked.pre']. A hook named by a command in "
        "commands.json must declare exactly ['command.invoked.in'].",
    )
    priority: int = Field(
        default=DEFAULT_PRIORITY,
        description="Lower runs first. The built-in role check runs at 100, built-in command "
        "bodies at 500.",
    )
    executor: str = Field(
        pattern=EXECUTOR_PATTERN,
        description="The Python import path of a callable taking the context: 'module:function'. "
        "It may be async, except on task.complete points.",
    )
    description: str = Field(default="", max_length=1024, description="What the hook does.")


class HooksFile(_FileModel):
    """``<plugin>/hooks.json``."""

    schema_: str | None = Field(default=None, alias="$schema", description="This file's schema.")
    hooks: tuple[HookDef, ...] = Field(default=(), description="The plugin's executors.")


class CommandEntry(CommandSpec):
    """One command of a plugin: what clients see, and the HookDef that answers it."""

    hook: str = Field(
        min_length=1,
        max_length=128,
        pattern=HOOK_NAME_PATTERN,
        description="The name of the HookDef in the same plugin's hooks.json that answers the "
        "command; it must declare exactly ['command.invoked.in'] and no other command may name it.",
    )
    override: bool = Field(
        default=False,
        description="Replace a command of the same name (a built-in, say) instead of being "
        "skipped.",
    )

    @property
    def spec(self) -> CommandSpec:
        return CommandSpec(
            name=self.name, description=self.description, argument_hint=self.argument_hint
        )


class CommandsFile(_FileModel):
    """``<plugin>/commands.json``."""

    schema_: str | None = Field(default=None, alias="$schema", description="This file's schema.")
    commands: tuple[CommandEntry, ...] = Field(default=(), description="The plugin's commands.")


# -- the load report ------------------------------------------------------------------------------


class ComponentKind(StrEnum):
    HOOK = "hook"
    COMMAND = "command"


@dataclass(frozen=True)
class SkippedComponent:
    """A hook or command a plugin declares that was not registered, and why."""

    kind: ComponentKind
    name: str
    reason: str
    plugin: str = ""

    def __str__(self) -> str:
        what = f"/{self.name}" if self.kind is ComponentKind.COMMAND else repr(self.name)
        where = f"plugin {self.plugin!r}: " if self.plugin else ""
        return f"{where}skipped {self.kind.value} {what}: {self.reason}"


@dataclass(frozen=True)
class LoadReport:
    """What loading plugins registered and what it skipped; the operator logs it at start-up."""

    plugins: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    skipped: tuple[SkippedComponent, ...] = ()

    def __add__(self, other: LoadReport) -> LoadReport:
        return LoadReport(
            self.plugins + other.plugins,
            self.hooks + other.hooks,
            self.commands + other.commands,
            self.skipped + other.skipped,
        )

    def lines(self) -> list[str]:
        """One line for what was loaded, then one per skipped component."""
        head = (
            f"plugins loaded: {', '.join(self.plugins) or 'none'}; "
            f"hooks: {', '.join(self.hooks) or 'none'}; "
            f"commands: {', '.join('/' + c for c in self.commands) or 'none'}"
        )
        return [head, *(str(s) for s in self.skipped)]


# -- loading --------------------------------------------------------------------------------------


def load_plugins(directories: Iterable[Path], registry: CommandRegistry) -> LoadReport:
    """Load each plugin folder into ``registry`` (commands) and its runner (hooks), in order."""
    report = LoadReport()
    for directory in directories:
        report += load_plugin(Path(directory), registry)
    return report


def load_plugin(directory: Path, registry: CommandRegistry) -> LoadReport:
    """Load one plugin folder; its name is the plugin's namespace.

    Raises :class:`PluginError` when the folder or one of its files cannot be read at all.
    """
    return _PluginLoad(directory, registry).run()


def import_executor(path: str) -> Callable[[Any], object]:
    """The callable at ``module:attr.attr``; any failure to import it propagates."""
    module_name, _, attributes = path.partition(":")
    target: Any = importlib.import_module(module_name)
    for attribute in attributes.split("."):
        target = getattr(target, attribute)
    if not callable(target):
        raise TypeError(f"{type(target).__name__} is not callable")
    loaded: Callable[[Any], object] = target
    return loaded


class _PluginLoad:
    def __init__(self, directory: Path, registry: CommandRegistry) -> None:
        self.directory = directory
        self.ns = directory.name
        self.registry = registry
        self.skipped: list[SkippedComponent] = []
        self.hooks: list[str] = []
        self.commands: list[str] = []

    def skip(self, kind: ComponentKind, name: str, reason: str) -> None:
        self.skipped.append(SkippedComponent(kind, name, reason, self.ns))

    def run(self) -> LoadReport:
        if not self.directory.is_dir():
            raise PluginError(self.directory, "is not a directory")
        hooks_path = self.directory / HOOKS_FILE
        commands_path = self.directory / COMMANDS_FILE
        if not hooks_path.is_file() and not commands_path.is_file():
            raise PluginError(self.directory, f"holds neither {HOOKS_FILE} nor {COMMANDS_FILE}")
        raw_hooks = _entries(hooks_path, "hooks") if hooks_path.is_file() else []
        raw_commands = _entries(commands_path, "commands") if commands_path.is_file() else []

        hookdefs = self.hook_defs(raw_hooks)
        # Every hook a commands.json entry names is command-owned, even when the entry is
        # invalid: such a hook is never registered unfiltered, so it never sees other commands.
        owned: dict[str, str] = {}
        for index, raw in enumerate(raw_commands):
            if isinstance(raw.get("hook"), str):
                owned.setdefault(raw["hook"], _entry_name(raw, index))
        bodies = self.register_commands(raw_commands, hookdefs)
        for name, hookdef in hookdefs.items():
            if name in bodies:
                continue
            if name in owned:
                self.skip(
                    ComponentKind.HOOK,
                    name,
                    f"it is the body of command {owned[name]!r} in {COMMANDS_FILE}, which was "
                    "skipped; a command's body is never registered unfiltered",
                )
                continue
            self.register_hook(hookdef)
        return LoadReport((self.ns,), tuple(self.hooks), tuple(self.commands), tuple(self.skipped))

    def hook_defs(self, raw_hooks: list[Mapping[str, Any]]) -> dict[str, HookDef]:
        hookdefs: dict[str, HookDef] = {}
        for index, raw in enumerate(raw_hooks):
            try:
                hookdef = HookDef.model_validate(raw)
            except ValidationError as exc:
                self.skip(ComponentKind.HOOK, _entry_name(raw, index), _invalid(exc))
                continue
            if hookdef.name in hookdefs:
                reason = f"declared twice in {HOOKS_FILE}; the first is kept"
                self.skip(ComponentKind.HOOK, hookdef.name, reason)
                continue
            hookdefs[hookdef.name] = hookdef
        return hookdefs

    def register_commands(
        self, raw_commands: list[Mapping[str, Any]], hookdefs: Mapping[str, HookDef]
    ) -> set[str]:
        """Register each valid command with its body; returns the hooks now used as bodies."""
        claimed: dict[str, str] = {}
        bodies: set[str] = set()
        for index, raw in enumerate(raw_commands):
            try:
                entry = CommandEntry.model_validate(raw)
            except ValidationError as exc:
                self.skip(ComponentKind.COMMAND, _entry_name(raw, index), _invalid(exc))
                continue
            reason = self.command_refusal(entry, hookdefs, claimed)
            claimed.setdefault(entry.hook, entry.name)
            if reason is not None:
                self.skip(ComponentKind.COMMAND, entry.name, reason)
                continue
            hookdef = hookdefs[entry.hook]
            try:
                executor = import_executor(hookdef.executor)
            except Exception as exc:
                self.skip(ComponentKind.COMMAND, entry.name, _unloadable(hookdef, exc))
                continue
            try:
                self.registry.register(
                    entry.spec,
                    executor,
                    priority=hookdef.priority,
                    override=entry.override,
                    hook=f"{self.ns}/{hookdef.name}",
                )
            except CommandError as exc:
                self.skip(ComponentKind.COMMAND, entry.name, str(exc))
                continue
            bodies.add(entry.hook)
            self.commands.append(entry.name)
        return bodies

    def command_refusal(
        self, entry: CommandEntry, hookdefs: Mapping[str, HookDef], claimed: Mapping[str, str]
    ) -> str | None:
        if entry.hook in claimed:
            return f"hook {entry.hook!r} is already named by /{claimed[entry.hook]}"
        if entry.name in self.registry and not entry.override:
            return f'/{entry.name} is already registered; set "override": true to replace it'
        hookdef = hookdefs.get(entry.hook)
        if hookdef is None:
            return f"hook {entry.hook!r} names no valid HookDef in {self.ns}/{HOOKS_FILE}"
        if hookdef.points != COMMAND_BODY_POINTS:
            return (
                f"hook {entry.hook!r} is a command body, so it must declare exactly points "
                f'["command.invoked.in"]; it declares {list(hookdef.points)}. Declare any other '
                "point in a separate HookDef"
            )
        return None

    def register_hook(self, hookdef: HookDef) -> None:
        try:
            executor = import_executor(hookdef.executor)
        except Exception as exc:
            self.skip(ComponentKind.HOOK, hookdef.name, _unloadable(hookdef, exc))
            return
        points = tuple(HookPoint.parse(p) for p in dict.fromkeys(hookdef.points))
        sync_only = [str(p) for p in points if p.operation.synchronous]
        if sync_only and is_async(executor):
            self.skip(
                ComponentKind.HOOK,
                hookdef.name,
                f"executor {hookdef.executor!r} is async, but {', '.join(sync_only)} takes "
                "synchronous executors only",
            )
            return
        label = f"{self.ns}/{hookdef.name}"
        try:
            for point in points:
                self.registry.hooks.register(point, executor, priority=hookdef.priority, name=label)
        except HookError as exc:
            self.skip(ComponentKind.HOOK, hookdef.name, str(exc))
            return
        self.hooks.append(label)


def _entries(path: Path, key: str) -> list[Mapping[str, Any]]:
    """The entries of a plugin file: ``{"$schema"?: ..., key: [ {...}, ... ]}``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise PluginError(path, f"cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise PluginError(path, f"is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PluginError(path, f'must be a JSON object {{"{key}": [...]}}')
    unknown = sorted(set(data) - {"$schema", key})
    if unknown:
        raise PluginError(path, f"has unknown top-level key(s) {unknown}; only {key!r} is read")
    entries = data.get(key, [])
    if not isinstance(entries, list):
        raise PluginError(path, f"{key!r} must be a list")
    # An entry that is not an object becomes an empty one, which fails validation and is
    # skipped with the other invalid entries.
    return [e if isinstance(e, dict) else {} for e in entries]


def _entry_name(raw: Mapping[str, Any], index: int) -> str:
    name = raw.get("name")
    return name if isinstance(name, str) and name else f"#{index}"


def _invalid(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    return f"invalid {loc or 'entry'}: {first['msg']}"


def _unloadable(hookdef: HookDef, exc: Exception) -> str:
    return f"executor {hookdef.executor!r} does not load: {type(exc).__name__}: {exc}"
