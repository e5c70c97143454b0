"""Whether a first message may make its task a sub-task of the parent its envelope names.

A parent is attached only for a caller the authority table lets start a sub-task of it (its
``sub-tasks`` row: assignee, reporter, admin, in the words ``/sub-task`` uses), and only while
the tree stays within its depth. Anyone else is refused before anything is written; a parent
not found and a parent the caller is not on read the same, as for every other call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError

from tiny_harness.core.authority import SUB_TASKS, refusal
from tiny_harness.core.reach import DEFAULT_MAX_SUB_TASK_DEPTH, refuse_depth
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.kube.client import Obj
from tiny_harness.kube.ownership import ancestors_of
from tiny_harness.kube.participant_view import ParticipantView


class ParentCheck:
    """The parents a first message may name: found with ``lookup``, their ancestors with
    ``index`` (the namespace held whole, parents before their children)."""

    def __init__(
        self,
        lookup: Callable[[str], Awaitable[ParticipantView | None]],
        index: Callable[[str], Obj | None],
        *,
        max_depth: int = DEFAULT_MAX_SUB_TASK_DEPTH,
    ) -> None:
        self._lookup = lookup
        self._index = index
        self._max_depth = max_depth

    async def parent_for(self, parent: str, sender: str) -> ParticipantView:
        """The task ``parent``, if ``sender`` may start a sub-task of it; refused (nothing is
        written) otherwise."""
        task = await self._lookup(parent)
        role = task.role_of(sender) if task is not None else None
        if task is None or role is None:
            raise coded(
                InvalidParamsError,
                ReasonCode.PARENT_NOT_FOUND,
                f"parent: task {parent!r} not found; a sub-task is attached only to a task you "
                "are on as its assignee, reporter or admin",
            )
        refused = refusal(SUB_TASKS, sender, role, parent)
        if refused is not None:
            raise coded(
                UnsupportedOperationError, ReasonCode.ROLE_REFUSED, f"parent: refused: {refused}"
            )
        depth = sum(1 for _ in ancestors_of(task.obj, self._index))
        too_deep = refuse_depth(parent, depth, self._max_depth)
        if too_deep is not None:
            raise coded(
                UnsupportedOperationError,
                ReasonCode.SUB_TASK_TOO_DEEP,
                f"parent: refused: {too_deep}; nothing was created: attach it higher up the "
                "tree, or start a task of its own",
            )
        return task
