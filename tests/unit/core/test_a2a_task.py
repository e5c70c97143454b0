"""Rendering a stored task as an A2A Task and reading it back, and reading inbound envelopes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from a2a.types import Message, Part, Role, TaskStatusUpdateEvent
from a2a.types import Task as A2ATask
from a2a.types import TaskState as A2ATaskState
from a2a.types import TaskStatus as A2ATaskStatus
from google.protobuf.json_format import MessageToDict
from hypothesis import given
from hypothesis import strategies as st

from tiny_harness.core.a2a_task import (
    envelope_from_metadata,
    extension_from_a2a,
    extension_metadata,
    state_from_a2a,
    state_to_a2a,
    status_from_a2a,
    task_to_a2a,
)
from tiny_harness.core.errors import (
    InvalidExtensionError,
    InvalidTaskError,
    ServerControlledFieldError,
)
from tiny_harness.core.extensions import STATUS_EXT_KEY, TASK_EXT_KEY
from tiny_harness.core.plan import Plan, PlanStep
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.status_ext import (
    known_sub_state,
    status_metadata,
    sub_state_of,
    with_sub_state,
)
from tiny_harness.core.task import (
    Lifecycle,
    Participant,
    SubTaskRow,
    TaskExtension,
    TaskLink,
    TaskSpec,
    TaskStatus,
    spec_from_envelope,
)
from tiny_harness.core.task import (
    Role as ParticipantRole,
)

PLAN = Plan.create([PlanStep(name="look"), PlanStep(name="fix", dependencies=("look",))])
SPEC = TaskSpec(
    name="fix-login",
    goal="Users can log in again",
    acceptance_criteria=("login succeeds",),
    participants=(
        Participant(id="agent", role=ParticipantRole.ASSIGNEE),
        Participant(id="alice", role=ParticipantRole.REPORTER),
        Participant(id="bob", role=ParticipantRole.WATCHER),
    ),
    plan=PLAN,
)
PARKED = TaskStatus(
    state=TaskState.INPUT_REQUIRED,
    sub_state=SubState.AWAITING_NEXT_MESSAGE,
    message="Done looking; what next?",
    message_id="t1/turn-1/model-0",
    lifecycle=Lifecycle.CONVERSATION,
    model="gpt-5",
    reasoning_effort="low",
    plan=PLAN.complete_step("look", output="found it").link_task("fix", "fix-login.1"),
    sub_tasks=(
        SubTaskRow(
            task_id="fix-login.1",
            goal="patch",
            state=TaskState.INPUT_REQUIRED,
            sub_state="awaiting-answer",
        ),
        SubTaskRow(task_id="remote-9", agent="https://x.example", state=TaskState.COMPLETED),
    ),
)


def metadata_of(task: A2ATask) -> dict[str, Any]:
    """The task's metadata decoded by protobuf itself, independently of the code under test."""
    return dict(MessageToDict(task.metadata))


# --- to A2A ----------------------------------------------------------------------------------


def test_a_task_renders_with_its_ids_and_state() -> None:
    task = task_to_a2a("fix-login", "ctx-1", SPEC, PARKED)

    assert task.id == "fix-login"
    assert task.context_id == "ctx-1"
    assert task.status.state == A2ATaskState.TASK_STATE_INPUT_REQUIRED


def test_the_extension_sits_under_the_task_key_in_snake_case_without_unset_fields() -> None:
    task = task_to_a2a("fix-login", "ctx-1", SPEC, PARKED)

    extension = metadata_of(task)[TASK_EXT_KEY]
    assert extension["goal"] == "Users can log in again"
    assert extension["acceptance_criteria"] == ["login succeeds"]
    assert extension["model"] == "gpt-5"
    assert extension["sub_tasks"][0]["task_id"] == "fix-login.1"
    assert "acceptanceCriteria" not in extension
    assert "type" not in extension, "unset fields are left out, not sent as null"
    assert "parent" not in extension


def test_the_sub_state_sits_under_the_status_key() -> None:
    task = task_to_a2a("fix-login", "ctx-1", SPEC, PARKED)

    assert metadata_of(task)[STATUS_EXT_KEY] == {"sub_state": "awaiting-next-message"}
    assert sub_state_of(task.metadata) == "awaiting-next-message"


