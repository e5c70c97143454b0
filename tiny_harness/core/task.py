"""The task model: the one definition of what a tiny-harness task holds.

Three views are cut from these models and nothing else:

- the ``HarnessTask`` custom resource: :class:`TaskSpec` is its ``.spec`` and
  :class:`TaskStatus` its ``.status`` (camelCase, by alias);
- the A2A task extension under :data:`~tiny_harness.core.extensions.TASK_EXT_KEY`
  (:class:`TaskExtension`, snake_case, by field name);
- the task envelope a participant may send, which is a :class:`TaskSpec` and never more.

The CRD schema and the JSON Schemas under ``docs/a2a/ext/`` are generated from these classes,
and the CEL rules the API server enforces are declared here beside the Python validators that
enforce the same rule, so the two cannot drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import (
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from tiny_harness.core.approval import PendingApproval, TaskApprovalRule
from tiny_harness.core.artifact_index import ArtifactRow
from tiny_harness.core.conditions import Condition, Conditions
from tiny_harness.core.errors import InvalidTaskError, ServerControlledFieldError
from tiny_harness.core.plan import Plan
from tiny_harness.core.sizes import MAX_ARTIFACTS
from tiny_harness.core.states import TaskState

# The shared vocabulary, importable from here as from the module that holds it.
from tiny_harness.core.vocabulary import (
    ENDING_ROLES,
    NAME_MAX,
    TEXT_MAX,
    TTL_MAX,
    Model,
    Role,
    ShortText,
)

#: Fields only the server (the operator) may set. An envelope carrying one is refused whole.
SERVER_CONTROLLED_FIELDS: Final = frozenset(
    {
        "lifecycle",
        "model",
        "reasoning_effort",
        "active_seconds",
        "waiting_since",
        "approvals",
        "artifacts",
    }
)

#: The largest limit a budget may set.
BUDGET_MAX: Final = 10**12
#: What an input timeout does.
OnTimeout = Literal["fail", "complete"]
OnIdle = Literal["complete", "cancel"]


class Lifecycle(StrEnum):
    """How a task ends: a conversation waits for its participants, a delegated task decides,
    and a participant task (a question an agent asked a person) ends with its assignee's
    answer, with no model call."""

    CONVERSATION = "conversation"
    DELEGATED = "delegated"
    PARTICIPANT = "participant"


Effort = Literal["low", "medium", "high"]
EFFORTS: Final[tuple[Effort, ...]] = ("low", "medium", "high")


#: A HarnessToolServer's name (a Kubernetes object name), never an address.
ToolServerName = Annotated[
    str, Field(min_length=1, max_length=NAME_MAX, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
]


class Participant(Model):
    """Someone (a person, a ServiceAccount, an agent) with a role on a task."""

    id: ShortText = Field(description="The participant's identity, as the gateway sees it.")
    role: Role = Field(description="assignee, reporter, watcher or admin.")


class TaskLink(Model):
    """A reference to another task: its own task id, and the agent it lives on (None: here)."""

    task_id: ShortText = Field(description="The linked task's own id (its resource name here).")
    agent: str | None = Field(
        default=None, description="The agent holding the task; empty means this harness."
    )


class SubTaskRow(Model):
    """The parent's record of one child: the child's id, agent, and its last known state."""

    task_id: ShortText = Field(description="The child's own task id.")
    agent: str | None = Field(default=None, description="The child's agent; empty means here.")
    goal: str = Field(default="", max_length=TEXT_MAX, description="The child's goal.")
    state: TaskState = Field(
        default=TaskState.SUBMITTED, description="The child's A2A state, as last seen."
    )
    sub_state: str | None = Field(default=None, description="The child's sub-state.")
    result_unread: bool = Field(
        default=False,
        description="The child ended and its result has not yet been read by the parent's model.",
    )

    @property
    def is_resolved(self) -> bool:
        return self.state.is_terminal


def _unique_participants() -> dict[str, Any]:
    return {
        "x-kubernetes-validations": [
            {
                "rule": "self.all(p, self.exists_one(q, q.id == p.id))",
                "message": "spec.participants: each participant id must appear once",
            },
        ]
    }


class Budget(Model):
    """The most a task may use (its own turns and its sub-tasks' together)."""

    max_tokens: int | None = Field(
        default=None,
        ge=1,
        le=BUDGET_MAX,
        description="Input and output tokens, the sub-tasks' included.",
    )
    max_model_calls: int | None = Field(
        default=None, ge=1, le=BUDGET_MAX, description="Model calls, the sub-tasks' included."
    )
    on_exceeded: Literal["park", "fail"] = Field(
        default="park",
        description="park: the task waits (sub-state awaiting-budget) until a reporter or an "
        "admin raises the budget with /budget; fail: the task fails (BudgetExceeded).",
    )

    def exceeded_by(self, used: TaskUsage) -> str | None:
        """What of the budget ``used`` has reached, or None while some is left."""
        if self.max_model_calls is not None and used.model_calls >= self.max_model_calls:
            return f"{used.model_calls} of {self.max_model_calls} model calls"
        if self.max_tokens is not None:
            tokens = used.input_tokens + used.output_tokens
            if tokens >= self.max_tokens:
                return f"{tokens:,} of {self.max_tokens:,} tokens"
        return None

    def text(self) -> str:
        parts = []
        if self.max_tokens is not None:
            parts.append(f"{self.max_tokens:,} tokens")
        if self.max_model_calls is not None:
            parts.append(f"{self.max_model_calls} model calls")
        limits = " and ".join(parts) or "no limit"
        return f"{limits} (when reached: {self.on_exceeded})"


class TaskSpec(Model):
    """What a participant writes: the ``HarnessTask`` spec, and the task envelope.

    It holds none of the server-controlled fields; :func:`spec_from_envelope` refuses an
    envelope that tries to set one.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.participants) || size(self.participants) == 0 || "
                    "self.participants.exists(p, p.role == 'assignee')",
                    "message": "spec.participants: a task with participants needs an assignee",
                },
            ]
        }
    )

    name: str = Field(default="", max_length=NAME_MAX, description="A short human name.")
    type: str | None = Field(
        default=None, max_length=NAME_MAX, description="An optional task type."
    )
    goal: str = Field(min_length=1, max_length=TEXT_MAX, description="What the task must achieve.")
    description: str = Field(default="", max_length=TEXT_MAX, description="Details.")
    acceptance_criteria: tuple[Annotated[str, Field(max_length=TEXT_MAX)], ...] = Field(
        default=(), max_length=64, description="How to tell that the goal is met."
    )
    participants: tuple[Participant, ...] = Field(
        default=(),
        max_length=64,
        description="Who works on, asked for, or follows the task.",
        json_schema_extra=_unique_participants(),
    )
    parent: TaskLink | None = Field(
        default=None, description="The task this one was spawned from, if any."
    )
    agent: str | None = Field(
        default=None,
        min_length=1,
        max_length=NAME_MAX,
        description="The HarnessAgent (in this namespace) that does the work: the task is a "
        "conversation with that remote A2A agent, which this harness relays and mirrors; "
        "empty: this harness's own model.",
    )
    plan: Plan | None = Field(default=None, description="An initial plan, if the author has one.")
    ttl_seconds_after_finished: int | None = Field(
        default=None,
        ge=0,
        le=TTL_MAX,
        description="Delete the task this many seconds after it ends (completed, cancelled, "
        "failed or rejected), with its messages, turn records and sub-tasks; empty: the "
        "operator's default (operator.ttl_seconds_after_finished), or never. A task that waits "
        "for a participant is never deleted by it.",
    )

    active_deadline_seconds: int | None = Field(
        default=None,
        ge=1,
        le=TTL_MAX,
        description="The most time the task may spend working, parked time not counted; past "
        "it the running turn is cut and the task fails with reason DeadlineExceeded.",
    )
    input_timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        le=TTL_MAX,
        description="The most time the task may wait for a participant (input or auth "
        "required) before onTimeout applies.",
    )
    budget: Budget | None = Field(
        default=None,
        description="The most the task may use; empty: the operator's default "
        "(operator.budget), or no limit.",
    )
    on_timeout: OnTimeout = Field(
        default="fail",
        description="What inputTimeoutSeconds does: fail the task (reason InputTimeout), or "
        "complete it (when no sub-task holds it open; otherwise it fails).",
    )
    idle_timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        le=TTL_MAX,
        description="How long a conversation may wait for its next message before onIdle "
        "ends it; empty: the operator's default (operator.idle_timeout_seconds).",
    )
    on_idle: OnIdle | None = Field(
        default=None,
        description="How an idle conversation ends: complete it (when no sub-task holds it "
        "open; otherwise it is cancelled), or cancel it; empty: the operator's default.",
    )
    tool_servers: tuple[ToolServerName, ...] = Field(
        default=(),
        max_length=16,
        description="HarnessToolServers in the task's namespace whose tools the model may call, "
        "by name (servers marked default are offered as well). Only a name: who may create a "
        "HarnessToolServer decides where it points.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )

    reach: tuple[ShortText, ...] = Field(
        default=(),
        max_length=64,
        description="People besides the task's participants for whom its model may create a "
        "task (create_task_for_participant), by id; empty: its participants only (and the "
        "namespace's list, operator.reach). It widens what the model may do to others: a "
        "reporter or an admin of the task sets it.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    approval: tuple[TaskApprovalRule, ...] = Field(
        default=(),
        max_length=16,
        description="Calls that wait for a participant's approval before they run, on top of "
        "what the task's tool servers and agents require (a rule only adds requirements).",
    )

    @field_validator("tool_servers", "reach")
    @classmethod
    def _unique_names(cls, names: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"spec.{to_camel(str(info.field_name))}: {name!r} appears twice")
        return names

    @model_validator(mode="after")
    def _check_participants(self) -> TaskSpec:
        seen: set[str] = set()
        for p in self.participants:
            if p.id in seen:
                raise ValueError(f"spec.participants: participant id {p.id!r} appears twice")
            seen.add(p.id)
        if self.participants and not any(p.role is Role.ASSIGNEE for p in self.participants):
            raise ValueError("spec.participants: a task with participants needs an assignee")
        return self

    def role_of(self, participant_id: str) -> Role | None:
        for p in self.participants:
            if p.id == participant_id:
                return p.role
        return None

    @property
    def local_parent(self) -> str | None:
        """The parent's name when the parent is a task of this harness (a parent on another
        agent, which delegated this task over A2A, is nothing to look up here)."""
        if self.parent is None or self.parent.agent:
            return None
        return self.parent.task_id

    @property
    def assignees(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.participants if p.role is Role.ASSIGNEE)

    @property
    def default_lifecycle(self) -> Lifecycle:
        """A task without a lifecycle is delegated when it has a parent, a conversation if not."""
        return Lifecycle.DELEGATED if self.parent is not None else Lifecycle.CONVERSATION


class Runner(Model):
    """Which operator replica runs the task's turns, and when it last said so (the lease)."""

    holder: ShortText = Field(description="The operator replica's identity.")
    renew_time: str = Field(description="When the lease was last renewed (RFC 3339).")
    epoch: int = Field(
        default=0,
        ge=0,
        description="Raised each time the lease is taken; the turn's records are fenced by it.",
    )


