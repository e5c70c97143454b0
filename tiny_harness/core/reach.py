"""What a task's model may do to other people: whom it may put a task before, and how deep a
tree of sub-tasks may grow.

A model reads what others wrote (messages, tool results, a remote agent's answers), so what it
asks for may be someone else's wish. Whatever it asks, its reach is set by the people who set
the task up, never by the call's arguments:

- **people.** ``create_task_for_participant`` makes a task whose assignee reads the question
  and its context, and whose list of tasks shows it. The model may name only the task's own
  participants (who already read the conversation: a task is shown to its participants and
  nobody else), the ids in its ``spec.reach`` (a reporter's or an admin's choice for this
  task), and the ids in ``[operator] reach`` (the installation's list for its namespace).
  Not the tree's other people: a sub-task is shown only to its own participants, so its
  parent's people have not read it, and the tree does not widen what its words may reach.
- **depth.** Every sub-task is created one level below its parent, and a tree may grow at
  most ``[operator] max_sub_task_depth`` levels below its root (a task with no parent here
  is at depth 0). The bound is at most :data:`~tiny_harness.core.sizes.MAX_TREE_DEPTH`,
  the depth to which the operator walks a tree to hold each ancestor's budget, so a budget
  holds at every depth a task may be at.

Every refusal is a sentence the reader (the model, a participant) can act on, and nothing is
created. The rest of the model's actions reach nobody new: ``spawn_subtask`` gives the child
the parent's own participants (and its agent is one of the namespace's ``HarnessAgent``
objects), ``ask_participant`` and ``publish_artifact`` speak to the task's participants, and
``reply_to_subtask`` to the task's own sub-tasks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from tiny_harness.core.sizes import MAX_TREE_DEPTH
from tiny_harness.core.task import TaskSpec

#: How deep a tree of sub-tasks may grow when the settings do not say
#: (``[operator] max_sub_task_depth``).
DEFAULT_MAX_SUB_TASK_DEPTH: Final = 8


class Reach(BaseModel):
    """What bounds one turn's model besides its task: the namespace's list of people, and
    where the task stands in its tree."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    allowed: tuple[str, ...] = Field(
        default=(),
        description="People any task's model in the namespace may create a task for "
        "([operator] reach).",
    )
    depth: int = Field(
        default=0, ge=0, description="How many levels below its root the task is (0: a root)."
    )
    max_depth: int = Field(
        default=DEFAULT_MAX_SUB_TASK_DEPTH,
        ge=1,
        le=MAX_TREE_DEPTH,
        description="The deepest a sub-task may be ([operator] max_sub_task_depth).",
    )


def reachable(task: TaskSpec, allowed: Iterable[str] = ()) -> tuple[str, ...]:
    """Everyone the task's model may create a task for, in order: its participants, its
    ``spec.reach``, then the namespace's list."""
    out: list[str] = []
    for person in (*(p.id for p in task.participants), *task.reach, *allowed):
        if person not in out:
            out.append(person)
    return tuple(out)


def refuse_person(task: TaskSpec, person: str, reach: Reach) -> str | None:
    """Why the task's model may not create a task for ``person``, or None when it may."""
    people = reachable(task, reach.allowed)
    if person in people:
        return None
    listed = ", ".join(people) or "nobody: the task has no participants"
    return (
        f"{person} is not a participant of this task; the model may create tasks only for "
        f"its participants and the people its reach allows ({listed}), and nothing was "
        f"created. If {person} should be asked, a reporter or an admin of the task adds "
        "them to spec.reach"
    )


def refuse_depth(task: str, depth: int, max_depth: int) -> str | None:
    """Why task ``task``, ``depth`` levels below its root, may not have a sub-task, or None
    when it may (its sub-task would be at ``depth + 1``)."""
    if depth < max_depth:
        return None
    return (
        f"task {task} is {_levels(depth)} below its root task, and sub-tasks go at most "
        f"{_levels(max_depth)} deep (operator.max_sub_task_depth)"
    )


def _levels(n: int) -> str:
    return f"{n} level" if n == 1 else f"{n} levels"