def test_a_working_task_carries_no_status_key() -> None:
    working = PARKED.model_copy(update={"state": TaskState.WORKING, "sub_state": None})

    task = task_to_a2a("fix-login", "ctx-1", SPEC, working)

    assert STATUS_EXT_KEY not in metadata_of(task)
    assert sub_state_of(task.metadata) is None


def test_the_status_text_becomes_an_agent_message_on_the_task() -> None:
    task = task_to_a2a("fix-login", "ctx-1", SPEC, PARKED)

    message = task.status.message
    assert message.role == Role.ROLE_AGENT
    assert [p.text for p in message.parts] == ["Done looking; what next?"]
    assert (message.task_id, message.context_id) == ("fix-login", "ctx-1")


def test_rendering_the_same_status_twice_gives_the_same_message_id() -> None:
    first = task_to_a2a("fix-login", "ctx-1", SPEC, PARKED)
    second = task_to_a2a("fix-login", "ctx-1", SPEC, PARKED)
    other = task_to_a2a(
        "fix-login",
        "ctx-1",
        SPEC,
        PARKED.model_copy(update={"message": "hm", "message_id": "fix-login/turn-2/model-0"}),
    )

    assert first.status.message.message_id == second.status.message.message_id
    assert first.status.message.message_id != other.status.message.message_id


def test_a_status_without_text_has_no_status_message() -> None:
    task = task_to_a2a("t", "c", SPEC, TaskStatus())

    assert not task.status.HasField("message")


def test_history_artifacts_and_timestamp_are_carried() -> None:
    said = Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="hello")])
    at = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)

    task = task_to_a2a("t", "c", SPEC, PARKED, history=[said], timestamp=at)

    assert [m.message_id for m in task.history] == ["m1"]
    assert task.status.timestamp.ToDatetime(tzinfo=UTC) == at


@pytest.mark.parametrize("state", list(TaskState))
def test_every_state_maps_to_the_protobuf_enum_of_the_same_name(state: TaskState) -> None:
    assert A2ATaskState.Name(state_to_a2a(state)) == state.value
    assert state_from_a2a(state_to_a2a(state)) is state


def test_an_unspecified_protobuf_state_is_refused() -> None:
    with pytest.raises(InvalidTaskError, match="TASK_STATE_UNSPECIFIED is not a task state"):
        state_from_a2a(A2ATaskState.TASK_STATE_UNSPECIFIED)


# --- back from A2A ---------------------------------------------------------------------------


def test_the_extension_reads_back_exactly() -> None:
    task = task_to_a2a("fix-login", "ctx-1", SPEC, PARKED)

    assert extension_from_a2a(task) == TaskExtension.of(SPEC, PARKED)


def test_the_status_reads_back_exactly() -> None:
    task = task_to_a2a("fix-login", "ctx-1", SPEC, PARKED)

    assert status_from_a2a(task) == PARKED


def test_the_round_trip_survives_the_wire_encoding() -> None:
    task = task_to_a2a("fix-login", "ctx-1", SPEC, PARKED)

    decoded = A2ATask.FromString(task.SerializeToString())

    assert decoded == task
    assert extension_from_a2a(decoded) == TaskExtension.of(SPEC, PARKED)
    assert status_from_a2a(decoded) == PARKED


def test_a_task_persisted_without_lifecycle_reads_as_conversation_without_a_parent() -> None:
    task = task_to_a2a("t", "c", SPEC, TaskStatus())

    extension = extension_from_a2a(task)

    assert extension.lifecycle is None
    assert extension.effective_lifecycle is Lifecycle.CONVERSATION


def test_a_task_persisted_without_lifecycle_reads_as_delegated_with_a_parent() -> None:
    child = SPEC.model_copy(update={"parent": TaskLink(task_id="fix-login")})

    extension = extension_from_a2a(task_to_a2a("fix-login.1", "c", child, TaskStatus()))

    assert extension.effective_lifecycle is Lifecycle.DELEGATED


def test_a_task_without_the_extension_is_refused_naming_the_key() -> None:
    bare = A2ATask(id="t", status=A2ATaskStatus(state=A2ATaskState.TASK_STATE_WORKING))

    with pytest.raises(InvalidTaskError) as refused:
        extension_from_a2a(bare)

    assert TASK_EXT_KEY in refused.value.field


