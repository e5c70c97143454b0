"""The task trees as the cache has them: a task's children (and the strays that only name it),
its descendants and its ancestors, and how deep it is.

A child is a task that names its parent *and* carries the owner reference to the parent's uid
that only the harness writes (:mod:`tiny_harness.kube.ownership`); a stray only names it, and
counts for nothing. The walks are bounded by :data:`MAX_DEPTH`, as deep as a sub-task may be
created (:mod:`tiny_harness.core.reach`), and read in summary wherever they can, so a tree is
walked without its tasks' texts in memory.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Final

from tiny_harness.core.sizes import MAX_TREE_DEPTH
from tiny_harness.kube.client import Obj
from tiny_harness.kube.ownership import ancestors_of, is_child_of, is_stray_of

#: How far up or down a tree is walked: as deep as a sub-task may be created (core/reach.py).
MAX_DEPTH: Final = MAX_TREE_DEPTH


class TaskTree(ABC):
    """The tree walks, over the two reads a cache gives them (:class:`~.cache.Cache`)."""

    @abstractmethod
    def stub(self, namespace: str, name: str) -> Obj | None:
        """The task in summary (:func:`~tiny_harness.operator.feed.stub_of`)."""

    @abstractmethod
    def _naming(self, namespace: str, parent: str, *, stubs: bool = False) -> list[Obj]:
        """Every task whose spec names ``parent`` as its parent; with ``stubs``, in summary."""

    def children(self, namespace: str, parent: str) -> list[Obj]:
        """The task's children: the tasks that name it as their parent *and* carry the owner
        reference to its uid that only the harness writes. Anything else naming it is a stray
        (:meth:`strays`), and counts for nothing here."""
        current = self.stub(namespace, parent)
        if current is None:
            return []
        return [c for c in self._naming(namespace, parent) if is_child_of(c, current)]

    def child_stubs(self, namespace: str, parent: str) -> list[Obj]:
        """:meth:`children` in summary (:func:`~tiny_harness.operator.feed.stub_of`), whether or
        not they are in memory."""
        current = self.stub(namespace, parent)
        if current is None:
            return []
        return [c for c in self._naming(namespace, parent, stubs=True) if is_child_of(c, current)]

    def descendant_stubs(self, namespace: str, name: str) -> Iterator[Obj]:
        """The task's children, their children ..., in summary, down to :data:`MAX_DEPTH`
        levels below it (no sub-task is created deeper: core/reach.py)."""
        level = self.child_stubs(namespace, name)
        for _ in range(MAX_DEPTH):
            if not level:
                return
            yield from level
            level = [
                c for above in level for c in self.child_stubs(namespace, above["metadata"]["name"])
            ]

    def strays(self, namespace: str, parent: str) -> list[Obj]:
        """The tasks that name ``parent`` as their parent without being its children."""
        current = self.stub(namespace, parent)
        if current is None:
            return []
        return [c for c in self._naming(namespace, parent) if is_stray_of(c, current)]

    def ancestors(self, namespace: str, name: str) -> Iterator[Obj]:
        """The task's parent, its parent's parent ..., in summary, up to :data:`MAX_DEPTH` (a
        task that only names a parent it is not the child of has none)."""
        return ancestors_of(self.stub(namespace, name), lambda above: self.stub(namespace, above))

    def depth(self, namespace: str, name: str) -> int:
        """How many levels below its root the task is (0: a task with no parent here): what
        the depth bound of sub-tasks (core/reach.py) is held against."""
        return sum(1 for _ in self.ancestors(namespace, name))
