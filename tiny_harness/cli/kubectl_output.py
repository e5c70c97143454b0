"""``-o json|yaml|name``: tasks printed as kubectl prints objects, for programs to read.

``kubectl harness list -o json`` is what ``kubectl get harnesstasks -o json`` would print for
the tasks the participant is on: a ``List`` (``apiVersion: v1``, ``items``, an empty
``resourceVersion``), each item a whole object with its ``apiVersion`` and ``kind`` and without
``metadata.managedFields`` (kubectl hides them by default); ``get -o json`` prints the one
object. JSON is indented by four spaces with sorted keys, YAML is block style with sorted keys,
and ``-o name`` is ``harnesstask.<group>/<name>``, one a line, as kubectl writes them.

What a program reads must mean what was stored, and what a person's terminal shows must obey
nothing: every character :func:`~tiny_harness.core.literal.literal` would escape is written as
the format's own escape (``\\u001b`` in JSON, ``"\\e"`` or ``"\\u202E"`` in a double-quoted YAML
string), so the output parses back to the stored value and shows only text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

import yaml

from tiny_harness.core.literal import literal, literal_json
from tiny_harness.kube.client import Obj
from tiny_harness.kube.names import API_VERSION, GROUP, KIND

#: What ``-o name`` prefixes a task's name with (kubectl's ``<kind>.<group>/``).
NAME_PREFIX: Final = f"{KIND.lower()}.{GROUP}/"
#: The ``-o`` formats this module prints (``wide`` is a table, :mod:`.kubectl_render`).
OBJECT_OUTPUTS: Final = ("json", "yaml", "name")


def as_kubectl_prints(obj: Obj) -> dict[str, Any]:
    """The object as ``kubectl get -o json`` shows it: its ``apiVersion`` and ``kind`` (a
    listing's items may lack them), no ``metadata.managedFields``."""
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k != "managedFields"}
    return {
        **obj,
        "apiVersion": obj.get("apiVersion") or API_VERSION,
        "kind": obj.get("kind") or KIND,
        "metadata": meta,
    }


def as_list(objs: Iterable[Obj]) -> dict[str, Any]:
    """Objects as kubectl prints several: a ``v1`` ``List``, in kubectl's order (namespace,
    then name)."""
    items = sorted(objs, key=_key)
    return {
        "apiVersion": "v1",
        "items": [as_kubectl_prints(o) for o in items],
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata", {})
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def json_text(document: Any) -> str:
    """``document`` as ``kubectl -o json`` writes it, its unsafe characters as JSON escapes."""
    text = json.dumps(document, indent=4, sort_keys=True, ensure_ascii=False)
    # Each line is compact JSON (indentation aside): a newline or a tab in a value is already
    # an escape, so what literal_json escapes on a line can only be inside a string.
    return "\n".join(literal_json(line) for line in text.split("\n"))


class _Dumper(yaml.SafeDumper):
    """Block style, sorted keys, lists under their key unindented (as kubectl's YAML); a
    string with a character a terminal would obey is double-quoted, so it can be escaped."""

    def represent_str(self, data: str) -> yaml.ScalarNode:
        tag = "tag:yaml.org,2002:str"
        if literal(data) != data:
            return self.represent_scalar(tag, data, style='"')
        if "\n" in data:
            return self.represent_scalar(tag, data, style="|")
        return self.represent_scalar(tag, data)


_Dumper.add_representer(str, _Dumper.represent_str)

#: What PyYAML leaves as it is in a double-quoted string (it escapes the controls itself) and
#: :func:`literal` would not: the bidi marks, embeddings, overrides and isolates.
_YAML_UNESCAPED: Final = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def yaml_text(document: Any) -> str:
    """``document`` as ``kubectl -o yaml`` writes it, its unsafe characters as YAML escapes."""
    text = yaml.dump(
        document, Dumper=_Dumper, sort_keys=True, allow_unicode=True, default_flow_style=False
    )
    # Such a character is only ever in a double-quoted string (_Dumper), where \uXXXX means it.
    return _YAML_UNESCAPED.sub(lambda m: f"\\u{ord(m.group()):04X}", text).rstrip("\n")


def names(objs: Iterable[Obj]) -> str:
    """``-o name``: ``harnesstask.<group>/<name>``, one a line, in kubectl's order."""
    return "\n".join(NAME_PREFIX + str(o["metadata"]["name"]) for o in sorted(objs, key=_key))


def printed(objs: Sequence[Obj], output: str, *, one: bool) -> str:
    """What ``-o output`` prints for ``objs``: the one object of ``get`` (``one``), or the
    ``List`` of ``list``."""
    if output == "name":
        return names(objs)
    document = as_kubectl_prints(objs[0]) if one else as_list(objs)
    return json_text(document) if output == "json" else yaml_text(document)
