"""The plan DAG: valid plans are accepted and advance in dependency order; cycles are refused."""

from __future__ import annotations

import graphlib
import itertools
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tiny_harness.core.errors import PlanCycleError, PlanError
from tiny_harness.core.plan import MAX_STEPS, Plan, PlanStep, find_cycle


def steps(*edges: tuple[str, tuple[str, ...]]) -> list[PlanStep]:
    return [PlanStep(name=name, dependencies=deps) for name, deps in edges]


RELEASE = steps(
    ("design", ()),
    ("build", ("design",)),
    ("docs", ("design",)),
    ("ship", ("build", "docs")),
)


# --- unit ------------------------------------------------------------------------------------


def test_a_new_plan_has_no_progress() -> None:
    plan = Plan.create(RELEASE)

    assert plan.progress == "0/4"
    assert plan.done_count == 0


def test_completing_a_step_records_its_output_and_advances_progress() -> None:
    plan = Plan.create(RELEASE).complete_step("design", output="design.md")

    assert plan.step("design").done
    assert plan.step("design").output == "design.md"
    assert plan.progress == "1/4"


def test_completing_a_step_leaves_the_original_plan_unchanged() -> None:
    plan = Plan.create(RELEASE)

    plan.complete_step("design")

    assert plan.progress == "0/4"


def test_the_current_step_is_the_first_one_whose_dependencies_are_done() -> None:
    plan = Plan.create(RELEASE)
    assert plan.current_step() == plan.step("design")

    plan = plan.complete_step("design")
    assert plan.current_step() == plan.step("build")

    plan = plan.complete_step("build").complete_step("docs").complete_step("ship")
    assert plan.current_step() is None
    assert plan.progress == "4/4"


def test_completing_an_unknown_step_is_a_plan_error_naming_it() -> None:
    with pytest.raises(PlanError, match="no step named 'deploy'"):
        Plan.create(RELEASE).complete_step("deploy")


def test_completing_a_step_before_its_dependencies_is_a_plan_error_naming_them() -> None:
    plan = Plan.create(RELEASE).complete_step("design").complete_step("build")

    with pytest.raises(PlanError, match="before its dependencies: docs"):
        plan.complete_step("ship")


def test_completing_a_step_twice_is_a_plan_error() -> None:
    plan = Plan.create(RELEASE).complete_step("design")

    with pytest.raises(PlanError, match="already done"):
        plan.complete_step("design")


def test_linking_a_task_to_a_step_is_recorded_once() -> None:
    plan = Plan.create(RELEASE).link_task("build", "t.1").link_task("build", "t.1")

    assert plan.step("build").linked_tasks == ("t.1",)


def test_linking_a_task_to_an_unknown_step_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="no step named"):
        Plan.create(RELEASE).link_task("deploy", "t.1")


def test_a_plan_with_two_steps_of_the_same_name_is_refused() -> None:
    with pytest.raises(PlanError, match="two steps named 'a'"):
        Plan.create(steps(("a", ()), ("a", ())))


def test_a_plan_depending_on_an_unknown_step_is_refused_naming_it() -> None:
    with pytest.raises(PlanError, match="unknown step\\(s\\): ghost"):
        Plan.create(steps(("a", ("ghost",))))


def test_a_step_depending_on_itself_is_a_cycle() -> None:
    with pytest.raises(PlanCycleError) as refused:
        Plan.create(steps(("a", ("a",))))

    assert refused.value.cycle == ("a", "a")


def test_a_cycle_error_names_the_cycle_in_its_message() -> None:
    with pytest.raises(PlanCycleError, match="dependency cycle: "):
        Plan.create(steps(("a", ("c",)), ("b", ("a",)), ("c", ("b",))))


def test_validating_a_plan_document_refuses_a_cycle_too() -> None:
    document = {
        "steps": [{"name": "a", "dependencies": ["b"]}, {"name": "b", "dependencies": ["a"]}]
    }

    with pytest.raises(ValidationError, match="dependency cycle"):
        Plan.model_validate(document)


def test_a_plan_accepts_steps_given_as_camel_case_mappings() -> None:
    plan = Plan.create([{"name": "a", "linkedTasks": ["t"]}, {"name": "b", "dependencies": ["a"]}])

    assert plan.step("a").linked_tasks == ("t",)


def test_a_plan_with_an_invalid_step_is_a_plan_error_naming_the_step() -> None:
    with pytest.raises(PlanError, match=r"steps\.1\.name: String should have at least 1 character"):
        Plan.create([{"name": "a"}, {"name": ""}])


def test_a_plan_with_too_many_steps_is_a_plan_error() -> None:
    too_many = [PlanStep(name=f"s{i}") for i in range(MAX_STEPS + 1)]

    with pytest.raises(PlanError, match=f"at most {MAX_STEPS} steps"):
        Plan.create(too_many)


