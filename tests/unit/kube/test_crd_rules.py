"""Every CEL rule a model declares is in the CRD generated from it, at the same place.

The rules are found in the models' own JSON Schema (pydantic's, refs followed), not in what
``kube/crd.py`` makes of it, so a generator that drops or overwrites a rule (the message spec's
"at least one part, or a control" was once replaced by the immutability rule) fails here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import pytest
from pydantic import BaseModel

from tiny_harness.core.agent import AgentSpec, AgentStatus
from tiny_harness.core.inbox import MessageSpec
from tiny_harness.core.task import TaskSpec, TaskStatus
from tiny_harness.core.tool_server import ToolServerSpec, ToolServerStatus
from tiny_harness.kube.crd import crd_manifests

RULES: Final = "x-kubernetes-validations"

#: Each generated CRD file, and the model behind each of its top-level properties.
MODELS: Final[dict[str, dict[str, type[BaseModel]]]] = {
    "harnesstasks.yaml": {"spec": TaskSpec, "status": TaskStatus},
    "harnessmessages.yaml": {"spec": MessageSpec},
    "harnessagents.yaml": {"spec": AgentSpec, "status": AgentStatus},
    "harnesstoolservers.yaml": {"spec": ToolServerSpec, "status": ToolServerStatus},
    # harnessturns.yaml: a schema of its own, no model behind it.
}

Path = tuple[str, ...]
Rule = dict[str, Any]


def declared(
    schema: dict[str, Any], defs: dict[str, Any], at: Path = (), seen: frozenset[str] = frozenset()
) -> Iterator[tuple[Path, Rule]]:
    """Every rule in a pydantic JSON Schema, with the path (``properties``/``items``/...) of
    the node that declares it: on the node itself, on the model a ``$ref`` names, or on the one
    non-null option of an optional field."""
    yield from ((at, rule) for rule in schema.get(RULES, ()))
    ref = schema.get("$ref")
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if name not in seen:
            yield from declared(defs[name], defs, at, seen | {name})
    for option in schema.get("anyOf", ()):
        yield from declared(option, defs, at, seen)
    for name, sub in (schema.get("properties") or {}).items():
        yield from declared(sub, defs, (*at, "properties", name), seen)
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, dict):
            yield from declared(sub, defs, (*at, key), seen)


def model_rules(model: type[BaseModel]) -> list[tuple[Path, Rule]]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return list(declared(schema, schema.get("$defs", {})))


def generated_at(crd: dict[str, Any], top: str, path: Path) -> dict[str, Any]:
    node: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for key in ("properties", top, *path):
        node = node[key]
    return node


CASES: Final = [
    pytest.param(file, top, model, id=f"{file}:{top}")
    for file, tops in MODELS.items()
    for top, model in tops.items()
]


@pytest.mark.parametrize(("file", "top", "model"), CASES)
def test_every_rule_a_model_declares_is_in_its_crd(
    file: str, top: str, model: type[BaseModel]
) -> None:
    crd = crd_manifests()[file]
    missing = [
        (path, rule)
        for path, rule in model_rules(model)
        if rule not in generated_at(crd, top, path).get(RULES, [])
    ]
    assert missing == []


def test_every_crd_with_a_model_is_checked() -> None:
    assert set(crd_manifests()) - set(MODELS) == {"harnessturns.yaml"}


def test_the_message_spec_keeps_its_content_rule_beside_immutability() -> None:
    spec = generated_at(crd_manifests()["harnessmessages.yaml"], "spec", ())
    messages = [rule["message"] for rule in spec[RULES]]
    assert messages == [
        "spec.parts: a message needs at least one part, a control or a decision",
        "spec: a message cannot be changed once sent",
    ]
