"""The ``HarnessTask`` CustomResourceDefinition, generated from the core task model.

:class:`~tiny_harness.core.task.TaskSpec` and :class:`~tiny_harness.core.task.TaskStatus` are
the one definition of a task; this module turns their JSON Schema (by alias, camelCase) into the
structural OpenAPI v3 schema the API server needs, keeping every CEL rule declared on the models:
a rule the CRD adds (a message's immutability) goes beside them, never in place of one.
``crds/harnesstasks.yaml`` is this module's output, written by ``python -m tiny_harness.kube.crd
--write`` and compared by a test, so the CRD cannot drift from the model.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import BaseModel

from tiny_harness.core.agent import AgentSpec, AgentStatus
from tiny_harness.core.inbox import MessageSpec
from tiny_harness.core.task import TaskSpec, TaskStatus
from tiny_harness.core.tool_server import ToolServerSpec, ToolServerStatus
from tiny_harness.kube.names import (
    AGENT_KIND,
    AGENT_PLURAL,
    AGENT_SHORT_NAME,
    GROUP,
    KIND,
    MESSAGE_KIND,
    MESSAGE_PLURAL,
    MESSAGE_SHORT_NAME,
    PLURAL,
    SHORT_NAME,
    TOOL_SERVER_KIND,
    TOOL_SERVER_PLURAL,
    TOOL_SERVER_SHORT_NAME,
    TURN_KIND,
    TURN_PLURAL,
    TURN_SHORT_NAME,
    VERSION,
)

CRD_NAME: Final = f"{PLURAL}.{GROUP}"
REPO_ROOT: Final = Path(__file__).resolve().parents[2]
#: The top-level crds/ and the chart's crds/ hold the same generated files.
CRD_DIRS: Final = (REPO_ROOT / "crds", REPO_ROOT / "charts" / "tiny-harness" / "crds")

# Keywords of pydantic's JSON Schema that a structural schema either forbids or that we do not
# want the API server to act on (defaults would be written into every stored object).
_DROPPED: Final = frozenset({"title", "default", "additionalProperties", "$defs", "examples"})


#: The keyword of a schema's CEL rules.
RULES: Final = "x-kubernetes-validations"


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over``'s keywords over ``base``'s, except the CEL rules: both sets are kept (a field's
    own rules beside its model's), so no rule a model declares is ever lost."""
    merged = {**base, **over}
    rules = [*base.get(RULES, ()), *over.get(RULES, ())]
    if rules:
        merged[RULES] = rules
    return merged


def with_rules(schema: dict[str, Any], *rules: dict[str, str]) -> dict[str, Any]:
    """The schema with ``rules`` added after the ones it declares already."""
    return _merged(schema, {RULES: list(rules)})


def structural(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Turn a pydantic JSON Schema into a structural schema: refs inlined, optional-as-null
    folded into ``nullable``, and keywords the API server does not accept removed."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        merged = _merged(target, {k: v for k, v in schema.items() if k != "$ref"})
        return structural(merged, defs)
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if o.get("type") != "null"]
        if len(options) != 1:
            raise ValueError(f"cannot express this union in a structural schema: {schema}")
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        folded = structural(_merged(options[0], rest), defs)
        folded["nullable"] = True
        return folded
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED:
            continue
        if key == "properties":
            out[key] = {name: structural(sub, defs) for name, sub in value.items()}
        elif key == "items":
            out[key] = structural(value, defs)
        else:
            out[key] = value
    if "enum" in out and "type" not in out:
        out["type"] = "string"
    if out.get("type") == "object" and "properties" not in out:
        # A free-form JSON object (message data, metadata): kept as sent.
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return structural(model.model_json_schema(by_alias=True, mode="validation"))


