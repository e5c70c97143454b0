"""The task model: what a participant may write, what the server keeps, how a task reads back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tiny_harness.core.errors import InvalidTaskError, ServerControlledFieldError
from tiny_harness.core.plan import Plan, PlanStep
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import (
    Lifecycle,
    Participant,
    Role,
    SubTaskRow,
    TaskExtension,
    TaskLink,
    TaskSpec,
    TaskStatus,
    spec_from_envelope,
)

ALICE = {"id": "alice", "role": "assignee"}
BOB = {"id": "bob", "role": "watcher"}
PLAN = Plan.create([PlanStep(name="reproduce"), PlanStep(name="fix", dependencies=("reproduce",))])


def full_spec() -> TaskSpec:
    return TaskSpec(
        name="fix-login",
        type="bug",
        goal="Users can log in again",
        description="Since Tuesday the login page returns 500.",
        acceptance_criteria=("login succeeds", "a test covers it"),
        participants=(
            Participant(id="agent", role=Role.ASSIGNEE),
            Participant(id="alice", role=Role.REPORTER),
        ),
        parent=TaskLink(task_id="triage-7", agent="https://agents.example/a2a"),
        plan=PLAN,
    )


def full_status() -> TaskStatus:
    return TaskStatus(
        state=TaskState.INPUT_REQUIRED,
        sub_state="awaiting-answer",
        message="Which browser?",
        lifecycle=Lifecycle.DELEGATED,
        model="gpt-5",
        reasoning_effort="high",
        plan=PLAN.complete_step("reproduce", output="500 on POST /login"),
        sub_tasks=(SubTaskRow(task_id="fix-login.1", goal="bisect", state=TaskState.WORKING),),
    )


# --- round trips -----------------------------------------------------------------------------


def test_spec_round_trips_through_its_camel_case_resource_form() -> None:
    spec = full_spec()
    as_resource = spec.model_dump(mode="json", by_alias=True, exclude_none=True)

    assert "acceptanceCriteria" in as_resource
    assert as_resource["parent"] == {"taskId": "triage-7", "agent": "https://agents.example/a2a"}
    assert TaskSpec.model_validate(as_resource) == spec


def test_status_round_trips_through_its_camel_case_resource_form() -> None:
    status = full_status()
    as_resource = status.model_dump(mode="json", by_alias=True, exclude_none=True)

    assert as_resource["subState"] == "awaiting-answer"
    assert as_resource["reasoningEffort"] == "high"
    assert TaskStatus.model_validate(as_resource) == status


def test_extension_round_trips_through_its_snake_case_wire_form() -> None:
    extension = TaskExtension.of(full_spec(), full_status())
    wire = extension.model_dump(mode="json", exclude_none=True)

    assert "acceptance_criteria" in wire
    assert wire["sub_tasks"][0]["task_id"] == "fix-login.1"
    assert TaskExtension.model_validate(wire) == extension


def test_extension_of_a_stored_task_shows_the_status_plan_over_the_authors_plan() -> None:
    extension = TaskExtension.of(full_spec(), full_status())

    assert extension.plan is not None
    assert extension.plan.step("reproduce").done
    assert extension.model == "gpt-5"
    assert extension.reasoning_effort == "high"


def test_extension_of_a_task_without_a_status_plan_shows_the_authors_plan() -> None:
    extension = TaskExtension.of(full_spec(), TaskStatus())

    assert extension.plan == PLAN


text = st.text(max_size=40)


@given(
    goal=st.text(min_size=1, max_size=40),
    name=text,
    description=text,
    criteria=st.lists(text, max_size=4),
    model=st.none() | st.text(min_size=1, max_size=20),
)
def test_any_extension_round_trips_through_its_wire_form(
    goal: str, name: str, description: str, criteria: list[str], model: str | None
) -> None:
    extension = TaskExtension(
        goal=goal,
        name=name,
        description=description,
        acceptance_criteria=tuple(criteria),
        model=model,
    )

    wire = extension.model_dump(mode="json", exclude_none=True)

    assert TaskExtension.model_validate(wire) == extension


# --- the lifecycle a task reads as -----------------------------------------------------------


def test_a_task_without_a_parent_reads_as_a_conversation() -> None:
    assert TaskExtension(goal="chat").effective_lifecycle is Lifecycle.CONVERSATION


def test_a_task_with_a_parent_reads_as_delegated() -> None:
    extension = TaskExtension(goal="sub-job", parent=TaskLink(task_id="parent-1"))

    assert extension.effective_lifecycle is Lifecycle.DELEGATED


def test_a_stored_lifecycle_wins_over_the_default() -> None:
    extension = TaskExtension(
        goal="child chat", parent=TaskLink(task_id="p"), lifecycle=Lifecycle.CONVERSATION
    )

    assert extension.effective_lifecycle is Lifecycle.CONVERSATION


# --- envelopes: what a participant may send --------------------------------------------------


def test_an_envelope_with_snake_or_camel_case_keys_is_accepted() -> None:
    snake = spec_from_envelope(
        {"goal": "g", "acceptance_criteria": ["done"], "participants": [ALICE]}
    )
    camel = spec_from_envelope(
        {"goal": "g", "acceptanceCriteria": ["done"], "participants": [ALICE]}
    )

    assert snake == camel
    assert snake.acceptance_criteria == ("done",)


@pytest.mark.parametrize(
    "key",
    ["lifecycle", "model", "reasoning_effort", "reasoningEffort"],
)
def test_an_envelope_setting_a_server_controlled_field_is_refused_whole(key: str) -> None:
    value = {"lifecycle": "delegated", "model": "x", "reasoning_effort": "high"}.get(key, "high")

    with pytest.raises(ServerControlledFieldError) as refused:
        spec_from_envelope({"goal": "g", "participants": [ALICE], key: value})

    assert "server-controlled" in str(refused.value)
    assert refused.value.fields == ({"reasoningEffort": "reasoning_effort"}.get(key, key),)


def test_an_envelope_setting_several_server_controlled_fields_names_them_all() -> None:
    with pytest.raises(ServerControlledFieldError) as refused:
        spec_from_envelope({"goal": "g", "model": "m", "lifecycle": "delegated"})

    assert refused.value.fields == ("lifecycle", "model")
    assert "/model" in str(refused.value)


def test_an_envelope_from_an_admin_is_refused_the_same_way() -> None:
    envelope = {"goal": "g", "participants": [{"id": "root", "role": "admin"}, ALICE], "model": "m"}

    with pytest.raises(ServerControlledFieldError):
        spec_from_envelope(envelope)


def test_an_envelope_cannot_set_sub_tasks() -> None:
    with pytest.raises(InvalidTaskError) as refused:
        spec_from_envelope({"goal": "g", "sub_tasks": [{"task_id": "x"}]})

    assert refused.value.field == "spec.sub_tasks"


def test_an_envelope_with_a_participant_twice_is_refused() -> None:
    with pytest.raises(InvalidTaskError) as refused:
        spec_from_envelope({"goal": "g", "participants": [ALICE, {"id": "alice", "role": "admin"}]})

    assert refused.value.field == "spec.participants"
    assert "'alice' appears twice" in str(refused.value)


def test_an_envelope_with_participants_but_no_assignee_is_refused() -> None:
    with pytest.raises(InvalidTaskError) as refused:
        spec_from_envelope({"goal": "g", "participants": [BOB]})

    assert refused.value.field == "spec.participants"
    assert "needs an assignee" in str(refused.value)


def test_an_envelope_without_participants_is_accepted() -> None:
    assert spec_from_envelope({"goal": "g"}).participants == ()


@pytest.mark.parametrize("envelope", [{"goal": ""}, {}], ids=["empty goal", "no goal"])
def test_an_envelope_without_a_goal_is_refused_naming_the_goal(envelope: dict[str, Any]) -> None:
    with pytest.raises(InvalidTaskError) as refused:
        spec_from_envelope(envelope)

    assert refused.value.field == "spec.goal"


def test_an_envelope_with_an_unknown_role_is_refused_naming_the_participant() -> None:
    with pytest.raises(InvalidTaskError) as refused:
        spec_from_envelope({"goal": "g", "participants": [{"id": "x", "role": "owner"}]})

    assert refused.value.field == "spec.participants.0.role"


def test_an_envelope_with_a_cyclic_plan_is_refused_naming_the_cycle() -> None:
    plan = {
        "steps": [
            {"name": "a", "dependencies": ["b"]},
            {"name": "b", "dependencies": ["a"]},
        ]
    }

    with pytest.raises(InvalidTaskError) as refused:
        spec_from_envelope({"goal": "g", "plan": plan})

    assert refused.value.field == "spec.plan"
    assert "cycle" in str(refused.value)


def test_the_spec_model_refuses_a_duplicate_participant_directly() -> None:
    with pytest.raises(ValidationError):
        TaskSpec(goal="g", participants=(Participant(id="a", role=Role.ASSIGNEE),) * 2)


def test_role_of_names_a_participants_role_and_none_for_a_stranger() -> None:
    spec = full_spec()

    assert spec.role_of("alice") is Role.REPORTER
    assert spec.role_of("mallory") is None


def test_a_sub_task_row_is_resolved_only_once_the_child_ended() -> None:
    assert not SubTaskRow(task_id="c", state=TaskState.INPUT_REQUIRED).is_resolved
    assert SubTaskRow(task_id="c", state=TaskState.FAILED).is_resolved
