"""Building the command registry the operator runs with, in one call.

The order is fixed so that start-up is predictable: the built-ins first, then what code
registers, then the plugins, then freeze. Code or a plugin that wants to replace a built-in says
so (``override=True``, ``"override": true``); a name registered twice without it is an error
from code and a skipped entry from a plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.commands.builtins import register_builtins
from tiny_harness.core.commands.hooks import HookRunner
from tiny_harness.core.commands.plugins import LoadReport, load_plugins
from tiny_harness.core.commands.registry import CommandRegistry


class BuiltCommands(NamedTuple):
    """A frozen registry (and, through it, its hook runner) and what loading plugins did."""

    registry: CommandRegistry
    report: LoadReport

    @property
    def hooks(self) -> HookRunner:
        return self.registry.hooks


def build_command_registry(
    catalog: ModelCatalog,
    *,
    plugin_dirs: Iterable[Path] = (),
    builtin_commands: bool = True,
    configure: Callable[[CommandRegistry], None] | None = None,
) -> BuiltCommands:
    """The frozen registry: built-ins (unless ``builtin_commands=False``), then ``configure``
    (which may register commands on the registry and hooks on ``registry.hooks``), then each
    plugin folder in ``plugin_dirs``.

    Raises :class:`~.command_errors.CommandError` or :class:`~.command_errors.HookError` for a
    bad registration from code, and :class:`~.command_errors.PluginError` for a plugin file that
    cannot be read.
    """
    registry = CommandRegistry()
    if builtin_commands:
        register_builtins(registry, catalog)
    if configure is not None:
        configure(registry)
    report = load_plugins(plugin_dirs, registry)
    registry.freeze()
    return BuiltCommands(registry, report)