def _turn_spec_schema() -> dict[str, Any]:
    """The turn record's spec. Its entries are the core loop's journal entries, validated by
    their own model when read; the API server only bounds them."""
    return {
        "description": "One turn's journal: what the operator took, asked and got, in order.",
        "type": "object",
        "required": ["task", "turn", "entries"],
        "properties": {
            "task": {"type": "string", "maxLength": 253, "description": "The task's name."},
            "turn": {"type": "integer", "minimum": 0, "description": "The turn number."},
            "chunk": {
                "type": "integer",
                "minimum": 0,
                "description": "Continuation index when one turn's journal spans objects.",
            },
            "lease": {
                "type": "integer",
                "minimum": 0,
                "description": "The runner lease epoch whose holder may append (the fence).",
            },
            "sealed": {
                "type": "boolean",
                "description": "Full: the turn goes on in the next chunk.",
            },
            "entries": {
                "type": "array",
                "maxItems": 4096,
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
            "history": {
                "description": "How the turn changed the model history; set when it ended.",
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "historyContinues": {
                "type": "boolean",
                "description": "The history delta goes on in the next chunk (it was too big "
                "for one); the turn has ended once a chunk without this holds the last piece.",
            },
        },
    }


@dataclass(frozen=True)
class _Kind:
    kind: str
    plural: str
    short_name: str
    description: str
    spec: dict[str, Any]
    status: dict[str, Any] | None
    columns: tuple[dict[str, Any], ...]
    file: str


def _kinds() -> tuple[_Kind, ...]:
    spec_schema = _schema_of(TaskSpec)
    status_schema = _schema_of(TaskStatus)
    spec_schema["description"] = "What a participant asks for: the task's goal and people."
    status_schema["description"] = "What the operator reports; written only by the operator."
    message_schema = with_rules(
        _schema_of(MessageSpec),
        {"rule": "self == oldSelf", "message": "spec: a message cannot be changed once sent"},
    )
    message_schema["description"] = "A participant's message to a task; immutable once created."
    return (
        _Kind(
            KIND,
            PLURAL,
            SHORT_NAME,
            "A tiny-harness task: one A2A task, run by the tiny-harness operator.",
            spec_schema,
            status_schema,
            (
                _column("State", ".status.state"),
                _column("Sub-state", ".status.subState"),
                _column("Lifecycle", ".status.lifecycle"),
                _column("Parent", ".spec.parent.taskId"),
                _column("Age", ".metadata.creationTimestamp", "date"),
                _column("Goal", ".spec.goal", priority=1),
                _column("Model", ".status.model", priority=1),
                _column("Active-s", ".status.activeSeconds", "number", priority=1),
                _column("Deadline-s", ".spec.activeDeadlineSeconds", "integer", priority=1),
                _column("Waiting-since", ".status.waitingSince", "date", priority=1),
                _column("Input-timeout-s", ".spec.inputTimeoutSeconds", "integer", priority=1),
                # JSONPath cannot count the calls that wait (Sub-state says that some do) and
                # the API server prints the first value a path finds: the first call's tool.
                _column("Approval-tool", ".status.approvals[*].tool", priority=1),
            ),
            "harnesstasks.yaml",
        ),
        _Kind(
            MESSAGE_KIND,
            MESSAGE_PLURAL,
            MESSAGE_SHORT_NAME,
            "A participant's message to a HarnessTask, waiting for the operator to take it.",
            message_schema,
            None,
            (
                _column("Task", ".spec.task"),
                _column("Sender", ".spec.sender"),
                _column("Age", ".metadata.creationTimestamp", "date"),
            ),
            "harnessmessages.yaml",
        ),
        _Kind(
            TURN_KIND,
            TURN_PLURAL,
            TURN_SHORT_NAME,
            "The journal of one turn of a HarnessTask, written only by the operator.",
            _turn_spec_schema(),
            None,
            (
                _column("Task", ".spec.task"),
                _column("Turn", ".spec.turn", "integer"),
                _column("Age", ".metadata.creationTimestamp", "date"),
            ),
            "harnessturns.yaml",
        ),
        _Kind(
            AGENT_KIND,
            AGENT_PLURAL,
            AGENT_SHORT_NAME,
            "A remote A2A agent the harness may delegate sub-tasks to, declared by a namespace "
            "admin; the operator reads its card into the status.",
            _described(_schema_of(AgentSpec), "Where the agent is and how to reach it."),
            _described(_schema_of(AgentStatus), "What the agent's card says; operator-written."),
            (
                _column("Ready", '.status.conditions[?(@.type=="Ready")].status'),
                _column("Agent", ".status.name"),
                _column("URL", ".status.url"),
                _column("Age", ".metadata.creationTimestamp", "date"),
                _column("Reason", '.status.conditions[?(@.type=="Ready")].reason', priority=1),
                _column("Card", ".spec.cardUrl", priority=1),
            ),
            "harnessagents.yaml",
        ),
        _tool_server_kind(),
    )


def _tool_server_kind() -> _Kind:
    spec = _schema_of(ToolServerSpec)
    status = _schema_of(ToolServerStatus)
    spec["description"] = "Where the MCP server is, its headers' Secrets, and its limits."
    status["description"] = "What the operator discovered; written only by the operator."
    ready = '.status.conditions[?(@.type=="Ready")]'
    return _Kind(
        TOOL_SERVER_KIND,
        TOOL_SERVER_PLURAL,
        TOOL_SERVER_SHORT_NAME,
        "An MCP tool server (streamable HTTP) whose tools tiny-harness tasks may call.",
        spec,
        status,
        (
            _column("URL", ".spec.url"),
            _column("Ready", f"{ready}.status"),
            _column("Tools", ".status.toolCount", "integer"),
            _column("Default", ".spec.default", "boolean"),
            _column("Age", ".metadata.creationTimestamp", "date"),
            _column("Reason", f"{ready}.reason", priority=1),
            _column("Message", f"{ready}.message", priority=1),
        ),
        "harnesstoolservers.yaml",
    )


def _described(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {**schema, "description": description}


def _manifest(k: _Kind) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": k.spec,
    }
    version: dict[str, Any] = {"name": VERSION, "served": True, "storage": True}
    if k.status is not None:
        properties["status"] = k.status
        version["subresources"] = {"status": {}}
    version["additionalPrinterColumns"] = list(k.columns)
    version["schema"] = {
        "openAPIV3Schema": {
            "description": k.description,
            "type": "object",
            "required": ["spec"],
            "properties": properties,
        }
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{k.plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": k.kind,
                "listKind": f"{k.kind}List",
                "plural": k.plural,
                "singular": k.kind.lower(),
                "shortNames": [k.short_name],
                "categories": ["harness"],
            },
            "scope": "Namespaced",
            "versions": [version],
        },
    }


def crd_manifests() -> dict[str, dict[str, Any]]:
    """Every CRD of tiny-harness, by file name."""
    return {k.file: _manifest(k) for k in _kinds()}


def crd_manifest() -> dict[str, Any]:
    """The HarnessTask CRD as a plain manifest."""
    return crd_manifests()["harnesstasks.yaml"]


def _column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


_HEADER: Final = (
    "# Generated from the tiny_harness models by `python -m tiny_harness.kube.crd --write`.\n"
    "# Do not edit by hand: change the model and regenerate.\n"
)


def render() -> dict[Path, str]:
    """The text of every generated CRD file, by path."""
    out: dict[Path, str] = {}
    for name, manifest in crd_manifests().items():
        text = _HEADER + yaml.safe_dump(manifest, sort_keys=False, width=100)
        for directory in CRD_DIRS:
            out[directory / name] = text
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write or check the generated CRD files.")
    parser.add_argument("--write", action="store_true", help="write the generated CRD files")
    args = parser.parse_args(argv)
    stale = [p for p, text in render().items() if not p.exists() or p.read_text() != text]
    if args.write:
        for path in stale:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render()[path])
            print(f"wrote {path.relative_to(REPO_ROOT)}")
        return 0
    for path in stale:
        print(f"stale: {path.relative_to(REPO_ROOT)} (run python -m tiny_harness.kube.crd --write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