class TaskUsage(Model):
    """Model calls, tokens and tool calls."""

    model_calls: int = Field(default=0, ge=0, description="Model requests made.")
    input_tokens: int = Field(default=0, ge=0, description="Tokens sent to the model.")
    output_tokens: int = Field(default=0, ge=0, description="Tokens the model answered with.")
    cached_input_tokens: int = Field(
        default=0,
        ge=0,
        description="Of the input tokens, those the provider served from its prompt cache.",
    )
    tool_calls: int = Field(default=0, ge=0, description="Tool calls made.")

    def __add__(self, other: TaskUsage) -> TaskUsage:
        return TaskUsage(
            model_calls=self.model_calls + other.model_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            tool_calls=self.tool_calls + other.tool_calls,
        )

    def text(self) -> str:
        """``3 model calls, 1,204 tokens in (800 cached), 310 out, 2 tool calls``."""
        calls = "model call" if self.model_calls == 1 else "model calls"
        tools = "tool call" if self.tool_calls == 1 else "tool calls"
        cached = f" ({self.cached_input_tokens:,} cached)" if self.cached_input_tokens else ""
        return (
            f"{self.model_calls} {calls}, {self.input_tokens:,} tokens in{cached}, "
            f"{self.output_tokens:,} out, {self.tool_calls} {tools}"
        )


