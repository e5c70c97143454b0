"""The order of the task tree: parents before their children, and the tasks that wait for
the viewer first among their siblings: a pure module.

ListTasks gives a flat listing. The tree shows each task under its parent so that a sub-task
is found where it was spawned, and lifts a branch with a call waiting for the viewer's
decision above its siblings so that nothing waiting on them is scrolled out of sight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from a2a.types import Task

from tiny_harness.core.a2a_task import extension_from_a2a
from tiny_harness.core.errors import InvalidTaskError


def tree(
    tasks: Iterable[Task], first: Callable[[Task], bool] = lambda _: False
) -> list[tuple[int, Task]]:
    """Tasks as a tree, parents before their children: (depth, task). A child whose parent is
    not in the list is shown at the top. Among siblings, those for which ``first`` holds, or
    for one of their sub-tasks, come first (a call that waits for the viewer's decision), the
    others keeping their order."""
    listed = list(tasks)
    ids = {t.id for t in listed}
    children: dict[str, list[Task]] = {}
    roots: list[Task] = []
    for task in listed:
        try:
            parent = extension_from_a2a(task).parent
        except InvalidTaskError:
            parent = None
        if parent is not None and parent.task_id in ids:
            children.setdefault(parent.task_id, []).append(task)
        else:
            roots.append(task)
    out: list[tuple[int, Task]] = []
    urgent: dict[str, bool] = {}

    def needs(task: Task) -> bool:
        if task.id not in urgent:
            below = [needs(c) for c in children.get(task.id, [])]
            urgent[task.id] = first(task) or any(below)
        return urgent[task.id]

    def walk(task: Task, depth: int) -> None:
        out.append((depth, task))
        for child in sorted(children.get(task.id, []), key=lambda t: not needs(t)):
            walk(child, depth + 1)

    for root in sorted(roots, key=lambda t: not needs(t)):
        walk(root, 0)
    return out
