"""What a command handler sees, and what it may ask for.

A handler gets a :class:`TaskSnapshot` (a read-only copy of the few task fields a command needs)
inside a ``command.invoked`` context, and returns a :class:`CommandResult`: a reply, and at most
two *intents*, new settings and a sub-task to spawn. It never gets the task object, a store or a
client, so a handler (ours or a plugin's) cannot change a task except through those intents,
which the operator validates and applies itself.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tiny_harness.core.commands.hooks import HookContext
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import TEXT_MAX, Budget, Role, TaskSpec, TaskStatus, TaskUsage
from tiny_harness.core.turn import TaskSettings


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ChildSnapshot(_Data):
    """One sub-task as its parent last saw it."""

    task_id: str
    state: TaskState
    sub_state: str | None = None


class TaskSnapshot(_Data):
    """The task a command runs on, as of the moment it was invoked."""

    id: str = Field(description="The task id (its resource name).")
    name: str = Field(default="", description="The task's human name.")
    state: TaskState
    sub_state: str | None = None
    settings: TaskSettings = Field(
        default_factory=TaskSettings,
        description="The task's own model and effort; None means the catalog default.",
    )
    steps_done: int = Field(default=0, ge=0)
    steps_total: int = Field(default=0, ge=0)
    children: tuple[ChildSnapshot, ...] = ()
    usage: TaskUsage = Field(
        default_factory=TaskUsage, description="What the task's own turns have used."
    )
    sub_task_usage: TaskUsage | None = Field(
        default=None, description="What its sub-tasks have used (theirs included), if any."
    )
    budget: Budget | None = Field(
        default=None, description="The budget that applies to the task; None: no limit."
    )

    @classmethod
    def of(cls, task_id: str, spec: TaskSpec, status: TaskStatus) -> TaskSnapshot:
        """The snapshot of a task stored as ``spec`` and ``status``."""
        plan = status.plan or spec.plan
        return cls(
            id=task_id,
            name=spec.name,
            state=status.state,
            sub_state=status.sub_state,
            settings=TaskSettings(model=status.model, reasoning_effort=status.reasoning_effort),
            steps_done=plan.done_count if plan is not None else 0,
            steps_total=len(plan.steps) if plan is not None else 0,
            children=tuple(
                ChildSnapshot(task_id=r.task_id, state=r.state, sub_state=r.sub_state)
                for r in status.sub_tasks
            ),
            usage=status.usage or TaskUsage(),
            sub_task_usage=status.sub_task_usage,
            budget=status.budget or spec.budget,
        )


class SpawnRequest(_Data):
    """A sub-task a command asks for: only its goal.

    Unlike the loop's :class:`~tiny_harness.core.turn.SpawnIntent` it carries no id: the operator
    derives one from the command's message, creates a conversation child with the sender as
    reporter and the agent as assignee, and copies the parent's model and effort.
    """

    goal: str = Field(min_length=1, max_length=TEXT_MAX)


class CommandResult(_Data):
    """A command's answer: the reply to post, and the intents the operator applies.

    ``settings`` are the task's settings *after* the command, both fields: the operator replaces
    the task's model and effort with them (it does not merge). The operator applies settings,
    then the spawn, then posts the reply; the task's state does not change.
    """

    reply: str
    settings: TaskSettings | None = None
    spawn: SpawnRequest | None = None
    budget: Budget | None = Field(
        default=None, description="The task's budget after the command (it replaces the old)."
    )

    @property
    def has_intents(self) -> bool:
        return self.settings is not None or self.spawn is not None or self.budget is not None


class CommandInvokedPre(HookContext):
    """The ``command.invoked.pre`` context. The arguments are the raw text after the name."""

    name: str
    arguments: str = ""
    sender: str
    sender_role: Role | None = Field(description="The sender's role on the task; None: none.")
    task: TaskSnapshot


class CommandInvokedIn(CommandInvokedPre):
    """The ``command.invoked.in`` context: a body sets ``result``. Bodies run only while it is
    unset, so the first body to answer wins; ordinary in executors see every command."""

    result: CommandResult | None = None


class CommandInvokedPost(CommandInvokedIn):
    """The ``command.invoked.post`` context: the result the operator will apply."""