class TaskStatus(Model):
    """What the operator writes: the ``HarnessTask`` status subresource.

    Written only by the operator; the gateway and people may read it but never set it.
    """

    state: TaskState = Field(default=TaskState.SUBMITTED, description="The A2A task state.")
    sub_state: str | None = Field(
        default=None, description="Refines INPUT_REQUIRED: awaiting-next-message, awaiting-answer."
    )
    message: str | None = Field(
        default=None, max_length=TEXT_MAX, description="The latest status text."
    )
    message_id: str | None = Field(
        default=None,
        max_length=512,
        description="The status text's message id: the history entry of the reply it shows, or "
        "an id of its own for a text that is in no history (unique per text written).",
    )
    lifecycle: Lifecycle | None = Field(
        default=None, description="conversation, delegated or participant."
    )
    model: str | None = Field(default=None, description="The model this task's turns use.")
    reasoning_effort: Effort | None = Field(
        default=None, description="The reasoning effort; empty means the provider default."
    )
    plan: Plan | None = Field(default=None, description="The current plan.")
    sub_tasks: tuple[SubTaskRow, ...] = Field(default=(), description="One row per child task.")
    conditions: Conditions = Field(
        default=(), description="What holds of the task (Accepted, Error, ToolServersReady)."
    )
    observed_generation: int | None = Field(
        default=None, description="The spec generation this status reflects."
    )
    turn: int = Field(default=0, ge=0, description="The number of the latest turn.")
    runner: Runner | None = Field(
        default=None, description="The operator replica running a turn, while one runs."
    )
    start_time: str | None = Field(
        default=None, description="When the operator accepted the task (RFC 3339)."
    )
    active_seconds: float = Field(
        default=0.0,
        ge=0,
        description="Time spent working so far (turns run), parked time not counted; "
        "activeDeadlineSeconds counts it.",
    )
    turn_start_time: str | None = Field(
        default=None,
        description="When the running turn started (RFC 3339), while one runs.",
    )
    turn_attempts: int | None = Field(
        default=None,
        ge=1,
        description="How many times the running turn has been started (1, then one more for "
        "every resume after a restart or a lost lease), while one runs; past a bound the turn "
        "is given up.",
    )
    waiting_since: str | None = Field(
        default=None,
        description="Since when the task has waited for a participant (RFC 3339), while it "
        "does; inputTimeoutSeconds counts from it.",
    )
    budget: Budget | None = Field(
        default=None,
        description="The budget as a reporter or an admin last set it with /budget; it "
        "replaces spec.budget.",
    )
    usage: TaskUsage | None = Field(
        default=None,
        description="What the task's own turns used (model calls, tokens, tool calls), summed "
        "from its turn records.",
    )
    sub_task_usage: TaskUsage | None = Field(
        default=None,
        description="What its sub-tasks used, theirs included: usage plus this is the total.",
    )
    turn_usage: TaskUsage | None = Field(
        default=None,
        description="What the running turn has used so far (its journaled model and tool "
        "calls), as of the last renewal of its lease; not in usage until the turn ends, and "
        "empty between turns.",
    )
    approvals: tuple[PendingApproval, ...] = Field(
        default=(),
        max_length=16,
        description="The calls the task's turn asked for that wait for a decision "
        "(sub-state awaiting-approval), and the decisions given so far.",
    )
    completion_time: str | None = Field(
        default=None,
        description="When the task reached the terminal state it is in (RFC 3339); cleared "
        "when a failed conversation takes messages again. ttlSecondsAfterFinished counts "
        "from it.",
    )
    artifacts: tuple[ArtifactRow, ...] = Field(
        default=(),
        max_length=MAX_ARTIFACTS,
        description="The index of the artifacts the task's model published: each one's id, "
        "name, size and where its chunks are journaled (turn and entry); their contents are "
        "in the turn records, never here.",
    )


