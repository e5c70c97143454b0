"""Tasks awaiting approval, as the gateway renders them, for the TUI's unit tests: alice
(assignee) and bob (watcher) on ``trip``, two weather calls waiting."""

from __future__ import annotations

from typing import Any

from a2a.types import Message, Part, Role, StreamResponse, Task, TaskStatus, TaskStatusUpdateEvent
from a2a.types import TaskState as A2AState

from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.approval import Deciders, Decision, PendingApproval, Requirement
from tiny_harness.core.extensions import STATUS_EXT_KEY, TASK_EXT_KEY
from tiny_harness.core.task import Role as TaskRole
from tiny_harness.core.task import TaskSpec
from tiny_harness.core.task import TaskStatus as Status

SPEC = TaskSpec.model_validate(
    {
        "goal": "Plan the trip",
        "toolServers": ["weather"],
        "participants": [{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "watcher"}],
    }
)
EXPIRES = "2026-12-02T06:26:30.278Z"
#: The park the calls wait in: a decision names it.
PARK = "1-0a1b2c3d4e5f6a7b"


def call(
    call_id: str,
    city: str,
    *,
    decision: Decision | None = None,
    deciders: Deciders | None = None,
    allow_edit: bool = False,
    **more: Any,
) -> PendingApproval:
    requirement = Requirement(
        deciders=(deciders or Deciders(roles=(TaskRole.ASSIGNEE, TaskRole.ADMIN)),),
        timeout_seconds=3600,
        allow_edit=allow_edit,
        sources=("HarnessToolServer weather",),
    )
    return PendingApproval(
        call_id=call_id,
        park=more.pop("park", PARK),
        tool="weather__weather",
        arguments=more.pop("arguments", {"city": city}),
        turn=1,
        requirement=requirement,
        expires_at=EXPIRES,
        decision=decision,
        **more,
    )


def approved(by: str = "alice", reason: str = "") -> Decision:
    return Decision(verdict="approve", by=by, at="2026-12-02T05:30:00Z", reason=reason)


def waiting(
    *calls: PendingApproval,
    version: int = 10,
    history: list[Message] | None = None,
    state: str = "TASK_STATE_INPUT_REQUIRED",
    sub_state: str | None = "awaiting-approval",
) -> Task:
    status = Status.model_validate(
        {
            "state": state,
            "subState": sub_state,
            "message": "Waiting for approval before running: ...",
        }
    ).model_copy(update={"approvals": calls})
    said = history if history is not None else [user("m1", "Weather in Oslo and Rome?")]
    return task_to_a2a("trip", "trip", SPEC, status, history=said, version=str(version))


def user(message_id: str, text: str, sender: str = "alice") -> Message:
    return Message(
        message_id=message_id,
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        metadata={"sender": sender},
    )


def agent(message_id: str, text: str, **metadata: Any) -> Message:
    message = Message(message_id=message_id, role=Role.ROLE_AGENT, parts=[Part(text=text)])
    if metadata:
        message.metadata.update(metadata)
    return message


def status_update(
    version: int,
    message: Message | None = None,
    *,
    sub_state: str | None = "awaiting-approval",
    state: A2AState = A2AState.TASK_STATE_INPUT_REQUIRED,
) -> StreamResponse:
    event = TaskStatusUpdateEvent(task_id="trip", status=TaskStatus(state=state))
    if message is not None:
        event.status.message.CopyFrom(message)
    event.metadata.update({TASK_EXT_KEY: {"version": str(version)}})
    if sub_state:
        event.metadata.update({STATUS_EXT_KEY: {"sub_state": sub_state}})
    return StreamResponse(status_update=event)
