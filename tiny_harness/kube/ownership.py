"""Which task an object belongs to: the task's uid decides, never its name.

A task's name is free again the moment the task is deleted, while the old task's messages,
turn records and children are still in the API: the garbage collector deletes dependents
after their owner, with a lag, and a message written by hand without an owner reference is
not deleted with its task at all. A reader that found a task's objects by name (the task
label, ``spec.task``, ``spec.parent``) would show the new task's participants the old
conversation, or let anyone who names a task as its parent attach work to it. So every reader
asks of each object whether it belongs to the task *object* it reads for:

- a **turn record** belongs to a task when it carries an owner reference to the task's uid
  (the operator writes every record with one; nobody else may write records at all);
- a **child** is a task's sub-task when its ``spec.parent`` names the task *and* it carries
  an owner reference to the task's uid: only the harness creates children (the operator, and
  the gateway for a participant who may end the parent), and the admission policy refuses a
  ``spec.parent`` from anyone else (``kube/admission.py``);
- a **message** belongs when it carries an owner reference to the task's uid, or, when it
  carries none (a ``kubectl apply`` of a hand-written manifest), when it was created no
  earlier than the task itself: a leftover of an older task of the same name was created
  before the new task was. Creation times have a resolution of one second, so a hand-written
  message of an old task, created in the very second its successor was, would read as the
  new one's; every harness writer sets the owner reference, which has no such edge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from tiny_harness.core.clock import parse
from tiny_harness.core.sizes import MAX_TREE_DEPTH
from tiny_harness.core.task import local_parent_of
from tiny_harness.kube.names import KIND

Obj = Mapping[str, Any]
T = TypeVar("T", bound=Obj)


def uid_of(obj: Obj) -> str:
    return str(obj["metadata"].get("uid") or "")


def owner_uids(obj: Obj) -> tuple[str, ...]:
    """The uids of the tasks an object's owner references name."""
    refs = obj["metadata"].get("ownerReferences") or ()
    return tuple(str(r.get("uid")) for r in refs if r.get("kind") == KIND and r.get("uid"))


def created_at(obj: Obj) -> str:
    return str(obj["metadata"].get("creationTimestamp") or "")


def owned_by(owners: Iterable[str], task: Obj) -> bool:
    """Does an object with these owner uids belong to ``task``?"""
    uid = uid_of(task)
    return bool(uid) and uid in owners


def message_belongs(owners: Iterable[str], created: str, task: Obj) -> bool:
    """Does a message (its owner uids and creation time) belong to ``task``? See the module
    docstring: owned by the task's uid, or owned by no task and created no earlier than it."""
    owners = tuple(owners)
    if owners:
        return owned_by(owners, task)
    made, born = parse(created), parse(created_at(task))
    if made is None or born is None:
        return False
    return made >= born


def is_child_of(child: Obj, parent: Obj) -> bool:
    """Is ``child`` a sub-task of ``parent``: named its parent *and* owned by its uid?"""
    named = local_parent_of(child.get("spec")) == parent["metadata"]["name"]
    return named and owned_by(owner_uids(child), parent)


def is_stray_of(obj: Obj, parent: Obj) -> bool:
    """Does ``obj`` name ``parent`` as its parent without being its child? Such an object was
    not created by the harness for this parent (by hand, by an administrator, or for an older
    task of the same name): the parent ignores it."""
    named = local_parent_of(obj.get("spec")) == parent["metadata"]["name"]
    return named and not owned_by(owner_uids(obj), parent)


def ancestors_of(task: T | None, lookup: Callable[[str], T | None]) -> Iterator[T]:
    """The task's parent, its parent's parent ..., each found by name with ``lookup`` and
    kept only while it is the parent of the one below it (a task that only names a parent
    has none), up to :data:`~tiny_harness.core.sizes.MAX_TREE_DEPTH`: the one walk up a tree,
    for the operator's budgets and every check of a sub-task's depth."""
    current = task
    for _ in range(MAX_TREE_DEPTH):
        if current is None:
            return
        above = local_parent_of(current.get("spec"))
        parent = lookup(above) if above else None
        if parent is None or not is_child_of(current, parent):
            return
        yield parent
        current = parent
