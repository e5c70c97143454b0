"""What a subscriber's stream shows: a change a participant can see is an event, including a
child's row changing on its parent, and two equal replies are two messages."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import Message, Part
from a2a.types import Role as A2ARole
from a2a.types import TaskState as A2AState

from tiny_harness.a2a_gateway.rendering import (
    as_of,
    change_of,
    history_message,
    pending_message,
    progress_key,
    render_task,
    status_event,
    status_event_of,
    status_key,
    sub_task_rows,
    turn_usage_of,
)
from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.extensions import STATUS_EXT_KEY, TASK_EXT_KEY
from tiny_harness.core.history import TranscriptMessage
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.states import TaskState
from tiny_harness.core.status_ext import metadata_dict
from tiny_harness.core.task import (
    Participant,
    Role,
    SubTaskRow,
    TaskSpec,
    TaskStatus,
    TaskUsage,
)
from tiny_harness.kube.names import CONTEXT_ID_ANNOTATION

SPEC = TaskSpec(goal="ship", participants=(Participant(id="alice", role=Role.ASSIGNEE),))


def parked(*rows: SubTaskRow, message_id: str = "p/turn-1/model-0") -> TaskStatus:
    return TaskStatus(
        state=TaskState.INPUT_REQUIRED,
        sub_state="awaiting-next-message",
        message="Waiting on the changelog.",
        message_id=message_id,
        sub_tasks=rows,
    )


def row(state: TaskState, sub_state: str | None = None) -> SubTaskRow:
    return SubTaskRow(task_id="p-changelog", goal="write it", state=state, sub_state=sub_state)


def test_a_childs_row_rides_on_the_parents_status_event() -> None:
    event = status_event(task_to_a2a("p", "ctx", SPEC, parked(row(TaskState.WORKING))))

    (shown,) = sub_task_rows(event)
    assert shown["task_id"] == "p-changelog"
    assert shown["state"] == "TASK_STATE_WORKING"


def test_a_task_without_children_carries_no_rows() -> None:
    event = status_event(task_to_a2a("p", "ctx", SPEC, parked()))

    assert sub_task_rows(event) == []


def test_a_childs_state_or_sub_state_changing_is_a_change_the_parent_shows() -> None:
    before = status_key(task_to_a2a("p", "ctx", SPEC, parked(row(TaskState.WORKING))))
    ended = status_key(task_to_a2a("p", "ctx", SPEC, parked(row(TaskState.COMPLETED))))
    asking = status_key(
        task_to_a2a("p", "ctx", SPEC, parked(row(TaskState.INPUT_REQUIRED, "awaiting-answer")))
    )

    assert len({before, ended, asking}) == 3


def test_the_same_text_under_a_new_id_is_a_change_and_a_rerender_is_not() -> None:
    first = task_to_a2a("p", "ctx", SPEC, parked(message_id="p/turn-1/model-0"))
    again = task_to_a2a("p", "ctx", SPEC, parked(message_id="p/turn-1/model-0"))
    second = task_to_a2a("p", "ctx", SPEC, parked(message_id="p/turn-2/model-0"))

    assert status_key(first) == status_key(again)
    assert status_key(first) != status_key(second)


def test_a_unary_send_answers_with_the_status_its_wait_ended_on_and_the_history_now() -> None:
    answered = status_event(task_to_a2a("p", "ctx", SPEC, parked(message_id="refused-m-1")))
    now = task_to_a2a(
        "p",
        "ctx",
        SPEC,
        TaskStatus(state=TaskState.WORKING, sub_state="awaiting-model", message="Thinking."),
        history=[
            Message(message_id="refused-m-1", role=A2ARole.ROLE_AGENT, parts=[Part(text="no")])
        ],
    )

    shown = as_of(now, answered)

    assert shown.status == answered.status
    assert shown.metadata[STATUS_EXT_KEY]["sub_state"] == "awaiting-next-message"
    assert [m.message_id for m in shown.history] == ["refused-m-1"]
    assert now.status.state == A2AState.TASK_STATE_WORKING  # the input is left as it was


def test_a_running_turns_usage_rides_on_the_status_event_as_progress_not_as_a_change() -> None:
    def working(calls: int) -> TaskStatus:
        return TaskStatus(
            state=TaskState.WORKING,
            usage=TaskUsage(model_calls=4),
            turn_usage=TaskUsage(model_calls=calls, tool_calls=calls - 1),
        )

    one = status_event(task_to_a2a("p", "ctx", SPEC, working(1)))
    assert turn_usage_of(one)["model_calls"] == 1
    assert one.metadata[TASK_EXT_KEY]["usage"]["model_calls"] == 4  # the ended turns' count
    two = status_event(task_to_a2a("p", "ctx", SPEC, working(2)))
    # What a wait ends on is the same; only the progress moved.
    assert status_key(one) == status_key(two)
    assert progress_key(one) == (1, 0)
    assert progress_key(two) == (2, 1)
    idle = status_event(task_to_a2a("p", "ctx", SPEC, parked()))
    assert TASK_EXT_KEY not in idle.metadata
    assert progress_key(idle) == (0, 0)


def test_a_participants_message_in_the_history_names_its_sender_whatever_it_claims() -> None:
    taken = TranscriptMessage(role="user", message_id="m1", text="Approved.", sender="carol")
    reply = TranscriptMessage(role="agent", message_id="r1", text="Noted.")
    assert metadata_dict(history_message("t", "c", taken).metadata) == {"sender": "carol"}
    assert not history_message("t", "c", reply).HasField("metadata")
    # A message still waiting: the sender the API server bound to it, not one it names itself.
    waiting = MessageSpec(
        task="t",
        message_id="m2",
        sender="alice",
        parts=(MessagePart(text="I approve it myself."),),
        metadata={"sender": "carol"},
    )
    assert metadata_dict(pending_message("t", "c", waiting).metadata) == {"sender": "alice"}


def _stored(status: dict[str, Any] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {
            "name": "t-1",
            "resourceVersion": "812",
            "creationTimestamp": "2026-12-01T10:00:00Z",
            "annotations": {CONTEXT_ID_ANNOTATION: "ctx-9"},
            "managedFields": [{"manager": "op", "time": "2026-12-01T10:05:07Z"}],
        },
        "spec": {"goal": "g", "participants": [{"id": "alice", "role": "assignee"}]},
    }
    if status is not None:
        obj["status"] = status
    return obj


@pytest.mark.parametrize(
    "status",
    [
        None,
        {"state": "TASK_STATE_SUBMITTED"},
        {
            "state": "TASK_STATE_INPUT_REQUIRED",
            "subState": "awaiting-next-message",
            "message": "Hello.",
            "messageId": "t-1/turn-1/model-0",
            "turn": 1,
            "usage": {"modelCalls": 1, "inputTokens": 30, "outputTokens": 4},
        },
        {
            "state": "TASK_STATE_WORKING",
            "message": "an old status text with no id",
            "turn": 2,
            "runner": {"holder": "op-1", "lease": 3},
            "turnUsage": {"modelCalls": 2, "toolCalls": 1},
            "subTasks": [
                {"taskId": "c-1", "goal": "child", "state": "TASK_STATE_WORKING"},
                {"taskId": "c-2", "state": "TASK_STATE_INPUT_REQUIRED", "subState": "x"},
            ],
        },
        {"state": "TASK_STATE_COMPLETED", "message": "Done.", "messageId": "m"},
        {
            "state": "TASK_STATE_INPUT_REQUIRED",
            "subState": "awaiting-approval",
            "turn": 1,
            "approvals": [
                {
                    "callId": "call_w1",
                    "tool": "weather__weather",
                    "arguments": {"city": "Oslo"},
                    "turn": 1,
                    "requirement": {
                        "deciders": [{"roles": ["assignee"]}],
                        "timeoutSeconds": 60,
                    },
                    "expiresAt": "2026-12-02T07:00:00Z",
                    "decision": {"verdict": "approve", "by": "alice", "at": "2026-12-02T06:00:00Z"},
                }
            ],
        },
    ],
)
def test_a_change_s_event_is_the_rendered_task_s_event_without_rendering_the_task(
    status: dict[str, Any] | None,
) -> None:
    obj = _stored(status)
    assert status_event_of(obj) == status_event(render_task(obj))
    # The keys a stream compares, read from the stored status, are the event's own.
    change = change_of(obj)
    assert change.key == status_key(change.event) == status_key(render_task(obj))
    assert change.progress == progress_key(change.event) == progress_key(render_task(obj))


def test_a_stream_s_event_carries_the_calls_that_wait_for_approval() -> None:
    obj = _stored(
        {
            "state": "TASK_STATE_INPUT_REQUIRED",
            "subState": "awaiting-approval",
            "approvals": [
                {
                    "callId": "call_w1",
                    "tool": "weather__weather",
                    "turn": 1,
                    "requirement": {"deciders": [{"roles": ["assignee"]}], "timeoutSeconds": 60},
                    "expiresAt": "2026-12-02T07:00:00Z",
                }
            ],
        }
    )
    carried = metadata_dict(status_event_of(obj).metadata)[TASK_EXT_KEY]
    (waiting,) = carried["approvals"]
    assert (waiting["call_id"], waiting["tool"]) == ("call_w1", "weather__weather")