def test_a_task_with_a_malformed_extension_is_refused_naming_the_field() -> None:
    task = A2ATask(id="t", metadata={TASK_EXT_KEY: {"goal": "g", "lifecycle": "forever"}})

    with pytest.raises(InvalidTaskError) as refused:
        extension_from_a2a(task)

    assert refused.value.field.endswith(".lifecycle")


names = st.text(min_size=1, max_size=20)


@given(
    goal=st.text(min_size=1, max_size=60),
    description=st.text(max_size=60),
    criteria=st.lists(st.text(max_size=30), max_size=3),
    message=st.none() | st.text(max_size=60),
    message_id=st.text(min_size=1, max_size=40),
    sub_state=st.none() | names,
    model=st.none() | names,
    state=st.sampled_from(list(TaskState)),
    outputs=st.lists(st.none() | st.text(max_size=30), min_size=2, max_size=2),
)
def test_any_task_round_trips_losslessly(
    goal: str,
    description: str,
    criteria: list[str],
    message: str | None,
    message_id: str,
    sub_state: str | None,
    model: str | None,
    state: TaskState,
    outputs: list[str | None],
) -> None:
    spec = SPEC.model_copy(
        update={"goal": goal, "description": description, "acceptance_criteria": tuple(criteria)}
    )
    plan = PLAN.complete_step("look", output=outputs[0]).complete_step("fix", output=outputs[1])
    status = TaskStatus(
        state=state,
        sub_state=sub_state,
        message=message,
        message_id=message_id if message is not None else None,
        model=model,
        plan=plan,
    )

    task = A2ATask.FromString(task_to_a2a("t", "c", spec, status).SerializeToString())

    assert extension_from_a2a(task) == TaskExtension.of(spec, status)
    assert status_from_a2a(task) == status


def test_extension_metadata_is_plain_json() -> None:
    wire = extension_metadata(TaskExtension.of(SPEC, PARKED))

    assert wire["participants"][0] == {"id": "agent", "role": "assignee"}
    assert wire["lifecycle"] == "conversation"


# --- inbound envelopes -----------------------------------------------------------------------


def test_a_message_without_an_envelope_has_none() -> None:
    assert envelope_from_metadata({"other": 1}) is None
    assert envelope_from_metadata(None) is None
    assert envelope_from_metadata(Message().metadata) is None


def test_an_envelope_in_message_metadata_is_read_as_a_spec() -> None:
    message = Message(
        message_id="m",
        metadata={TASK_EXT_KEY: {"goal": "g", "participants": [{"id": "a", "role": "assignee"}]}},
    )

    spec = envelope_from_metadata(message.metadata)

    assert spec == TaskSpec(goal="g", participants=(Participant(id="a", role="assignee"),))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("lifecycle", "delegated"),
        ("model", "gpt-5"),
        ("reasoning_effort", "high"),
        ("reasoningEffort", "high"),
    ],
)
def test_an_envelope_carrying_a_server_controlled_field_is_refused_whole(
    key: str, value: str
) -> None:
    metadata = {
        TASK_EXT_KEY: {
            "goal": "g",
            "participants": [{"id": "root", "role": "admin"}, {"id": "a", "role": "assignee"}],
            key: value,
        }
    }

    with pytest.raises(ServerControlledFieldError):
        envelope_from_metadata(Message(message_id="m", metadata=metadata).metadata)


def test_an_envelope_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(InvalidTaskError, match="must be an object"):
        envelope_from_metadata({TASK_EXT_KEY: "make me a sandwich"})


def test_an_invalid_envelope_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidTaskError) as refused:
        envelope_from_metadata({TASK_EXT_KEY: {"goal": ""}})

    assert refused.value.field == "spec.goal"


# --- the sub-state in metadata ---------------------------------------------------------------


def test_writing_a_sub_state_keeps_the_other_metadata_and_leaves_the_input_alone() -> None:
    before = {TASK_EXT_KEY: {"goal": "g"}}

    after = with_sub_state(before, SubState.AWAITING_ANSWER)

    assert after == {TASK_EXT_KEY: {"goal": "g"}, STATUS_EXT_KEY: {"sub_state": "awaiting-answer"}}
    assert before == {TASK_EXT_KEY: {"goal": "g"}}


