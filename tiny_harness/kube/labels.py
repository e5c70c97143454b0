"""Label values: for object names, and the shard label objects inherit from their task.

A label value is at most 63 characters, while an object name may be 253: a longer name is
replaced by a stable hash, and readers filter on the full name kept in the object itself.
"""

import hashlib
from collections.abc import Mapping
from typing import Any

from tiny_harness.kube.names import SHARD_LABEL

_MAX = 63


def label_value(name: str) -> str:
    if len(name) <= _MAX:
        return name
    return "h-" + hashlib.sha256(name.encode()).hexdigest()[: _MAX - 2]


def shard_labels(owner: Mapping[str, Any] | None) -> dict[str, str]:
    """The shard label an object that belongs to ``owner`` (a task) carries: the task's own.

    Messages, turn records and children copy it from the task they belong to, so a sharded
    operator's label-filtered watches see them with their task; an owner without one yet (just
    created, or applied with kubectl) leaves it off, and the operator's labeller adds it.
    """
    if owner is None:
        return {}
    value = (owner.get("metadata", {}).get("labels") or {}).get(SHARD_LABEL)
    return {SHARD_LABEL: str(value)} if value is not None else {}
