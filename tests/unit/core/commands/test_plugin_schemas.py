"""The plugin file schemas under docs/plugins/: committed files match the loader's models, and
the files a plugin author writes validate against them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest

from tiny_harness.core.commands import plugin_schemas
from tiny_harness.core.commands.hooks import HOOK_POINT_NAMES
from tiny_harness.core.commands.plugins import HookPointName

PLUGINS_DIR = Path(__file__).resolve().parents[4] / "docs" / "plugins"

HOOKS_EXAMPLE: dict[str, Any] = {
    "$schema": "https://madarauchiha-314.github.io/tiny-harness/plugins/hooks.json",
    "hooks": [
        {"name": "deploy-body", "points": ["command.invoked.in"], "executor": "acme.hooks:deploy"},
        {
            "name": "audit",
            "points": ["command.invoked.pre", "command.invoked.post"],
            "priority": 200,
            "executor": "acme.hooks:Audit.record",
            "description": "Writes every command to the audit log",
        },
    ],
}
COMMANDS_EXAMPLE: dict[str, Any] = {
    "commands": [
        {
            "name": "deploy",
            "description": "Deploy the task's output",
            "argument_hint": "<env>",
            "hook": "deploy-body",
        },
        {"name": "status", "description": "Short status", "hook": "s", "override": True},
    ]
}


def validator(name: str) -> jsonschema.protocols.Validator:
    schema: dict[str, Any] = json.loads((PLUGINS_DIR / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_committed_schemas_are_generated_from_the_models() -> None:
    assert plugin_schemas.stale_files(PLUGINS_DIR) == [], (
        "run: python -m tiny_harness.core.commands.plugin_schemas --write"
    )


def test_the_hook_points_a_plugin_may_name_are_the_runners() -> None:
    assert get_args(HookPointName) == HOOK_POINT_NAMES


def test_plugin_files_as_documented_validate() -> None:
    validator("hooks.json").validate(HOOKS_EXAMPLE)
    validator("commands.json").validate(COMMANDS_EXAMPLE)


@pytest.mark.parametrize(
    ("name", "document"),
    [
        ("hooks.json", {"hooks": [{"name": "x", "points": ["nowhere"], "executor": "a:b"}]}),
        ("hooks.json", {"hooks": [{"name": "x", "points": [], "executor": "a:b"}]}),
        ("hooks.json", {"hooks": [{"name": "x", "points": ["task.complete.in"], "executor": "a"}]}),
        ("commands.json", {"commands": [{"name": "Bad", "description": "d", "hook": "h"}]}),
        ("commands.json", {"commands": [{"name": "ok", "description": "d"}]}),
        ("commands.json", {"commands": [], "extra": 1}),
    ],
)
def test_invalid_plugin_files_do_not_validate(name: str, document: dict[str, Any]) -> None:
    assert list(validator(name).iter_errors(document))


def test_check_reports_stale_files_and_write_fixes_them(tmp_path: Path) -> None:
    out: list[str] = []
    assert plugin_schemas.main(["--check", "--dir", str(tmp_path)], out=out.append) == 1
    assert len(out) == 2
    assert "--write" in out[0]
    assert plugin_schemas.main(["--write", "--dir", str(tmp_path)], out=out.append) == 0
    assert plugin_schemas.main(["--check", "--dir", str(tmp_path)], out=out.append) == 0
    assert (tmp_path / "hooks.json").read_text(encoding="utf-8") == (
        PLUGINS_DIR / "hooks.json"
    ).read_text(encoding="utf-8")
