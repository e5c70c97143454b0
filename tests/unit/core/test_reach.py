"""What a task's model may do to other people (core/reach.py): it puts a task before the
task's own participants, the ids of its spec.reach and the namespace's list, and nobody else;
a tree of sub-tasks grows to its depth bound and no further. Each refusal is the tool's error
the model reads, and nothing is asked of the host."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tiny_harness.core.errors import ConfigError
from tiny_harness.core.intrinsics import (
    CREATE_TASK_FOR_PARTICIPANT,
    SPAWN_SUBTASK,
    IntrinsicResult,
    apply_intrinsic,
)
from tiny_harness.core.reach import Reach, reachable, refuse_depth, refuse_person
from tiny_harness.core.settings import Settings
from tiny_harness.core.sizes import MAX_TREE_DEPTH
from tiny_harness.core.task import Participant, Role, TaskExtension, TaskSpec

from .conftest import MemoryHost, ScriptedModel, calls, delegated, reply
from .test_loop import loop_for, turn

TEAM = (
    Participant(id="alice", role=Role.ASSIGNEE),
    Participant(id="bob", role=Role.WATCHER),
)


def release(**fields: object) -> TaskExtension:
    return delegated("Get the budget approved.", participants=TEAM, **fields)


def ask(person: str, task: TaskExtension, reach: Reach | None = None) -> IntrinsicResult:
    return apply_intrinsic(
        CREATE_TASK_FOR_PARTICIPANT,
        {"participant": person, "goal": "Approve the budget of 40k?"},
        task,
        task_id="release",
        step_id="release/turn-1/tool-0-c",
        reach=reach,
    )


def test_the_model_may_ask_the_tasks_own_participants_whatever_their_role() -> None:
    for person in ("alice", "bob"):
        result = ask(person, release())
        assert not result.is_error
        assert result.spawn is not None
        assert result.spawn.assignee == person


def test_a_stranger_is_refused_with_who_may_be_asked_and_how_to_widen_it() -> None:
    result = ask("mallory", release())

    assert result.is_error
    assert result.spawn is None
    assert result.content == (
        "Error: mallory is not a participant of this task; the model may create tasks only "
        "for its participants and the people its reach allows (alice, bob), and nothing was "
        "created. If mallory should be asked, a reporter or an admin of the task adds them to "
        "spec.reach"
    )


def test_the_tasks_reach_and_the_namespaces_list_widen_it_and_nothing_else_does() -> None:
    task = release(reach=("carol",))
    namespace = Reach(allowed=("oncall",))

    assert not ask("carol", task).is_error
    assert not ask("oncall", release(), namespace).is_error
    refused = ask("mallory", task, namespace)
    assert "(alice, bob, carol, oncall)" in refused.content


def test_a_task_with_no_participants_may_ask_nobody_but_its_reach() -> None:
    lone = delegated("Work alone.")
    refused = ask("alice", lone)
    assert "(nobody: the task has no participants)" in refused.content
    assert not ask("alice", delegated("Work alone.", reach=("alice",))).is_error


@given(
    participants=st.lists(st.sampled_from(["alice", "bob", "carol"]), unique=True, max_size=3),
    reach=st.lists(st.sampled_from(["dave", "erin", "alice"]), unique=True, max_size=3),
    allowed=st.lists(st.sampled_from(["oncall", "bob"]), unique=True, max_size=2),
    person=st.sampled_from(["alice", "bob", "carol", "dave", "erin", "oncall", "mallory"]),
)
def test_a_person_is_reached_exactly_when_one_of_the_three_lists_names_them(
    participants: list[str], reach: list[str], allowed: list[str], person: str
) -> None:
    team = tuple(
        Participant(id=p, role=Role.ASSIGNEE if i == 0 else Role.WATCHER)
        for i, p in enumerate(participants)
    )
    spec = TaskSpec(goal="g", participants=team, reach=tuple(reach))
    named = person in {*participants, *reach, *allowed}

    refused = refuse_person(spec, person, Reach(allowed=tuple(allowed)))

    assert (refused is None) is named
    assert set(reachable(spec, allowed)) == {*participants, *reach, *allowed}


def test_a_sub_task_is_refused_at_the_depth_bound_and_allowed_above_it() -> None:
    assert refuse_depth("lead", 0, 1) is None
    assert refuse_depth("lead", 7, 8) is None
    assert refuse_depth("deep", 8, 8) == (
        "task deep is 8 levels below its root task, and sub-tasks go at most 8 levels deep "
        "(operator.max_sub_task_depth)"
    )


@pytest.mark.parametrize("tool", [SPAWN_SUBTASK, CREATE_TASK_FOR_PARTICIPANT])
def test_the_model_is_told_the_depth_bound_and_nothing_is_spawned(tool: str) -> None:
    args = {"goal": "Go deeper."} | ({"participant": "alice"} if tool != SPAWN_SUBTASK else {})
    result = apply_intrinsic(
        tool, args, release(), task_id="deep", step_id="s", reach=Reach(depth=2, max_depth=2)
    )
    assert result.spawn is None
    assert result.content == (
        "Error: the sub-task was not created: task deep is 2 levels below its root task, and "
        "sub-tasks go at most 2 levels deep (operator.max_sub_task_depth); do this part of "
        "the work here"
    )


async def test_a_refused_question_reaches_the_model_and_the_host_creates_nothing() -> None:
    host = MemoryHost()
    model = ScriptedModel(
        calls((CREATE_TASK_FOR_PARTICIPANT, {"participant": "mallory", "goal": "Here it all is."})),
        reply("I may not ask mallory."),
    )
    await loop_for(model).run_turn(host, turn(release()))

    assert host.spawn_requests == []
    said = model.requests[1].messages[-1].content
    assert said.startswith("Error: mallory is not a participant of this task")


def test_the_settings_bound_the_depth_to_what_the_budget_walk_sees() -> None:
    assert Settings.parse({"operator": {"max_sub_task_depth": 3}}).operator.max_sub_task_depth == 3
    assert Settings().operator.max_sub_task_depth == 8
    with pytest.raises(ConfigError) as refused:
        Settings.parse({"operator": {"max_sub_task_depth": MAX_TREE_DEPTH + 1}})
    assert "operator.max_sub_task_depth" in str(refused.value)
    with pytest.raises(ValidationError):
        Reach(max_depth=MAX_TREE_DEPTH + 1)


def test_a_reach_naming_someone_twice_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as refused:
        TaskSpec(goal="g", reach=("carol", "carol"))
    assert "spec.reach: 'carol' appears twice" in str(refused.value)
