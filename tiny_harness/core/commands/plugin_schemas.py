"""The published JSON Schemas of the plugin files, generated from the loader's pydantic models.

Plugin authors (and their editors) validate ``hooks.json`` and ``commands.json`` against
``docs/plugins/{hooks,commands}.json``. Those files are never edited by hand: they are cut from
:class:`~tiny_harness.core.commands.plugins.HooksFile` and
:class:`~tiny_harness.core.commands.plugins.CommandsFile`, and a unit test fails when a
committed file differs from what this module generates. Regenerate them with::

    python -m tiny_harness.core.commands.plugin_schemas --write

and check them (exit status 1, listing the stale files) with ``--check``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel

from tiny_harness.core.commands.plugins import COMMANDS_FILE, HOOKS_FILE, CommandsFile, HooksFile
from tiny_harness.core.generated import GeneratedSet
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


GENERATED: Final = GeneratedSet(
    module="tiny_harness.core.commands.plugin_schemas",
    description="Generate or check the plugin file JSON Schemas under docs/plugins/.",
    default_dir=DEFAULT_DIR,
    files=generated_files,
)
stale_files = GENERATED.stale
write_files = GENERATED.write
main = GENERATED.main


if __name__ == "__main__":
    sys.exit(main())