def test_clearing_the_sub_state_deletes_the_status_key() -> None:
    parked = with_sub_state({"x": 1}, "awaiting-next-message")

    assert with_sub_state(parked, None) == {"x": 1}
    assert with_sub_state({}, None) == {}


def test_a_status_update_event_carries_the_sub_state_only_when_there_is_one() -> None:
    assert status_metadata("awaiting-answer") == {STATUS_EXT_KEY: {"sub_state": "awaiting-answer"}}
    assert status_metadata(None) == {}


def test_the_sub_state_reads_back_from_a_protobuf_struct() -> None:
    event = TaskStatusUpdateEvent(task_id="t", metadata=status_metadata("awaiting-answer"))

    assert sub_state_of(event.metadata) == "awaiting-answer"
    assert sub_state_of(TaskStatusUpdateEvent().metadata) is None


def test_a_later_sub_state_is_read_as_plain_input_required() -> None:
    metadata = with_sub_state({}, "awaiting-review")

    assert sub_state_of(metadata) == "awaiting-review"
    assert known_sub_state(sub_state_of(metadata)) is None
    assert known_sub_state("awaiting-answer") is SubState.AWAITING_ANSWER


def test_later_keys_in_the_status_value_are_ignored() -> None:
    metadata = {STATUS_EXT_KEY: {"sub_state": "awaiting-answer", "since": "2025-01-01"}}

    assert sub_state_of(metadata) == "awaiting-answer"


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("awaiting-answer", f"metadata[{STATUS_EXT_KEY!r}]"),
        ({"sub_state": ""}, f"metadata[{STATUS_EXT_KEY!r}].sub_state"),
        ({}, f"metadata[{STATUS_EXT_KEY!r}].sub_state"),
    ],
)
def test_a_malformed_status_value_is_refused_naming_the_key(value: Any, field: str) -> None:
    with pytest.raises(InvalidExtensionError) as refused:
        sub_state_of({STATUS_EXT_KEY: value})

    assert refused.value.field == field


def test_an_empty_sub_state_cannot_be_written() -> None:
    with pytest.raises(ValueError, match="sub_state"):
        with_sub_state({}, "")


def test_the_status_message_carries_the_id_the_operator_wrote_beside_it() -> None:
    status = PARKED.model_copy(update={"message": "Done.", "message_id": "t/turn-2/model-0"})

    assert task_to_a2a("t", "c", SPEC, status).status.message.message_id == "t/turn-2/model-0"


def test_the_same_text_in_two_turns_has_two_ids() -> None:
    first = PARKED.model_copy(update={"message": "Done.", "message_id": "t/turn-1/model-0"})
    second = first.model_copy(update={"message_id": "t/turn-2/model-0"})

    ids = {task_to_a2a("t", "c", SPEC, s).status.message.message_id for s in (first, second)}

    assert len(ids) == 2


def test_a_status_written_before_message_ids_still_gets_a_stable_one() -> None:
    old = PARKED.model_copy(update={"message": "Done.", "message_id": None})

    once = task_to_a2a("t", "c", SPEC, old).status.message.message_id
    assert once
    assert task_to_a2a("t", "c", SPEC, old).status.message.message_id == once


def test_the_deadlines_and_the_time_spent_and_waited_are_in_the_task_metadata() -> None:
    spec = SPEC.model_copy(
        update={
            "active_deadline_seconds": 600,
            "input_timeout_seconds": 3600,
            "on_timeout": "complete",
        }
    )
    status = TaskStatus(
        state=TaskState.INPUT_REQUIRED,
        active_seconds=12.5,
        waiting_since="2026-11-30T12:00:00.000Z",
    )

    extension = task_to_a2a("t", "ctx", spec, status).metadata[TASK_EXT_KEY]

    assert extension["active_deadline_seconds"] == 600
    assert extension["input_timeout_seconds"] == 3600
    assert extension["on_timeout"] == "complete"
    assert extension["active_seconds"] == 12.5
    assert extension["waiting_since"] == "2026-11-30T12:00:00.000Z"


def test_an_envelope_cannot_set_the_time_spent_or_waited() -> None:
    with pytest.raises(ServerControlledFieldError, match="active_seconds"):
        spec_from_envelope({"goal": "x", "active_seconds": 0})
