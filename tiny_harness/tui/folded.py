"""A task as folded so far, and what the screens read of it: a pure module.

:class:`~tiny_harness.tui.view.TaskView` folds what the gateway sends into the fields of
:class:`FoldedTask`; the screens read them only through the questions asked here (the top bar,
the details, the badge, whether Complete and Cancel may be asked), so that the tree's line and
the top bar, drawn from the same fold, cannot say two things.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from a2a.types import Artifact

from tiny_harness.core.reply_ids import command_reply_id, refusal_id
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Lifecycle, Participant, SubTaskRow, TaskExtension
from tiny_harness.tui.approvals import AWAITING_APPROVAL, Call, badge, calls_of, summary
from tiny_harness.tui.question import COMPOSER_PLACEHOLDER, Question


@dataclass(frozen=True)
class Line:
    """One message of the conversation, as shown."""

    message_id: str
    who: str
    text: str


@dataclass
class FoldedTask:
    """One task as far as it has been folded. ``me`` is the participant the TUI acts as."""

    task_id: str
    me: str
    state: TaskState = TaskState.SUBMITTED
    sub_state: str | None = None
    extension: TaskExtension | None = None
    lines: list[Line] = field(default_factory=list)
    #: When (on ``clock``) this view saw the task start working, while it works.
    working_since: float | None = None
    #: The status text the task ended with, once it has ended.
    ending: str | None = None
    #: The task's version this view last applied (None: nothing carried one yet).
    version: int | None = None
    #: The task's artifacts, each whole (its chunks' parts joined), in the order published.
    artifacts: tuple[Artifact, ...] = ()
    clock: Callable[[], float] = time.monotonic

    @property
    def header(self) -> str:
        """The top bar: ``INPUT_REQUIRED · awaiting-next-message``."""
        state = self.state.value.removeprefix("TASK_STATE_")
        return f"{state} · {self.sub_state}" if self.sub_state else state

    def top_bar(self) -> str:
        """The top bar whole: the task, its header, the calls that wait, and a turn's
        progress."""
        bar = f"{self.task_id} · {self.header}"
        waiting = summary(self.calls())
        if waiting:
            bar += f" · {waiting}"
        progress = self.progress()
        if progress:
            bar += f" · {progress}"
        return bar

    def details(self) -> list[str]:
        """The lines under the top bar: the question (and what to do about it) or the goal,
        the criteria, the participants, the plan, what was used, and the parent."""
        question = self.question()
        if question is not None:
            lines = [f"{question.title}: {question.text}", f"  {question.guidance()}"]
        else:
            lines = [f"Goal: {self.goal}"] if self.goal else []
        lines += [f"  ✓ {c}" for c in self.criteria]
        if self.participants:
            lines.append(
                "Participants: " + ", ".join(f"{p.id} ({p.role.value})" for p in self.participants)
            )
        lines += self.plan_lines
        used = self.usage_line()
        if used:
            lines.append(used)
        if self.parent:
            lines.append(f"← Parent: {self.parent} (f4)")
        return lines

    @property
    def goal(self) -> str:
        return self.extension.goal if self.extension else ""

    @property
    def criteria(self) -> tuple[str, ...]:
        return tuple(self.extension.acceptance_criteria) if self.extension else ()

    @property
    def participants(self) -> tuple[Participant, ...]:
        return tuple(self.extension.participants) if self.extension else ()

    @property
    def sub_tasks(self) -> tuple[SubTaskRow, ...]:
        return self.extension.sub_tasks if self.extension else ()

    @property
    def parent(self) -> str | None:
        link = self.extension.parent if self.extension else None
        return link.task_id if link is not None else None

    @property
    def plan_lines(self) -> list[str]:
        plan = self.extension.plan if self.extension else None
        if plan is None:
            return []
        return [f"[{'x' if s.done else ' '}] {s.name}" for s in plan.steps]

    def progress(self) -> str | None:
        """While a turn runs: for how long (as this view saw it) and the model calls the task
        has made so far, the running turn's included (the operator writes those with each
        renewal of the turn's lease, every third of the lease time)."""
        if self.working_since is None:
            return None
        text = f"working for {int(self.clock() - self.working_since)}s"
        calls = 0
        if self.extension is not None:
            for used in (self.extension.usage, self.extension.turn_usage):
                calls += used.model_calls if used is not None else 0
        if calls:
            text += f" · {calls} model call{'' if calls == 1 else 's'} so far"
        return text

    def usage_line(self) -> str | None:
        used = self.extension.usage if self.extension else None
        if used is None or not used.model_calls:
            return None
        return (
            f"Used: {used.model_calls} model calls, "
            f"{used.input_tokens + used.output_tokens} tokens, {used.tool_calls} tool calls"
        )

    def question(self) -> Question | None:
        """The question this task puts to a person, when it is a participant task."""
        ext = self.extension
        if ext is None or ext.lifecycle is not Lifecycle.PARTICIPANT:
            return None
        return Question(
            text=ext.goal,
            asks=ext.assignees,
            mine=self.me in ext.assignees,
            waiting=self.state is TaskState.INPUT_REQUIRED,
            ending=self.ending if self.state.is_terminal else None,
        )

    def answer_to(self, message_id: str) -> Line | None:
        """The harness's answer to the message sent as ``message_id``: a command's or a
        decision's reply (``cmd-...``), or its refusal (``refused-...``), once shown."""
        ids = {command_reply_id(message_id), refusal_id(message_id)}
        return next((line for line in self.lines if line.message_id in ids), None)

    def calls(self) -> tuple[Call, ...]:
        """The calls the task waits to have approved (and those decided since), the ones the
        viewer may decide first."""
        return calls_of(self.extension, self.me)

    def wants_read(self) -> bool:
        """Whether the task should be read again after a status update: its calls are in no
        status update, and one that waits (or did) may have been decided meanwhile."""
        return self.sub_state == AWAITING_APPROVAL or bool(self.calls())

    def badge(self) -> str | None:
        """The mark first on the task's line: a question's, else an approval's."""
        question = self.question()
        return question.badge if question else badge(self.calls(), self.sub_state)

    def label(self) -> str:
        """The task's line in the tree: a question's or an approval's badge first (so a
        narrow tree keeps it), then the goal and the state."""
        mark = self.badge()
        line = f"{self.goal or self.task_id} · {self.header}"
        return f"{mark} · {line}" if mark else line

    def placeholder(self) -> str:
        question = self.question()
        return question.placeholder() if question else COMPOSER_PLACEHOLDER

    def role(self) -> str | None:
        return next((p.role.value for p in self.participants if p.id == self.me), None)

    def refusal(self) -> str | None:
        """Why Complete and Cancel are refused here, or None when they may be asked."""
        if self.state.is_terminal:
            return f"the task has ended ({self.header}); nothing to complete or cancel"
        if self.role() == "watcher":
            return "you watch this task: a watcher cannot complete or cancel it"
        return None


def row_text(row: SubTaskRow) -> str:
    """A sub-task row as the parent lists it: id, state and sub-state, where it runs when that
    is a remote agent, and its goal."""
    state = row.state.value.removeprefix("TASK_STATE_")
    parts = [row.task_id, f"{state} · {row.sub_state}" if row.sub_state else state]
    if row.agent:
        parts.append(f"on agent {row.agent}")
    parts.append(row.goal)
    return " · ".join(parts)
