"""The published JSON Schemas of our A2A extensions, generated from the pydantic models.

Clients in other languages validate against ``docs/a2a/ext/{task,status,commands}.json`` and
``docs/a2a/ext/approval/v1.json``. Those files are never edited by hand: they are cut from
:class:`~tiny_harness.core.task.TaskExtension`,
:class:`~tiny_harness.core.status_ext.StatusExtensionData`,
:class:`~tiny_harness.core.command_spec.CommandsExtensionParams` and
:class:`~tiny_harness.core.control_envelope.ControlEnvelope` by field name (snake_case, the wire
spelling), and a unit test fails when a committed file differs from what this module generates.
Regenerate them with::

    python -m tiny_harness.core.schemas --write

and check them (exit status 1, listing the stale files) with ``--check``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel

from tiny_harness.core.command_spec import CommandsExtensionParams
from tiny_harness.core.control_envelope import ControlEnvelope
from tiny_harness.core.extensions import (
    APPROVAL_EXT_URI,
    COMMANDS_EXT_URI,
    EVENT_MEDIA_TYPE,
    STATUS_EXT_KEY,
    STATUS_EXT_URI,
    TASK_EXT_KEY,
    TASK_EXT_URI,
)
from tiny_harness.core.generated import GeneratedSet
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
    ExtensionSchema(
        filename="approval/v1.json",
        uri=APPROVAL_EXT_URI,
        title="tiny-harness approval extension v1",
        description=(
            "The control envelope a participant sends as a message's only part, a data part of "
            f"media type {EVENT_MEDIA_TYPE}: action approve or reject decides the call "
            "call_id that waits for approval (the task extension's approvals list them, with "
            "sub-state awaiting-approval); reason is for the history; arguments (approve only, "
            "when the call's requirement has allow_edit) replace the model's. Action complete "
            "(no other field) asks for the task to complete."
        ),
        model=ControlEnvelope,
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


GENERATED: Final = GeneratedSet(
    module="tiny_harness.core.schemas",
    description="Generate or check the A2A extension JSON Schemas under docs/a2a/ext/.",
    default_dir=DEFAULT_DIR,
    files=generated_files,
)
stale_files = GENERATED.stale
write_files = GENERATED.write
main = GENERATED.main


if __name__ == "__main__":
    sys.exit(main())
