"""The plan: a directed acyclic graph of steps that participants can read.

A plan is plain immutable data; every change returns a new plan, which the host persists. The
checks that make a plan valid (unique names, known dependencies, no cycle) run whenever a plan is
built, so an invalid plan cannot exist in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from tiny_harness.core.errors import PlanCycleError, PlanError

STEP_NAME_MAX = 253
MAX_STEPS = 256


class _PlanModel(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class PlanStep(_PlanModel):
    """One step of a plan."""

    name: Annotated[str, Field(min_length=1, max_length=STEP_NAME_MAX)] = Field(
        description="The step's name, unique in its plan."
    )
    description: str = Field(default="", max_length=65536, description="What the step does.")
    output: str | None = Field(default=None, description="What the step produced, once done.")
    done: bool = Field(default=False, description="Whether the step has been completed.")
    linked_tasks: tuple[str, ...] = Field(
        default=(), description="Ids of the sub-tasks spawned from this step."
    )
    artifact: str | None = Field(
        default=None, max_length=128, description="The name of the artifact the step produced."
    )
    dependencies: tuple[str, ...] = Field(
        default=(), description="Names of the steps that must be done before this one."
    )


class Plan(_PlanModel):
    """A DAG of steps, in the order the author gave them."""

    steps: tuple[PlanStep, ...] = Field(
        default=(), max_length=MAX_STEPS, description="The steps of the plan."
    )

    @model_validator(mode="after")
    def _check_graph(self) -> Plan:
        check_graph(self.steps)
        return self

    @classmethod
    def create(cls, steps: Iterable[PlanStep | Mapping[str, object]]) -> Plan:
        """Build a plan, raising :class:`PlanCycleError` or :class:`PlanError` when it is invalid.

        Unlike plain validation, the typed error reaches the caller unwrapped.
        """
        built = tuple(_step(i, s) for i, s in enumerate(steps))
        # model_construct skips field validation, so the size limit is checked here.
        if len(built) > MAX_STEPS:
            raise PlanError(f"a plan has at most {MAX_STEPS} steps; this one has {len(built)}")
        check_graph(built)
        return cls.model_construct(steps=built)

    def step(self, name: str) -> PlanStep:
        for s in self.steps:
            if s.name == name:
                return s
        raise PlanError(f"the plan has no step named {name!r}")

    def complete_step(
        self, name: str, output: str | None = None, artifact: str | None = None
    ) -> Plan:
        """Mark a step done with its output (and the artifact it produced, by name); its
        dependencies must all be done first."""
        target = self.step(name)
        if target.done:
            raise PlanError(f"step {name!r} is already done")
        pending = [d for d in target.dependencies if not self.step(d).done]
        if pending:
            raise PlanError(
                f"step {name!r} cannot be completed before its dependencies: {', '.join(pending)}"
            )
        done = {"done": True, "output": output, "artifact": artifact}
        return self._replace(target.model_copy(update=done))

    def link_task(self, name: str, task_id: str) -> Plan:
        """Record that a sub-task was spawned from a step."""
        target = self.step(name)
        if task_id in target.linked_tasks:
            return self
        return self._replace(
            target.model_copy(update={"linked_tasks": (*target.linked_tasks, task_id)})
        )

    def current_step(self) -> PlanStep | None:
        """The first step not yet done whose dependencies are all done."""
        done = {s.name for s in self.steps if s.done}
        for s in self.steps:
            if not s.done and all(d in done for d in s.dependencies):
                return s
        return None

    @property
    def done_count(self) -> int:
        return sum(1 for s in self.steps if s.done)

    @property
    def progress(self) -> str:
        """Progress as ``done/total``."""
        return f"{self.done_count}/{len(self.steps)}"

    def _replace(self, new: PlanStep) -> Plan:
        return self.model_copy(
            update={"steps": tuple(new if s.name == new.name else s for s in self.steps)}
        )


def _step(index: int, step: PlanStep | Mapping[str, object]) -> PlanStep:
    if isinstance(step, PlanStep):
        return step
    try:
        return PlanStep.model_validate(step)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        raise PlanError(f"steps.{index}.{loc}: {first['msg']}") from None


def check_graph(steps: Sequence[PlanStep]) -> None:
    """Refuse duplicate names, unknown dependencies and cycles, each with a typed error."""
    names: set[str] = set()
    for s in steps:
        if s.name in names:
            raise PlanError(f"the plan has two steps named {s.name!r}")
        names.add(s.name)
    for s in steps:
        unknown = [d for d in s.dependencies if d not in names]
        if unknown:
            raise PlanError(f"step {s.name!r} depends on unknown step(s): {', '.join(unknown)}")
    cycle = find_cycle(steps)
    if cycle is not None:
        raise PlanCycleError(cycle)


def find_cycle(steps: Sequence[PlanStep]) -> list[str] | None:
    """A dependency cycle as a list of names with the first repeated at the end, or None."""
    deps = {s.name: s.dependencies for s in steps}
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(deps, white)
    for root in deps:
        if colour[root] != white:
            continue
        # Iterative DFS so a long chain of steps cannot exhaust the recursion limit.
        path: list[str] = [root]
        iters = [iter(deps[root])]
        colour[root] = grey
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                colour[path.pop()] = black
                iters.pop()
                continue
            if colour.get(nxt, black) == grey:
                return [*path[path.index(nxt) :], nxt]
            if colour.get(nxt) == white:
                colour[nxt] = grey
                path.append(nxt)
                iters.append(iter(deps[nxt]))
    return None
