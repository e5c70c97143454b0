"""The published JSON Schemas of our A2A extensions, generated from the pydantic models.

Clients in other languages validate against ``docs/a2a/ext/{task,status,commands}.json``. Those
files are never edited by hand: they are cut from :class:`~tiny_harness.core.task.TaskExtension`,
:class:`~tiny_harness.core.status_ext.StatusExtensionData` and
:class:`~tiny_harness.core.command_spec.CommandsExtensionParams` by field name (snake_case, the
wire spelling), and a unit test fails when a committed file differs from what this module
generates. Regenerate them with::

    python -m tiny_harness.core.schemas --write

and check them (exit status 1, listing the stale files) with ``--check``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel

from tiny_harness.core.command_spec import CommandsExtensionParams
from tiny_harness.core.extensions import (
    COMMANDS_EXT_URI,
    STATUS_EXT_KEY,
    STATUS_EXT_URI,
    TASK_EXT_KEY,
    TASK_EXT_URI,
)
from tiny_harness.core.status_ext import StatusExtensionData
from tiny_harness.core.task import TaskExtension

JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

#: Where the schemas live in a source checkout (the repository's docs/a2a/ext/).
DEFAULT_DIR: Final = Path(__file__).resolve().parents[2] / "docs" / "a2a" / "ext"


@dataclass(frozen=True)
class ExtensionSchema:
    """One published schema: its file, the extension it describes, the model it is cut from."""

    filename: str
    uri: str
    title: str
    description: str
    model: type[BaseModel]


EXTENSION_SCHEMAS: Final[tuple[ExtensionSchema, ...]] = (
    ExtensionSchema(
        filename="task.json",
        uri=TASK_EXT_URI,
        title="tiny-harness task extension v1",
        description=(
            f"The value under Task.metadata[{TASK_EXT_KEY!r}]: the "
            "task's goal, acceptance criteria, participants, parent and sub-task links and plan, "
            "plus the server-controlled lifecycle, model and reasoning_effort. A task envelope "
            "sent by a client has the same shape without sub_tasks and without the three "
            "server-controlled fields; an envelope carrying any of them is refused whole."
        ),
        model=TaskExtension,
    ),
    ExtensionSchema(
        filename="status.json",
        uri=STATUS_EXT_URI,
        title="tiny-harness status extension v1",
        description=(
            f"The value under metadata[{STATUS_EXT_KEY!r}] of a Task "
            "and of its TaskStatusUpdateEvent: the sub-state refining TASK_STATE_INPUT_REQUIRED. "
            "The key is absent when there is no sub-state."
        ),
        model=StatusExtensionData,
    ),
    ExtensionSchema(
        filename="commands.json",
        uri=COMMANDS_EXT_URI,
        title="tiny-harness commands extension v1",
        description=(
            "The params of the agent card extension "
            f"{COMMANDS_EXT_URI}: the /commands this harness accepts, each name once."
        ),
        model=CommandsExtensionParams,
    ),
)


def schema_id(uri: str) -> str:
    """The ``$id`` of an extension's schema: the extension URI with ``.json`` appended."""
    return f"{uri}.json"


def _strip_kubernetes(node: Any) -> Any:
    # The CEL rules (x-kubernetes-validations) belong to the CRD; A2A clients have no use for them.
    if isinstance(node, dict):
        return {
            k: _strip_kubernetes(v) for k, v in node.items() if not k.startswith("x-kubernetes-")
        }
    if isinstance(node, list):
        return [_strip_kubernetes(v) for v in node]
    return node


def generate(entry: ExtensionSchema) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one extension, by field name."""
    body = _strip_kubernetes(entry.model.model_json_schema(by_alias=False, mode="validation"))
    body.pop("title", None)
    body.pop("description", None)
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": schema_id(entry.uri),
        "title": entry.title,
        "description": entry.description,
        **body,
    }


def render(schema: dict[str, Any]) -> str:
    """The exact text of a schema file: two-space indent, UTF-8, one trailing newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def generated_files() -> dict[str, str]:
    """Every schema file's name and the text it must have."""
    return {entry.filename: render(generate(entry)) for entry in EXTENSION_SCHEMAS}


def stale_files(directory: Path = DEFAULT_DIR) -> list[str]:
    """The schema files in ``directory`` that are missing or differ from the generated text."""
    stale = []
    for name, text in generated_files().items():
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    return stale


def write_files(directory: Path = DEFAULT_DIR) -> list[Path]:
    """(Re)write every schema file in ``directory``; returns the paths that changed."""
    directory.mkdir(parents=True, exist_ok=True)
    changed = []
    for name in stale_files(directory):
        path = directory / name
        path.write_text(generated_files()[name], encoding="utf-8")
        changed.append(path)
    return changed


def main(argv: Sequence[str] | None = None, *, out: Callable[[str], None] = print) -> int:
    """``python -m tiny_harness.core.schemas (--write | --check) [--dir DIR]``."""
    parser = argparse.ArgumentParser(
        prog="python -m tiny_harness.core.schemas",
        description="Generate or check the A2A extension JSON Schemas under docs/a2a/ext/.",
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
        out(f"stale: {directory / name} (run: python -m tiny_harness.core.schemas --write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
