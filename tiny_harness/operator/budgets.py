"""Which budget a task works within: its own, and every ancestor's over the whole tree.

A task's own budget is the one last set with ``/budget`` (``status.budget``), else its spec's,
else the operator's default. A sub-task is bounded by its ancestors' too: at the start of every
turn anywhere in a tree, each ancestor's total (its own usage and every descendant's, this
one's included, summed from their journals' summaries in the cache: a tree is worked by one
replica, and its descendants' journals need not be in memory) is
held against that ancestor's budget (``core.usage.tree_budget``), so a parent with
``maxModelCalls: 2`` cannot spend more through its children, and ``/budget`` on the root raises
the room of the whole tree at once. It is read level-triggered, so no copy of a budget goes
stale in a child's spec.

A worker reads them through :class:`TaskBudgets`, its task's budgets in one place; every
status write it makes carries the task's usage through it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from tiny_harness.core.settings import OperatorSettings
from tiny_harness.core.task import Budget, TaskSpec, TaskStatus, TaskUsage
from tiny_harness.core.usage import total, tree_budget, usage_of
from tiny_harness.kube.client import Obj
from tiny_harness.operator.cache import Cache
from tiny_harness.operator.snapshot import Snapshot


def own_budget(spec: TaskSpec | None, status: TaskStatus, default: Budget | None) -> Budget | None:
    """The task's own budget: as last set with /budget, else the spec's, else the default."""
    return status.budget or (spec.budget if spec is not None else None) or default


def ancestors(cache: Cache, namespace: str, obj: Obj) -> Iterator[Obj]:
    """The task's parent, its parent's parent ..., as the cache has them (loaded with the
    task: :meth:`Cache.load`; a task that only names a parent it is not the child of has
    none)."""
    for above in cache.ancestors(namespace, str(obj["metadata"]["name"])):
        parent = cache.task(namespace, str(above["metadata"]["name"]))
        if parent is None:
            return
        yield parent


def tree_usage(cache: Cache, namespace: str, obj: Obj) -> TaskUsage:
    """What the task and every task below it have used, summed from their journals as the
    cache has them: current to the last journaled call, a running turn's included."""
    name = str(obj["metadata"]["name"])
    used = cache.usage(namespace, name)
    for below in cache.descendant_stubs(namespace, name):
        used = used + cache.usage(namespace, str(below["metadata"]["name"]))
    return used


def _bound_of(
    cache: Cache, namespace: str, obj: Obj, default: Budget | None
) -> tuple[str, Budget | None, TaskUsage]:
    name = str(obj["metadata"]["name"])
    try:
        status = TaskStatus.model_validate(obj.get("status") or {})
        spec = TaskSpec.model_validate(obj.get("spec") or {})
    except ValueError:
        return name, None, TaskUsage()  # an ancestor that does not parse bounds nothing here
    budget = own_budget(spec, status, default)
    return name, budget, tree_usage(cache, namespace, obj) if budget is not None else TaskUsage()


def turn_budget(
    cache: Cache,
    namespace: str,
    obj: Obj,
    own: Budget | None,
    used: TaskUsage,
    default: Budget | None,
) -> Budget | None:
    """The budget the task's next model call is held to (see the module docstring)."""
    above = [_bound_of(cache, namespace, a, default) for a in ancestors(cache, namespace, obj)]
    return tree_budget(own, used, above)


def with_usage(patch: Mapping[str, Any], cache: Cache, namespace: str, name: str) -> dict[str, Any]:
    """The patch with what the task has used (:mod:`tiny_harness.core.usage`): its own usage
    with every write that ends a turn (its records are in the cache by then), and its
    sub-tasks' with every write of their rows; what its ancestors' budgets are held against."""
    out = dict(patch)
    if "runner" in out and out["runner"] is None and "usage" not in out:
        out["usage"] = usage_of(cache.records(namespace, name)).model_dump(by_alias=True)
        # The turn has ended: what it used is in usage now, and no turn is running.
        out["turnUsage"] = None
    if "subTasks" in out and "subTaskUsage" not in out:
        children = cache.children(namespace, name)
        used = TaskUsage()
        for child in children:
            status = child.get("status") or {}
            used = used + total(
                TaskUsage.model_validate(status.get("usage") or {}),
                TaskUsage.model_validate(status.get("subTaskUsage") or {}),
            )
        out["subTaskUsage"] = used.model_dump(by_alias=True) if children else None
    return out


class Sources(Protocol):
    """Where a task's budgets are read from: the operator's cache and its default budget."""

    @property
    def cache(self) -> Cache: ...

    @property
    def settings(self) -> OperatorSettings: ...


class TaskBudgets:
    """One task's budgets, as its worker, its turns and its commands read them."""

    def __init__(self, sources: Sources, namespace: str, name: str) -> None:
        self.sources = sources
        self.namespace = namespace
        self.name = name

    def own(self, snap: Snapshot) -> Budget | None:
        """The task's own budget (:func:`own_budget`)."""
        return own_budget(snap.spec, snap.status, self.sources.settings.budget)

    def for_turn(self, snap: Snapshot, used: TaskUsage) -> Budget | None:
        """The budget the task's model calls are held to: its own and its ancestors'."""
        cache, default = self.sources.cache, self.sources.settings.budget
        return turn_budget(cache, self.namespace, snap.obj, self.own(snap), used, default)

    def with_usage(self, patch: Mapping[str, Any]) -> dict[str, Any]:
        """A status patch with the usage it carries (:func:`with_usage`)."""
        return with_usage(patch, self.sources.cache, self.namespace, self.name)
