"""Helpers shared by the command tests (and the command abuse tests): a catalog, a task
snapshot, messages as participants send them, and small plugin folders on disk.

Everything here uses the real parts: a real ModelCatalog, the real registry with the built-ins,
the real parser and runner; only the task is a snapshot built by hand.
"""

from __future__ import annotations

import itertools
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.commands.context import ChildSnapshot, CommandResult, TaskSnapshot
from tiny_harness.core.commands.parse import parse_command
from tiny_harness.core.commands.registry import CommandRegistry
from tiny_harness.core.commands.run import run_command
from tiny_harness.core.commands.setup import build_command_registry
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import Role
from tiny_harness.core.turn import TaskSettings

CATALOG = ModelCatalog(default="gpt-4o", selectable=("gpt-4o", "gpt-5", "o4-mini"))

#: Who is on the task, and as what.
ROLES: dict[str, Role] = {
    "alice": Role.REPORTER,
    "bob": Role.WATCHER,
    "agent": Role.ASSIGNEE,
    "root": Role.ADMIN,
}


def snapshot(**fields: Any) -> TaskSnapshot:
    base: dict[str, Any] = {
        "id": "t1",
        "name": "trip",
        "state": TaskState.INPUT_REQUIRED,
        "sub_state": SubState.AWAITING_NEXT_MESSAGE.value,
        "settings": TaskSettings(),
        "steps_done": 1,
        "steps_total": 3,
        "children": (
            ChildSnapshot(task_id="t1.1", state=TaskState.WORKING),
            ChildSnapshot(task_id="t1.2", state=TaskState.COMPLETED),
        ),
    }
    base.update(fields)
    return TaskSnapshot(**base)


_ids = itertools.count()


def message(text: str, sender: str = "alice") -> MessageSpec:
    return MessageSpec(
        task="t1", message_id=f"m{next(_ids)}", sender=sender, parts=(MessagePart(text=text),)
    )


def registry(**kwargs: Any) -> CommandRegistry:
    """The frozen registry the operator would build: built-ins, no plugins."""
    return build_command_registry(CATALOG, **kwargs).registry


async def send(
    reg: CommandRegistry,
    text: str,
    sender: str = "alice",
    *,
    task: TaskSnapshot | None = None,
) -> CommandResult | None:
    """What the operator does with a participant's message: None when it goes to the model."""
    call = parse_command(message(text, sender), reg)
    if call is None:
        return None
    return await run_command(
        reg.hooks,
        call,
        sender=sender,
        role=ROLES.get(sender),
        snapshot=task or snapshot(),
        catalog=CATALOG,
    )


class PluginFactory:
    """Writes plugin folders and executor modules under a test's tmp_path."""

    _modules = itertools.count()

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.modules_dir = root / "modules"
        self.modules_dir.mkdir(parents=True, exist_ok=True)
        monkeypatch.syspath_prepend(str(self.modules_dir))

    def module(self, source: str) -> str:
        """Write an executor module with a unique name and return that name."""
        name = f"th_plugin_mod_{next(self._modules)}"
        (self.modules_dir / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        return name

    def plugin(
        self,
        ns: str,
        *,
        hooks: list[dict[str, Any]] | None = None,
        commands: list[dict[str, Any]] | None = None,
    ) -> Path:
        folder = self.root / "plugins" / ns
        folder.mkdir(parents=True, exist_ok=True)
        if hooks is not None:
            (folder / "hooks.json").write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
        if commands is not None:
            (folder / "commands.json").write_text(
                json.dumps({"commands": commands}), encoding="utf-8"
            )
        return folder
