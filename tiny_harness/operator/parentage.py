"""What a task takes from its parent: its status (the model and effort a child starts with),
and whether it has ended (a child ends with its parent: row 4a of decide).

Only a child counts: a task that only names a parent, without the owner reference to its uid
that the harness writes (:func:`~tiny_harness.kube.ownership.is_child_of`), inherits nothing
and never ends with it.
"""

from __future__ import annotations

from typing import Any

from tiny_harness.core.states import TaskState
from tiny_harness.core.task import local_parent_of
from tiny_harness.kube.client import Obj
from tiny_harness.kube.ownership import is_child_of
from tiny_harness.operator.cache import Cache


def parent_status(cache: Cache, namespace: str, obj: Obj) -> dict[str, Any]:
    """The parent's status, as the cache has it; empty for a task that is no child."""
    parent = local_parent_of(obj.get("spec"))
    if not parent:
        return {}
    found = cache.stub(namespace, parent)
    if found is None or not is_child_of(obj, found):
        return {}  # a task that only names a parent inherits nothing from it
    whole = cache.task(namespace, parent)  # an ancestor: loaded with the task
    return dict((whole or found).get("status") or {})


def ended_parent(cache: Cache, namespace: str, obj: Obj) -> tuple[str, TaskState] | None:
    """The parent's name and state once it has ended (None while it lives, or when the task
    only names a parent it is not the child of)."""
    state = parent_status(cache, namespace, obj).get("state")
    if not state or not TaskState(state).is_terminal:
        return None
    return str(local_parent_of(obj.get("spec"))), TaskState(state)
