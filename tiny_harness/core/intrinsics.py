"""The intrinsics: the tools every task has, applied by the loop itself with no I/O.

``create_plan`` and ``complete_step`` change the task's plan, ``spawn_subtask`` asks for a child
task, ``create_task_for_participant`` for a child that is a question to one person, and
``ask_participant`` parks the task with a question to its own participants,
``reply_to_subtask`` answers a sub-task's question, and ``publish_artifact`` publishes (a chunk
of) an artifact, whose parts its tool entry journals (:mod:`.artifacts`). None of them
talks to anything: each is a pure function from the task and the call's arguments to an
:class:`IntrinsicResult`, and what needs the outside world (creating the child, parking) is an
intent the host carries out. That keeps them deterministic, so a replayed turn reaches the
same state.

Their arguments are checked against the schemas below by the same validating invoker as any
user tool's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from tiny_harness.core.agent import AgentChoice
from tiny_harness.core.artifact_index import (
    ARTIFACT_DESCRIPTION_MAX,
    ARTIFACT_NAME_MAX,
    ArtifactChunk,
    artifact_id_for,
    find,
    parse_parts,
    refuse_publish,
)
from tiny_harness.core.errors import PlanCycleError, PlanError
from tiny_harness.core.llm import ToolSpec
from tiny_harness.core.plan import Plan, PlanStep
from tiny_harness.core.reach import Reach, refuse_depth, refuse_person
from tiny_harness.core.sizes import ARTIFACT_BYTES, ARTIFACT_CHUNK_BYTES, MAX_SUB_TASKS, kib
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import Lifecycle, SubTaskRow, TaskExtension
from tiny_harness.core.turn import ReplyIntent, SpawnIntent

CREATE_PLAN: Final = "create_plan"
COMPLETE_STEP: Final = "complete_step"
SPAWN_SUBTASK: Final = "spawn_subtask"
ASK_PARTICIPANT: Final = "ask_participant"
CREATE_TASK_FOR_PARTICIPANT: Final = "create_task_for_participant"
REPLY_TO_SUBTASK: Final = "reply_to_subtask"
PUBLISH_ARTIFACT: Final = "publish_artifact"

_TEXT: Final = {"type": "string", "maxLength": 65536}

_SPAWN_DESCRIPTION: Final = (
    "Delegate part of the work to a new sub-task, linked from the current plan step. "
    "Its result arrives as a note when it ends; this task cannot complete before then."
)
_SPAWN_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "goal": {"type": "string", "minLength": 1, "maxLength": 65536},
        "description": _TEXT,
    },
    "required": ["goal"],
    "additionalProperties": False,
}


def spawn_subtask_spec(agents: Sequence[AgentChoice]) -> ToolSpec:
    """``spawn_subtask`` as a turn offers it: with no remote agent ready, the sub-task is
    this harness's own; with some, ``agent`` may name one of them (and only them)."""
    if not agents:
        return ToolSpec(
            name=SPAWN_SUBTASK, description=_SPAWN_DESCRIPTION, parameters=_SPAWN_PARAMETERS
        )
    listed = "\n".join(a.line() for a in agents)
    parameters = {
        **_SPAWN_PARAMETERS,
        "properties": {
            **_SPAWN_PARAMETERS["properties"],
            "agent": {
                "type": "string",
                "enum": [a.name for a in agents],
                "description": "The remote agent to do it; leave it out for this agent.",
            },
        },
    }
    return ToolSpec(
        name=SPAWN_SUBTASK,
        description=f"{_SPAWN_DESCRIPTION} Without agent, this agent does the sub-task; with "
        f"agent, that remote agent does, and its answers arrive as notes. Agents:\n{listed}",
        parameters=parameters,
    )


