"""The first look at a new task: accept it and set its initial status, or reject it.

The CRD schema and its CEL rules refuse most bad content before it is stored; what they cannot
express (a plan with a dependency cycle, say) is checked here by parsing the spec with the one
task model. A task it cannot accept is not deleted: it is marked ``TASK_STATE_REJECTED`` with a
condition that names the field, so its author sees why in ``kubectl describe``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from tiny_harness.core.clock import rfc3339
from tiny_harness.core.conditions import Condition
from tiny_harness.core.errors import InvalidTaskError
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import (
    TEXT_MAX,
    Lifecycle,
    TaskSpec,
    TaskStatus,
    invalid_task_error,
)
from tiny_harness.kube.names import LIFECYCLE_ANNOTATION


@dataclass(frozen=True)
class Initialised:
    """The status to write (by alias, JSON-ready) and the Event to post."""

    status: dict[str, Any]
    reason: str
    message: str
    accepted: bool


def parse_spec(spec: Mapping[str, Any]) -> TaskSpec:
    """The task's spec as the model, or an :class:`InvalidTaskError` naming the field."""
    try:
        return TaskSpec.model_validate(dict(spec))
    except ValidationError as exc:
        raise invalid_task_error(exc) from None


def initialise(
    spec: Mapping[str, Any],
    generation: int | None,
    lifecycle: Lifecycle | None = None,
    name: str = "",
) -> Initialised:
    """Decide the initial status of a task that has none yet: ``lifecycle`` as the operator
    created it (a child's annotation), or as its spec implies. A participant task starts
    waiting for its person's answer, with its question as the status text."""
    now = rfc3339(digits=0)
    try:
        task = parse_spec(spec)
    except InvalidTaskError as exc:
        status = TaskStatus(
            state=TaskState.REJECTED,
            message=str(exc),
            conditions=(
                Condition(
                    type="Accepted",
                    status="False",
                    reason="InvalidSpec",
                    message=str(exc),
                    last_transition_time=now,
                    observed_generation=generation,
                ),
            ),
            observed_generation=generation,
            start_time=now,
            completion_time=now,
        )
        return Initialised(_dump(status), "Rejected", str(exc), accepted=False)
    lifecycle = lifecycle or task.default_lifecycle
    asks = lifecycle is Lifecycle.PARTICIPANT
    question = task.goal + (f"\n\n{task.description}" if task.description else "")
    status = TaskStatus(
        state=TaskState.INPUT_REQUIRED if asks else TaskState.SUBMITTED,
        sub_state=SubState.AWAITING_ANSWER.value if asks else None,
        message=question[:TEXT_MAX] if asks else None,
        message_id=f"{name}/question" if asks else None,
        lifecycle=lifecycle,
        plan=task.plan,
        conditions=(
            Condition(
                type="Accepted",
                status="True",
                reason="Initialised",
                message=f"accepted as a {lifecycle.value} task",
                last_transition_time=now,
                observed_generation=generation,
            ),
        ),
        observed_generation=generation,
        start_time=now,
    )
    return Initialised(
        _dump(status), "Initialised", f"accepted as a {lifecycle.value} task", accepted=True
    )


def _dump(status: TaskStatus) -> dict[str, Any]:
    return status.model_dump(mode="json", by_alias=True, exclude_none=True)


def created_lifecycle(annotations: Mapping[str, Any] | None) -> Lifecycle | None:
    """The lifecycle the operator created a child with (names.LIFECYCLE_ANNOTATION), if any."""
    raw = (annotations or {}).get(LIFECYCLE_ANNOTATION)
    try:
        return Lifecycle(raw) if raw else None
    except ValueError:
        return None
