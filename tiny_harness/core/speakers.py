"""Who may say what to a task: the one answer to "may this sender speak here, and may they end
the task?", asked by the operator for every message it takes.

The operator is the authority (the gateway and ``kubectl harness`` may ask first to refuse
early, but a message written straight into the API reaches only the operator). A sender is one
of the task's participants, the parent task (``task:<parent>``, which briefs, answers and
cancels its children), or the operator itself briefing a top-level delegated task
(``system``, only for the message id ``brief``).
"""

from __future__ import annotations

from tiny_harness.core.task import ENDING_ROLES, Role, TaskSpec

#: The message id of a delegated task's first message, its brief.
BRIEF_ID = "brief"


def parent_sender(spec: TaskSpec) -> str | None:
    """How the parent task signs the messages it sends this task, if it has a parent here (a
    parent on another agent speaks through that agent's identity, a participant's)."""
    return f"task:{spec.local_parent}" if spec.local_parent else None


def refuse_speaker(spec: TaskSpec, sender: str, message_id: str) -> str | None:
    """Why ``sender`` may not send this task a message, or None when they may."""
    if spec.role_of(sender) is not None or sender == parent_sender(spec):
        return None
    if sender == "system" and message_id == BRIEF_ID and spec.local_parent is None:
        return None
    return f"refused: {sender} is not a participant of this task"


def refuse_ending(spec: TaskSpec, sender: str, action: str) -> str | None:
    """Why ``sender`` may not ``action`` (complete or cancel) the task, or None when they may.

    Assignees, reporters and admins may end a task, and so may its parent; a watcher may
    follow it but not end it.
    """
    if sender == parent_sender(spec):
        return None
    role = spec.role_of(sender)
    if role in ENDING_ROLES:
        return None
    if role is Role.WATCHER:
        return f"refused: {sender} is a watcher and may not {action} the task"
    return f"refused: {sender} is not a participant of this task"


def refuse_answer(spec: TaskSpec, sender: str) -> str | None:
    """Why ``sender``'s message does not answer a participant task, or None when it does.

    A participant task is a question put to its assignee: their message is the answer that
    completes it. Anyone else on the task may follow it, run commands, or (when their role
    allows) cancel it, but what they say is not the answer.
    """
    if sender in spec.assignees:
        return None
    named = " or ".join(spec.assignees) or "its assignee"
    return (
        f"refused: this task waits for {named}'s answer; a message from {sender} does not answer it"
    )