class TaskExtension(TaskSpec):
    """The task as the A2A task extension carries it (snake_case keys, in Task.metadata)."""

    model_config = ConfigDict(alias_generator=None, json_schema_extra=None)

    sub_tasks: tuple[SubTaskRow, ...] = ()
    lifecycle: Lifecycle | None = None
    model: str | None = None
    reasoning_effort: Effort | None = None
    #: Working time so far (status.activeSeconds), once a turn has run.
    active_seconds: float | None = None
    #: Since when the task waits for a participant (status.waitingSince), while it does.
    waiting_since: str | None = None
    #: What its own turns used so far (status.usage): model calls, tokens, tool calls.
    usage: TaskUsage | None = None
    #: What the running turn has used so far (status.turnUsage), while a turn runs.
    turn_usage: TaskUsage | None = None
    #: The version the task was read at (its resourceVersion): every event of a stream carries
    #: it, and a client that reconnects with the last one it read (``Last-Event-ID``) is sent
    #: what it missed (docs/design/gateway.md, "Streams that resume").
    version: str | None = None
    #: The calls that wait for a decision (status.approvals), while the task awaits approval.
    approvals: tuple[PendingApproval, ...] = ()
    #: The index of the task's artifacts (status.artifacts): names, sizes, where each chunk is;
    #: an A2A task carries their contents in ``Task.artifacts``.
    artifacts: tuple[ArtifactRow, ...] = ()

    @property
    def effective_lifecycle(self) -> Lifecycle:
        return self.lifecycle or self.default_lifecycle

    @classmethod
    def of(
        cls, spec: TaskSpec, status: TaskStatus | None = None, *, version: str | None = None
    ) -> TaskExtension:
        """The extension view of a task stored as spec and status, read at ``version``."""
        status = status or TaskStatus()
        fields = spec.model_dump(exclude={"plan"})
        return cls(
            **fields,
            plan=status.plan or spec.plan,
            sub_tasks=status.sub_tasks,
            lifecycle=status.lifecycle,
            model=status.model,
            reasoning_effort=status.reasoning_effort,
            active_seconds=status.active_seconds or None,
            waiting_since=status.waiting_since,
            usage=status.usage,
            turn_usage=status.turn_usage,
            version=version,
            approvals=status.approvals,
            artifacts=status.artifacts,
        )


