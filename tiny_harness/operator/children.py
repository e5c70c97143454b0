"""A parent's view of its children: the sub-task rows, and which changes are news.

Rows are derived from the children themselves (level-triggered): every child carries the
parent label, so listing them gives each row's state whatever the parent saw before. A change
becomes *news* for the parent's model only when the seed says so: a child ended, a delegated
child parked with a question, or a child on a remote agent ended a turn (its agent's answer).
A child parking for its next message or resuming is not news.
"""

from __future__ import annotations

from typing import Any

from tiny_harness.core.sizes import ROW_GOAL_CHARS, excerpt
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import Lifecycle, SubTaskRow
from tiny_harness.core.turn import InboundMessage

Obj = dict[str, Any]


def news_id(child: Obj) -> str | None:
    """The id of the child's current news, or None when its state is not news."""
    status = child.get("status") or {}
    state = status.get("state")
    name = child["metadata"]["name"]
    if state and TaskState(state).is_terminal:
        return f"sub-task:{name}:{state}"
    delegated = status.get("lifecycle", Lifecycle.DELEGATED.value) == Lifecycle.DELEGATED.value
    if (
        delegated
        and state == TaskState.INPUT_REQUIRED.value
        and status.get("subState") == SubState.AWAITING_ANSWER.value
    ):
        return f"sub-task:{name}:{state}:awaiting-answer:{status.get('turn', 0)}"
    if (child.get("spec") or {}).get("agent") and state == TaskState.INPUT_REQUIRED.value:
        # A remote child's turn ended: whatever its agent said is for the parent to read.
        return f"sub-task:{name}:{state}:{status.get('subState')}:{status.get('turn', 0)}"
    return None


def row_of(child: Obj, acked: set[str]) -> SubTaskRow:
    status = child.get("status") or {}
    nid = news_id(child)
    return SubTaskRow(
        task_id=child["metadata"]["name"],
        agent=(child.get("spec") or {}).get("agent"),
        goal=excerpt(str((child.get("spec") or {}).get("goal", "")), ROW_GOAL_CHARS),
        state=TaskState(status.get("state") or TaskState.SUBMITTED.value),
        sub_state=status.get("subState"),
        result_unread=nid is not None
        and nid not in acked
        and TaskState(status.get("state") or TaskState.SUBMITTED.value).is_terminal,
    )


def rows_of(children: list[Obj], acked: set[str]) -> tuple[SubTaskRow, ...]:
    ordered = sorted(
        children, key=lambda c: (c["metadata"].get("creationTimestamp", ""), c["metadata"]["name"])
    )
    return tuple(row_of(c, acked) for c in ordered)


def pending_news(children: list[Obj], acked: set[str]) -> list[InboundMessage]:
    """The children's news the parent's model has not been given yet."""
    out: list[InboundMessage] = []
    for child in children:
        nid = news_id(child)
        if nid is None or nid in acked:
            continue
        status = child.get("status") or {}
        out.append(
            InboundMessage(
                id=nid,
                content=status.get("message") or "",
                sub_task=row_of(child, acked).model_copy(
                    update={"result_unread": TaskState(status["state"]).is_terminal}
                ),
            )
        )
    return out
