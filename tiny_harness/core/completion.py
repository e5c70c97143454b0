"""The completion predicate: may a task complete now, and why not when it may not.

It is a decision of its own, asked in three places: by the core loop at a delegated turn's
end, by the operator on a participant's complete request, and by a hook that may override it
(``task.complete``). So it lives apart from the loop and from the operator's table
(:mod:`tiny_harness.core.decide`), and imports nothing but the task model, so that the hook
machinery can name its types without importing the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from tiny_harness.core.task import SubTaskRow, TaskExtension


class CompletionVerdict(StrEnum):
    COMPLETE = "complete"
    WAIT_FOR_SUBTASKS = "wait_for_subtasks"
    READ_RESULTS = "read_results"


class CompletionDecision(BaseModel):
    """Whether a task may complete now, and why not when it may not."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    verdict: CompletionVerdict
    reason: str
    unresolved: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    overridden: bool = False

    @property
    def complete(self) -> bool:
        return self.verdict is CompletionVerdict.COMPLETE


#: A hook that may let a task complete although the rule says no: ``True`` completes it.
CompletionOverride = Callable[[TaskExtension, CompletionDecision], bool]


def _state_name(row: SubTaskRow) -> str:
    return row.state.value.removeprefix("TASK_STATE_").lower().replace("_", "-")


def decide_completion(
    task: TaskExtension,
    requested_by: str | None = None,
    *,
    override: CompletionOverride | None = None,
) -> CompletionDecision:
    """May ``task`` complete now? Pure; run at a delegated turn's end and on a participant's
    complete request (``requested_by``).

    An unresolved sub-task refuses completion. At a turn's end an ended sub-task whose result
    the model has not read yet asks for one more turn first; a participant asking to complete
    has decided, so unread results do not hold them back. ``override`` may complete anyway.
    """
    unresolved = tuple(r for r in task.sub_tasks if not r.is_resolved)
    unread = tuple(r for r in task.sub_tasks if r.result_unread and r.is_resolved)
    who = f"completion requested by {requested_by} refused: " if requested_by else ""
    if unresolved:
        listed = ", ".join(f"{r.task_id} ({_state_name(r)})" for r in unresolved)
        decision = CompletionDecision(
            verdict=CompletionVerdict.WAIT_FOR_SUBTASKS,
            reason=f"{who}the task cannot complete while sub-task(s) are unresolved: {listed}. "
            "It can complete once they end (or are cancelled)",
            unresolved=tuple(r.task_id for r in unresolved),
        )
    elif unread and requested_by is None:
        decision = CompletionDecision(
            verdict=CompletionVerdict.READ_RESULTS,
            reason="the result of sub-task(s) "
            f"{', '.join(r.task_id for r in unread)} has not been read yet",
            unread=tuple(r.task_id for r in unread),
        )
    else:
        return CompletionDecision(
            verdict=CompletionVerdict.COMPLETE, reason="no sub-task holds the task open"
        )
    if override is not None and override(task, decision):
        return decision.model_copy(
            update={"verdict": CompletionVerdict.COMPLETE, "overridden": True}
        )
    return decision