def local_parent_of(spec: Mapping[str, Any] | None) -> str | None:
    """:attr:`TaskSpec.local_parent` of a spec as it is stored (camelCase, unparsed): the
    parent's name when the parent is a task here, None for no parent or one on another agent."""
    parent = (spec or {}).get("parent")
    if not isinstance(parent, Mapping) or parent.get("agent"):
        return None
    name = parent.get("taskId")
    return str(name) if name else None


def spec_from_envelope(envelope: Mapping[str, Any]) -> TaskSpec:
    """Parse a participant's task envelope (snake_case or camelCase keys) into a spec.

    An envelope that sets a server-controlled field is refused whole, whoever sends it, and
    any other problem is an :class:`InvalidTaskError` naming the field.
    """
    controlled = {
        name for name in SERVER_CONTROLLED_FIELDS if name in envelope or to_camel(name) in envelope
    }
    if controlled:
        raise ServerControlledFieldError(sorted(controlled))
    try:
        return TaskSpec.model_validate(dict(envelope))
    except ValidationError as exc:
        raise invalid_task_error(exc) from None


def invalid_task_error(exc: ValidationError, prefix: str = "spec") -> InvalidTaskError:
    """The first problem of a validation error, as a typed error naming the field."""
    first = exc.errors()[0]
    loc = ".".join(str(part) for part in first["loc"])
    field = f"{prefix}.{loc}" if loc else prefix
    message = str(first["msg"]).removeprefix("Value error, ")
    if message.startswith(f"{prefix}."):
        field, _, message = message.partition(": ")
    return InvalidTaskError(field, message)


__all__ = [
    "ENDING_ROLES",
    "NAME_MAX",
    "TEXT_MAX",
    "TTL_MAX",
    "Condition",
    "Model",
    "Role",
    "ShortText",
]