def test_a_long_chain_does_not_exhaust_the_recursion_limit() -> None:
    chain = [PlanStep(name="s0")] + [
        PlanStep(name=f"s{i}", dependencies=(f"s{i - 1}",)) for i in range(1, MAX_STEPS)
    ]

    assert Plan.create(chain).progress == f"0/{MAX_STEPS}"
    assert find_cycle([*chain[1:], PlanStep(name="s0", dependencies=(f"s{MAX_STEPS - 1}",))])


# --- properties ------------------------------------------------------------------------------


@st.composite
def dags(draw: st.DrawFn) -> list[PlanStep]:
    """A random DAG: step i may depend only on steps before it, then the list is shuffled."""
    n = draw(st.integers(min_value=1, max_value=25))
    names = [f"step-{i}" for i in range(n)]
    built = []
    for i, name in enumerate(names):
        deps = draw(st.lists(st.sampled_from(names[:i]), unique=True)) if i else []
        built.append(PlanStep(name=name, dependencies=tuple(deps)))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    random.Random(seed).shuffle(built)
    return built


@st.composite
def cyclic_graphs(draw: st.DrawFn) -> tuple[list[PlanStep], list[str]]:
    """A random DAG with a cycle through some of its steps injected; returns the cycle too."""
    built = draw(dags())
    names = [s.name for s in built]
    ring = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
    extra = {ring[i]: ring[(i + 1) % len(ring)] for i in range(len(ring))}
    return [
        s.model_copy(update={"dependencies": tuple({*s.dependencies, extra[s.name]})})
        if s.name in extra
        else s
        for s in built
    ], ring


def topological_order(plan_steps: list[PlanStep]) -> list[str]:
    sorter = graphlib.TopologicalSorter({s.name: s.dependencies for s in plan_steps})
    return list(sorter.static_order())


@given(dags())
def test_any_dag_is_accepted(plan_steps: list[PlanStep]) -> None:
    plan = Plan.create(plan_steps)

    assert [s.name for s in plan.steps] == [s.name for s in plan_steps]
    assert find_cycle(plan.steps) is None


@given(dags())
def test_any_dag_completes_in_topological_order(plan_steps: list[PlanStep]) -> None:
    plan = Plan.create(plan_steps)
    total = len(plan_steps)

    for done, name in enumerate(topological_order(plan_steps), start=1):
        plan = plan.complete_step(name, output=f"out of {name}")
        assert plan.progress == f"{done}/{total}"

    assert all(s.done and s.output == f"out of {s.name}" for s in plan.steps)
    assert plan.current_step() is None


@given(dags())
def test_a_step_with_an_undone_dependency_cannot_be_completed(plan_steps: list[PlanStep]) -> None:
    plan = Plan.create(plan_steps)
    blocked = [s for s in plan_steps if s.dependencies]

    for step in blocked:
        with pytest.raises(PlanError, match="before its dependencies"):
            plan.complete_step(step.name)


@given(dags())
def test_the_current_step_can_always_be_completed(plan_steps: list[PlanStep]) -> None:
    plan = Plan.create(plan_steps)

    while (current := plan.current_step()) is not None:
        plan = plan.complete_step(current.name)

    assert plan.done_count == len(plan_steps)


@given(cyclic_graphs())
def test_any_graph_with_a_cycle_is_refused_with_a_real_cycle(
    graph: tuple[list[PlanStep], list[str]],
) -> None:
    plan_steps, _ring = graph
    deps = {s.name: set(s.dependencies) for s in plan_steps}

    with pytest.raises(PlanCycleError) as refused:
        Plan.create(plan_steps)

    cycle = refused.value.cycle
    assert len(cycle) >= 2
    assert cycle[0] == cycle[-1]
    assert len(set(cycle[:-1])) == len(cycle) - 1, "a cycle visits each step once"
    for step, dependency in itertools.pairwise(cycle):
        assert dependency in deps[step], f"{step} -> {dependency} is not a dependency edge"


@given(
    st.integers(min_value=1, max_value=12).flatmap(
        lambda n: st.lists(
            st.lists(st.integers(min_value=0, max_value=n - 1), unique=True, max_size=n),
            min_size=n,
            max_size=n,
        )
    )
)
def test_find_cycle_agrees_with_the_standard_library(adjacency: list[list[int]]) -> None:
    plan_steps = [
        PlanStep(name=f"n{i}", dependencies=tuple(f"n{j}" for j in deps))
        for i, deps in enumerate(adjacency)
    ]
    try:
        topological_order(plan_steps)
        acyclic = True
    except graphlib.CycleError:
        acyclic = False

    assert (find_cycle(plan_steps) is None) == acyclic
