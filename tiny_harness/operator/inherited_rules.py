"""The approval rules a sub-task inherits: every ancestor's ``spec.approval``.

A task's own rules only ever add requirements; a sub-task is worked for its ancestors, so
each of their rules gates it too (the tree, as a budget bounds it: ``operator/budgets.py``).
Otherwise a gated tool, called by a child the model spawned, would run without anyone being
asked. They are read level-triggered from the cache at the start of every turn, so a rule
added to the root gates the next call anywhere below it, and no copy goes stale in a
child's spec.
"""

from __future__ import annotations

from tiny_harness.core.approval import TaskApprovalRule
from tiny_harness.core.task import TaskSpec
from tiny_harness.kube.client import Obj
from tiny_harness.operator.budgets import ancestors
from tiny_harness.operator.cache import Cache


class UnreadableAncestorError(ValueError):
    """An ancestor's spec does not parse, so the rules it would add are not known."""


def inherited_rules(
    cache: Cache, namespace: str, obj: Obj
) -> tuple[tuple[str, tuple[TaskApprovalRule, ...]], ...]:
    """Each ancestor's name and approval rules, the parent first (none without rules).

    Raises :class:`UnreadableAncestorError` when an ancestor's spec does not parse: a turn
    that cannot know the rules above it does not run its calls without them."""
    out: list[tuple[str, tuple[TaskApprovalRule, ...]]] = []
    for above in ancestors(cache, namespace, obj):
        name = str(above["metadata"]["name"])
        try:
            spec = TaskSpec.model_validate(above.get("spec") or {})
        except ValueError as exc:
            raise UnreadableAncestorError(
                f"the approval rules of the ancestor task {name} cannot be read ({exc}); "
                "fix its spec so this sub-task's calls are gated as the tree says"
            ) from None
        if spec.approval:
            out.append((name, spec.approval))
    return tuple(out)
