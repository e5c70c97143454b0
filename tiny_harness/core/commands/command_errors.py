"""Typed errors of commands, hooks and plugins, each with a message that says what to fix.

They live apart from :mod:`tiny_harness.core.errors` because they belong to one feature, and
in a module that imports nothing of the feature so that the hook runner, the command registry and
the plugin loader can all raise them without importing each other.
"""

from __future__ import annotations

from pathlib import Path

from tiny_harness.core.errors import HarnessError


class CommandError(HarnessError):
    """A command registered from code that cannot be accepted (a bad or duplicate name), or a
    registry used out of order. Raised at start-up, so the operator never runs half-configured."""


class HookError(HarnessError):
    """A hook executor that cannot be registered, or that broke its contract while running
    (returned something other than its context, aborted outside a pre chain, was async on a
    synchronous operation)."""


class HookAbort(HarnessError):
    """Raised by a *pre* executor to refuse the operation; ``reason`` is shown to the sender.

    For ``command.invoked`` the command's reply becomes ``refused: <reason>`` and its intents
    are dropped; for ``task.complete`` no override is granted.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PluginError(HarnessError):
    """A plugin folder or file that cannot be read at all (missing, not JSON, wrong top-level
    shape). Single invalid entries are not errors: they are skipped and reported."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"plugin file {path}: {problem}")
        self.path = path
        self.problem = problem
