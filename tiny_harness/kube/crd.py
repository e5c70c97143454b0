"""The ``HarnessTask`` CustomResourceDefinition, generated from the core task model.

:class:`~tiny_harness.core.task.TaskSpec` and :class:`~tiny_harness.core.task.TaskStatus` are
the one definition of a task; this module turns their JSON Schema (by alias, camelCase) into the
structural OpenAPI v3 schema the API server needs, keeping the CEL rules declared on the models.
``crds/harnesstasks.yaml`` is this module's output, written by ``python -m tiny_harness.kube.crd
--write`` and compared by a test, so the CRD cannot drift from the model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final

import yaml

from tiny_harness.core.task import TaskSpec, TaskStatus
from tiny_harness.kube.names import GROUP, KIND, PLURAL, SHORT_NAME, SINGULAR, VERSION

CRD_NAME: Final = f"{PLURAL}.{GROUP}"
REPO_ROOT: Final = Path(__file__).resolve().parents[2]
CRD_FILES: Final = (
    REPO_ROOT / "crds" / "harnesstasks.yaml",
    REPO_ROOT / "charts" / "tiny-harness" / "crds" / "harnesstasks.yaml",
)

# Keywords of pydantic's JSON Schema that a structural schema either forbids or that we do not
# want the API server to act on (defaults would be written into every stored object).
_DROPPED: Final = frozenset({"title", "default", "additionalProperties", "$defs", "examples"})


def structural(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Turn a pydantic JSON Schema into a structural schema: refs inlined, optional-as-null
    folded into ``nullable``, and keywords the API server does not accept removed."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return structural(merged, defs)
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if o.get("type") != "null"]
        if len(options) != 1:
            raise ValueError(f"cannot express this union in a structural schema: {schema}")
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        folded = structural({**options[0], **rest}, defs)
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
    return out


def _schema_of(model: type[TaskSpec] | type[TaskStatus]) -> dict[str, Any]:
    return structural(model.model_json_schema(by_alias=True, mode="validation"))


def crd_manifest() -> dict[str, Any]:
    """The CRD as a plain manifest."""
    spec_schema = _schema_of(TaskSpec)
    status_schema = _schema_of(TaskStatus)
    spec_schema["description"] = "What a participant asks for: the task's goal and people."
    status_schema["description"] = "What the operator reports; written only by the operator."
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
                "shortNames": [SHORT_NAME],
                "categories": ["harness"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        _column("State", ".status.state"),
                        _column("Sub-state", ".status.subState"),
                        _column("Lifecycle", ".status.lifecycle"),
                        _column("Parent", ".spec.parent.taskId"),
                        _column("Age", ".metadata.creationTimestamp", "date"),
                        _column("Goal", ".spec.goal", priority=1),
                        _column("Model", ".status.model", priority=1),
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "description": "A tiny-harness task: one A2A task, run by the "
                            "tiny-harness operator.",
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec_schema,
                                "status": status_schema,
                            },
                        }
                    },
                }
            ],
        },
    }


def _column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


def render() -> str:
    header = (
        "# Generated from tiny_harness/core/task.py by `python -m tiny_harness.kube.crd --write`.\n"
        "# Do not edit by hand: change the model and regenerate.\n"
    )
    return header + yaml.safe_dump(crd_manifest(), sort_keys=False, width=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write or check the HarnessTask CRD files.")
    parser.add_argument("--write", action="store_true", help="write the generated CRD files")
    args = parser.parse_args(argv)
    text = render()
    stale = [p for p in CRD_FILES if not p.exists() or p.read_text() != text]
    if args.write:
        for path in stale:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(REPO_ROOT)}")
        return 0
    for path in stale:
        print(f"stale: {path.relative_to(REPO_ROOT)} (run python -m tiny_harness.kube.crd --write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
