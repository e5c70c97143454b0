"""Conversion between a stored task (spec and status) and the A2A ``Task`` clients see.

The gateway holds no state: every A2A ``Task`` it returns is rendered from a ``HarnessTask``'s
spec and status by :func:`task_to_a2a`, and every task envelope a client sends is read by
:func:`envelope_from_metadata`. Keeping both directions here, next to their inverses
(:func:`extension_from_a2a`, :func:`status_from_a2a`), lets a test prove the round trip is
lossless, so a client reading a task sees exactly what the operator wrote.

The protocol types are a2a-sdk's generated protobuf classes; nothing here re-declares them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from a2a.types import Artifact, Message, Part, Role
from a2a.types import Task as A2ATask
from a2a.types import TaskState as A2ATaskState
from a2a.types import TaskStatus as A2ATaskStatus
from pydantic import ValidationError

from tiny_harness.core.errors import InvalidTaskError
from tiny_harness.core.extensions import TASK_EXT_KEY
from tiny_harness.core.states import TaskState
from tiny_harness.core.status_ext import Metadata, metadata_dict, sub_state_of, with_sub_state
from tiny_harness.core.task import (
    TaskExtension,
    TaskSpec,
    TaskStatus,
    invalid_task_error,
    spec_from_envelope,
)

_EXT_FIELD = f"metadata[{TASK_EXT_KEY!r}]"


def state_to_a2a(state: TaskState) -> A2ATaskState:
    """The protobuf enum value of ``state`` (the names are the same)."""
    value: A2ATaskState = A2ATaskState.Value(state.value)
    return value


def state_from_a2a(value: A2ATaskState) -> TaskState:
    """Our state for a protobuf enum value; ``TASK_STATE_UNSPECIFIED`` is refused."""
    name: str = A2ATaskState.Name(value)
    try:
        return TaskState(name)
    except ValueError:
        raise InvalidTaskError("status.state", f"{name} is not a task state") from None


def extension_metadata(extension: TaskExtension) -> dict[str, Any]:
    """The extension as it sits in ``Task.metadata``: snake_case keys, unset fields left out."""
    return extension.model_dump(mode="json", exclude_none=True)


def status_to_a2a(
    task_id: str, context_id: str, status: TaskStatus, timestamp: datetime | None = None
) -> A2ATaskStatus:
    """A stored status as A2A's ``TaskStatus``: the state, and the status text as an agent
    message with the id the operator wrote beside it (``status.messageId``: the reply's id in
    the history, or an id of the text's own), so a reply has one id wherever it shows. A
    status written before those ids existed gets one derived from the task, state and text."""
    a2a_status = A2ATaskStatus(state=state_to_a2a(status.state))
    if status.message is not None:
        message_id = status.message_id or str(
            uuid.uuid5(uuid.NAMESPACE_URL, f"{task_id}\n{status.state.value}\n{status.message}")
        )
        a2a_status.message.CopyFrom(
            Message(
                message_id=message_id,
                task_id=task_id,
                context_id=context_id,
                role=Role.ROLE_AGENT,
                parts=[Part(text=status.message)],
            )
        )
    if timestamp is not None:
        a2a_status.timestamp.FromDatetime(timestamp)
    return a2a_status


def task_to_a2a(
    task_id: str,
    context_id: str,
    spec: TaskSpec,
    status: TaskStatus,
    *,
    history: Iterable[Message] = (),
    artifacts: Iterable[Artifact] = (),
    timestamp: datetime | None = None,
    version: str | None = None,
) -> A2ATask:
    """Render a stored task as the A2A ``Task`` a client sees.

    The extension (:meth:`TaskExtension.of`) goes under ``metadata[TASK_EXT_KEY]`` and the
    sub-state, when there is one, under ``metadata[STATUS_EXT_KEY]``; the status is
    :func:`status_to_a2a`'s.
    """
    extension = TaskExtension.of(spec, status, version=version)
    metadata = with_sub_state({TASK_EXT_KEY: extension_metadata(extension)}, status.sub_state)
    a2a_status = status_to_a2a(task_id, context_id, status, timestamp)
    return A2ATask(
        id=task_id,
        context_id=context_id,
        status=a2a_status,
        history=list(history),
        artifacts=list(artifacts),
        metadata=metadata,
    )


def extension_from_a2a(task: A2ATask) -> TaskExtension:
    """The task extension an A2A ``Task`` carries.

    A task persisted without a lifecycle keeps ``lifecycle=None``; read
    :attr:`TaskExtension.effective_lifecycle` for the one that applies (delegated with a parent,
    conversation otherwise). Raises :class:`InvalidTaskError` when the extension is missing or
    malformed.
    """
    raw = metadata_dict(task.metadata).get(TASK_EXT_KEY)
    if raw is None:
        raise InvalidTaskError(_EXT_FIELD, "the task carries no tiny-harness task extension")
    if not isinstance(raw, dict):
        raise InvalidTaskError(_EXT_FIELD, "expected an object")
    try:
        return TaskExtension.model_validate(raw)
    except ValidationError as exc:
        raise invalid_task_error(exc, prefix=_EXT_FIELD) from None


def status_from_a2a(task: A2ATask) -> TaskStatus:
    """The status an A2A ``Task`` shows: state, sub-state, status text and the extension's part.

    Conditions and ``observed_generation`` are Kubernetes bookkeeping that A2A does not carry, so
    they come back empty. The plan is the one the task shows (the status plan, else the spec's).
    """
    extension = extension_from_a2a(task)
    message: str | None = None
    message_id: str | None = None
    if task.status.HasField("message"):
        message = "".join(p.text for p in task.status.message.parts if p.HasField("text"))
        message_id = task.status.message.message_id or None
    return TaskStatus(
        state=state_from_a2a(task.status.state),
        sub_state=sub_state_of(task.metadata),
        message=message,
        message_id=message_id,
        lifecycle=extension.lifecycle,
        model=extension.model,
        reasoning_effort=extension.reasoning_effort,
        plan=extension.plan,
        sub_tasks=extension.sub_tasks,
    )


def envelope_from_metadata(metadata: Metadata | None) -> TaskSpec | None:
    """The task envelope an inbound message carries under ``TASK_EXT_KEY``, or None.

    The envelope is a :class:`TaskSpec` and never more: one that sets ``lifecycle``, ``model`` or
    ``reasoning_effort`` (snake_case or camelCase) is refused whole with
    :class:`~tiny_harness.core.errors.ServerControlledFieldError`, whoever sends it, admins
    included. Any other problem is an :class:`InvalidTaskError` naming the field.
    """
    raw = metadata_dict(metadata).get(TASK_EXT_KEY)
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InvalidTaskError(_EXT_FIELD, "the task envelope must be an object")
    return spec_from_envelope(raw)
