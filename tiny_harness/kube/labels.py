"""Label values: for object names and participant ids, and the shard label objects inherit
from their task.

A label value is at most 63 characters of letters, digits, ``-``, ``_`` and ``.``, beginning
and ending with a letter or digit, while an object name may be 253 characters and a participant
id anything printable (``system:serviceaccount:team:alice``): a value that cannot be a label
as it is is replaced by a stable hash, and readers filter on the full value kept in the object
itself (or, counting by label alone, rely on the hash: 244 bits do not collide).
"""

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final

from tiny_harness.kube.names import SHARD_LABEL

_MAX = 63
_VALID: Final = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def label_value(name: str) -> str:
    """``name`` as a label value: itself when it is one, else ``h-`` and a hash of it."""
    if len(name) <= _MAX and (name == "" or _VALID.fullmatch(name)):
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
