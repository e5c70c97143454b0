"""The published JSON Schemas of the plugin files, generated from the loader's pydantic models.

Plugin authors (and their editors) validate ``hooks.json`` and ``commands.json`` against
``docs/plugins/{hooks,commands}.json``. Those files are never edited by hand: they are cut from
:class:`~tiny_harness.core.plugins.HooksFile` and :class:`~tiny_harness.core.plugins.CommandsFile`,
and a unit test fails when a committed file differs from what this module generates. Regenerate
them with::

    python -m tiny_harness.core.commands.plugin_schemas --write

and check them (exit status 1, listing the stale files) with ``--check``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel

from tiny_harness.core.plugins import COMMANDS_FILE, HOOKS_FILE, CommandsFile, HooksFile
from tiny_harness.core.schemas import JSON_SCHEMA_DIALECT, render

#: Where the schemas are published; a plugin file may name one in its ``$schema``.
SCHEMA_BASE: Final = "https://madarauchiha-314.github.io/tiny-harness/plugins"

#: Where the schemas live in a source checkout (the repository's docs/plugins/).
DEFAULT_DIR: Final = Path(__file__).resolve().parents[3] / "docs" / "plugins"


@dataclass(frozen=True)
class PluginSchema:
    filename: str
    title: str
    description: str
    model: type[BaseModel]


PLUGIN_SCHEMAS: Final[tuple[PluginSchema, ...]] = (
    PluginSchema(
        filename=HOOKS_FILE,
        title="tiny-harness plugin hooks.json",
        description=(
            "A plugin's executors: each a Python import path 'module:function' on one or more "
            "hook points, run in priority order (lower first). A hook named by a command in the "
            "same plugin's commands.json is that command's body: it must declare exactly "
            "points ['command.invoked.in'] and only ever sees its own command."
        ),
        model=HooksFile,
    ),
    PluginSchema(
        filename=COMMANDS_FILE,
        title="tiny-harness plugin commands.json",
        description=(
            "A plugin's /commands: what clients see (name, description, argument_hint) and the "
            "HookDef in the same plugin's hooks.json that answers each. An entry that cannot be "
            "registered is skipped and reported when the operator starts."
        ),
        model=CommandsFile,
    ),
)


def generate(entry: PluginSchema) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one plugin file, by alias (``$schema``)."""
    body = entry.model.model_json_schema(by_alias=True, mode="validation")
    body.pop("title", None)
    body.pop("description", None)
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": f"{SCHEMA_BASE}/{entry.filename}",
        "title": entry.title,
        "description": entry.description,
        **body,
    }


def generated_files() -> dict[str, str]:
    """Every schema file's name and the text it must have."""
    return {entry.filename: render(generate(entry)) for entry in PLUGIN_SCHEMAS}


def stale_files(directory: Path = DEFAULT_DIR) -> list[str]:
    """The schema files in ``directory`` that are missing or differ from the generated text."""
    return [
        name
        for name, text in generated_files().items()
        if not (directory / name).is_file()
        or (directory / name).read_text(encoding="utf-8") != text
    ]


def write_files(directory: Path = DEFAULT_DIR) -> list[Path]:
    """(Re)write every stale schema file in ``directory``; returns the paths that changed."""
    directory.mkdir(parents=True, exist_ok=True)
    texts = generated_files()
    changed = []
    for name in stale_files(directory):
        path = directory / name
        path.write_text(texts[name], encoding="utf-8")
        changed.append(path)
    return changed


def main(argv: Sequence[str] | None = None, *, out: Callable[[str], None] = print) -> int:
    """``python -m tiny_harness.core.commands.plugin_schemas (--write | --check) [--dir DIR]``."""
    parser = argparse.ArgumentParser(
        prog="python -m tiny_harness.core.commands.plugin_schemas",
        description="Generate or check the plugin file JSON Schemas under docs/plugins/.",
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the schema files")
    mode.add_argument("--check", action="store_true", help="exit 1 if a schema file is stale")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="the schema directory")
    args = parser.parse_args(argv)
    directory: Path = args.dir
    if args.write:
        for path in write_files(directory):
            out(f"wrote {path}")
        return 0
    stale = stale_files(directory)
    for name in stale:
        out(
            f"stale: {directory / name} "
            "(run: python -m tiny_harness.core.commands.plugin_schemas --write)"
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