INTRINSIC_SPECS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        name=CREATE_PLAN,
        description=(
            "Set the task's plan: steps with a unique name, a description and the names of the "
            "steps they depend on. The dependencies must not form a cycle. Replaces any plan."
        ),
        parameters={
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 256,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "minLength": 1, "maxLength": 253},
                            "description": _TEXT,
                            "dependencies": {"type": "array", "items": {"type": "string"}},
                        },
                        "required": ["name"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["steps"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name=COMPLETE_STEP,
        description=(
            "Mark a plan step done and record what it produced; artifact names the artifact "
            "(published with publish_artifact) that is the step's output, if one is."
        ),
        parameters={
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "output": _TEXT,
                "artifact": {"type": "string", "minLength": 1, "maxLength": ARTIFACT_NAME_MAX},
            },
            "required": ["name", "output"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name=SPAWN_SUBTASK,
        description=_SPAWN_DESCRIPTION,
        parameters=_SPAWN_PARAMETERS,
    ),
    ToolSpec(
        name=CREATE_TASK_FOR_PARTICIPANT,
        description=(
            "Ask one person for something you need (a decision, an approval, a fact) as a task "
            "of their own: it waits for their answer, which arrives as a note when they give "
            "it; this task cannot complete before then. The participant is their identity as "
            "this harness knows it (a Kubernetes user or a participant id), and one of this "
            "task's participants or someone its reach allows."
        ),
        parameters={
            "type": "object",
            "properties": {
                "participant": {"type": "string", "minLength": 1, "maxLength": 253},
                "goal": {"type": "string", "minLength": 1, "maxLength": 65536},
                "description": _TEXT,
            },
            "required": ["participant", "goal"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name=REPLY_TO_SUBTASK,
        description=(
            "Send one of this task's sub-tasks a message: the answer to a question it asked, "
            "or more to go on. A sub-task on a remote agent passes it to that agent. What the "
            "sub-task does next arrives as a note."
        ),
        parameters={
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "minLength": 1, "maxLength": 253},
                "text": {"type": "string", "minLength": 1, "maxLength": 65536},
            },
            "required": ["task_id", "text"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name=PUBLISH_ARTIFACT,
        description=(
            "Publish an artifact: a result the participants get apart from your messages (a "
            "report, a data set, a file). Its parts are texts, JSON objects or files (bytes in "
            "base64). Publishing again under the same name replaces it; with append: true the "
            "parts are added to it instead, so a large artifact can be published in several "
            f"calls. One call carries at most {kib(ARTIFACT_CHUNK_BYTES)}, an artifact at most "
            f"{kib(ARTIFACT_BYTES)}."
        ),
        parameters={
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": ARTIFACT_NAME_MAX},
                "description": {"type": "string", "maxLength": ARTIFACT_DESCRIPTION_MAX},
                "parts": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 64,
                    "items": {
                        "oneOf": [
                            {
                                "type": "object",
                                "properties": {"text": {"type": "string"}},
                                "required": ["text"],
                                "additionalProperties": False,
                            },
                            {
                                "type": "object",
                                "properties": {"data": {"type": "object"}},
                                "required": ["data"],
                                "additionalProperties": False,
                            },
                            {
                                "type": "object",
                                "properties": {
                                    "file": {
                                        "type": "object",
                                        "properties": {
                                            "name": {"type": "string", "maxLength": 253},
                                            "media_type": {"type": "string", "maxLength": 253},
                                            "bytes": {"type": "string"},
                                        },
                                        "required": ["bytes"],
                                        "additionalProperties": False,
                                    }
                                },
                                "required": ["file"],
                                "additionalProperties": False,
                            },
                        ]
                    },
                },
                "append": {"type": "boolean", "default": False},
            },
            "required": ["name", "parts"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name=ASK_PARTICIPANT,
        description=(
            "Ask the task's participants a question you need answered to go on. The turn ends; "
            "the answer arrives as the next message."
        ),
        parameters={
            "type": "object",
            "properties": {"question": {"type": "string", "minLength": 1, "maxLength": 65536}},
            "required": ["question"],
            "additionalProperties": False,
        },
    ),
)

INTRINSIC_NAMES: Final = frozenset(spec.name for spec in INTRINSIC_SPECS)


@dataclass(frozen=True)
class IntrinsicResult:
    """What an intrinsic did: the text for the model, and the change or intent it produced."""

    content: str
    is_error: bool = False
    plan: Plan | None = None
    spawn: SpawnIntent | None = None
    question: str | None = None
    reply: ReplyIntent | None = None
    artifact: ArtifactChunk | None = None


def _error(message: str) -> IntrinsicResult:
    return IntrinsicResult(content=f"Error: {message}", is_error=True)


def create_plan(args: dict[str, Any]) -> IntrinsicResult:
    try:
        plan = Plan.create(
            PlanStep(
                name=s["name"],
                description=s.get("description", ""),
                dependencies=tuple(s.get("dependencies", ())),
            )
            for s in args["steps"]
        )
    except PlanCycleError as exc:
        return _error(
            f"the plan was not created: its dependencies form a cycle: {' -> '.join(exc.cycle)}. "
            "Remove one of these dependencies and call create_plan again"
        )
    except PlanError as exc:
        return _error(f"the plan was not created: {exc}. Fix it and call create_plan again")
    except ValidationError as exc:
        return _error(f"the plan was not created: {exc.errors()[0]['msg']}")
    current = plan.current_step()
    return IntrinsicResult(
        content=f"Plan created with {len(plan.steps)} step(s): "
        f"{', '.join(s.name for s in plan.steps)}. Current step: "
        f"{current.name if current else 'none'}.",
        plan=plan,
    )


def complete_step(task: TaskExtension, args: dict[str, Any]) -> IntrinsicResult:
    if task.plan is None:
        return _error("there is no plan yet; call create_plan first")
    artifact = args.get("artifact")
    if artifact is not None and find(task.artifacts, artifact) is None:
        known = ", ".join(repr(r.name) for r in task.artifacts) or "none yet"
        return _error(
            f"the step was not completed: there is no artifact named {artifact!r} (artifacts: "
            f"{known}); publish it with publish_artifact first, or leave artifact out"
        )
    try:
        plan = task.plan.complete_step(args["name"], args["output"], artifact)
    except PlanError as exc:
        return _error(str(exc))
    current = plan.current_step()
    follow = f"Next step: {current.name}." if current else "Every step is done."
    return IntrinsicResult(
        content=f"Step {args['name']!r} done ({plan.progress}). {follow}", plan=plan
    )


def too_many_sub_tasks(task: TaskExtension) -> IntrinsicResult | None:
    """A spawn past :data:`~tiny_harness.core.sizes.MAX_SUB_TASKS`, refused to the model."""
    if len(task.sub_tasks) < MAX_SUB_TASKS:
        return None
    return _error(
        f"this task has {len(task.sub_tasks)} sub-tasks, the most one task may have; finish "
        "with them, or do the work here"
    )


def too_deep(task_id: str, reach: Reach) -> IntrinsicResult | None:
    """A spawn below the tree's depth bound (:mod:`.reach`), refused to the model."""
    refused = refuse_depth(task_id, reach.depth, reach.max_depth)
    if refused is None:
        return None
    return _error(f"the sub-task was not created: {refused}; do this part of the work here")


def spawn_subtask(
    task: TaskExtension, args: dict[str, Any], *, task_id: str, step_id: str, reach: Reach
) -> IntrinsicResult:
    refused = too_many_sub_tasks(task) or too_deep(task_id, reach)
    if refused is not None:
        return refused
    current = task.plan.current_step() if task.plan is not None else None
    intent = SpawnIntent(
        id=step_id,
        parent_task_id=task_id,
        goal=args["goal"],
        description=args.get("description", ""),
        step=current.name if current is not None else None,
        agent=args.get("agent"),
    )
    return IntrinsicResult(content="", spawn=intent)


def create_task_for_participant(
    task: TaskExtension, args: dict[str, Any], *, task_id: str, step_id: str, reach: Reach
) -> IntrinsicResult:
    refused = too_many_sub_tasks(task) or too_deep(task_id, reach)
    if refused is not None:
        return refused
    participant = str(args["participant"]).strip()
    if not participant:
        return _error("participant: name the person who is to answer")
    if participant.startswith("task:") or participant == "system":
        return _error(
            f"participant {participant!r} is not a person; name someone who answers "
            "(use spawn_subtask to hand work to an agent)"
        )
    stranger = refuse_person(task, participant, reach)
    if stranger is not None:
        return _error(stranger)
    current = task.plan.current_step() if task.plan is not None else None
    intent = SpawnIntent(
        id=step_id,
        parent_task_id=task_id,
        goal=args["goal"],
        description=args.get("description", ""),
        lifecycle=Lifecycle.PARTICIPANT,
        assignee=participant,
        step=current.name if current is not None else None,
    )
    return IntrinsicResult(content="", spawn=intent)


def with_row(task: TaskExtension, row: SubTaskRow) -> TaskExtension:
    """The task with ``row`` in its sub-task rows: in place of the child's row, or added."""
    rows = task.sub_tasks
    for i, existing in enumerate(rows):
        if existing.task_id == row.task_id:
            return task.model_copy(update={"sub_tasks": (*rows[:i], row, *rows[i + 1 :])})
    return task.model_copy(update={"sub_tasks": (*rows, row)})


def record_spawn(
    task: TaskExtension, intent: SpawnIntent, child_id: str
) -> tuple[Plan | None, SubTaskRow, str]:
    """The plan with the child linked from its step, the child's row, and the model's result."""
    plan = task.plan
    if plan is not None and intent.step is not None:
        plan = plan.link_task(intent.step, child_id)
    linked = f", linked from step {intent.step!r}" if intent.step else ""
    if intent.lifecycle is Lifecycle.PARTICIPANT:
        row = SubTaskRow(
            task_id=child_id,
            goal=intent.goal,
            state=TaskState.INPUT_REQUIRED,
            sub_state=SubState.AWAITING_ANSWER.value,
        )
        content = (
            f"Created task {child_id} for {intent.assignee}{linked}. Their answer arrives as a "
            "note when they give it; this task cannot complete before then."
        )
        return plan, row, content
    row = SubTaskRow(
        task_id=child_id, agent=intent.agent, goal=intent.goal, state=TaskState.SUBMITTED
    )
    on = f" on agent {intent.agent}" if intent.agent else ""
    content = (
        f"Spawned sub-task {child_id}{on}{linked}. Its result arrives as a note when it ends; "
        "this task cannot complete before then."
    )
    return plan, row, content


def reply_to_subtask(task: TaskExtension, args: dict[str, Any], *, step_id: str) -> IntrinsicResult:
    target = str(args["task_id"])
    row = next((r for r in task.sub_tasks if r.task_id == target), None)
    if row is None:
        known = ", ".join(r.task_id for r in task.sub_tasks) or "none"
        return _error(f"{target} is not a sub-task of this task; its sub-tasks: {known}")
    if row.is_resolved:
        return _error(f"sub-task {target} has ended ({row.state.value}); it takes no messages")
    return IntrinsicResult(
        content=f"Sent to sub-task {target}. What it does next arrives as a note.",
        reply=ReplyIntent(id=step_id, task_id=target, text=args["text"]),
    )


def publish_artifact(task: TaskExtension, args: dict[str, Any]) -> IntrinsicResult:
    """A chunk of the artifact ``name``, within every bound of :mod:`.sizes`; past one, an
    error that names it, and nothing published."""
    name = str(args["name"]).strip()
    if not name:
        return _error("name: give the artifact a name (a few words)")
    try:
        parts = parse_parts(args["parts"])
    except ValueError as exc:
        return _error(f"the artifact was not published: {exc}")
    append = bool(args.get("append", False))
    size = sum(p.size for p in parts)
    refused = refuse_publish(task.artifacts, name, size, append)
    if refused is not None:
        return _error(refused)
    existing = find(task.artifacts, name)
    chunk = ArtifactChunk(
        artifact_id=artifact_id_for(name),
        name=name,
        description=str(args.get("description") or (existing.description if existing else "")),
        parts=parts,
        append=append and existing is not None,
        size=size,
    )
    if chunk.append:
        assert existing is not None
        content = (
            f"Added {kib(size)} to artifact {name!r} (chunk {len(existing.chunks) + 1}, "
            f"{kib(existing.size + size)} in all)."
        )
    else:
        verb = "Replaced" if existing is not None else "Published"
        content = f"{verb} artifact {name!r} ({len(parts)} part(s), {kib(size)})."
    return IntrinsicResult(content=content, artifact=chunk)


def ask_participant(args: dict[str, Any]) -> IntrinsicResult:
    return IntrinsicResult(
        content="Your question was sent to the participants. This turn ends here; their answer "
        "arrives as the next message.",
        question=args["question"],
    )


def apply_intrinsic(
    name: str,
    args: dict[str, Any],
    task: TaskExtension,
    *,
    task_id: str,
    step_id: str,
    reach: Reach | None = None,
) -> IntrinsicResult:
    """Apply the intrinsic ``name`` to ``task`` with already validated ``args``, within
    ``reach`` (:mod:`.reach`; None: the task's participants only, the default depth bound,
    and the task a root)."""
    reach = reach or Reach()
    if name == CREATE_PLAN:
        return create_plan(args)
    if name == COMPLETE_STEP:
        return complete_step(task, args)
    if name == SPAWN_SUBTASK:
        return spawn_subtask(task, args, task_id=task_id, step_id=step_id, reach=reach)
    if name == ASK_PARTICIPANT:
        return ask_participant(args)
    if name == CREATE_TASK_FOR_PARTICIPANT:
        return create_task_for_participant(
            task, args, task_id=task_id, step_id=step_id, reach=reach
        )
    if name == REPLY_TO_SUBTASK:
        return reply_to_subtask(task, args, step_id=step_id)
    if name == PUBLISH_ARTIFACT:
        return publish_artifact(task, args)
    raise ValueError(f"{name!r} is not an intrinsic; intrinsics are {sorted(INTRINSIC_NAMES)}")
