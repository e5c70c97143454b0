"""The authority table: who may change what on a task, and what a refused writer is told.

The same table is enforced by the admission policy (tests/security/test_spec_authority.py
checks on the real API server that the two agree), the commands and the gateway.
"""

from __future__ import annotations

from typing import Any

import pytest

from tiny_harness.core.authority import (
    APPROVAL,
    ASK,
    BUDGET,
    DEADLINES,
    EFFORT,
    HARNESS_FIELDS,
    MODEL,
    PARTICIPANTS,
    REACH,
    SUB_TASKS,
    TABLE,
    WORK,
    Authority,
    may_change,
    participants_refusal,
    refusal,
    update_refusal,
)
from tiny_harness.core.task import Role, TaskSpec

A, R, W, D = Role.ASSIGNEE, Role.REPORTER, Role.WATCHER, Role.ADMIN


def test_every_spec_field_has_exactly_one_row_or_is_the_harnesss() -> None:
    """A field added to the task without a row would be changeable by no rule at all."""
    rows = [f for row in TABLE for f in row.fields]
    assert len(rows) == len(set(rows))
    assert set(rows) | HARNESS_FIELDS == set(TaskSpec.model_fields)
    assert not set(rows) & HARNESS_FIELDS


#: The table, spelled out: who may make each change (None: not on the task).
EXPECTED: dict[Authority, set[Role]] = {
    PARTICIPANTS: {A, R, D},
    WORK: {A, R, D},
    ASK: {R, D},
    APPROVAL: {R, D},
    BUDGET: {R, D},
    DEADLINES: {R, D},
    REACH: {R, D},
    MODEL: {A, R, D},
    EFFORT: {A, R, D},
    SUB_TASKS: {A, R, D},
}


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.name)
@pytest.mark.parametrize("role", [None, W, A, R, D])
def test_may_change_answers_the_table(row: Authority, role: Role | None) -> None:
    assert may_change(role, row) is (role in EXPECTED[row])


def test_the_gates_on_the_assignees_work_are_changed_only_above_them() -> None:
    for row in (APPROVAL, BUDGET, DEADLINES, REACH, ASK):
        assert not may_change(Role.ASSIGNEE, row)
        assert may_change(Role.REPORTER, row)
        assert may_change(Role.ADMIN, row)


def test_a_refusal_says_who_may_and_what_to_do() -> None:
    assert refusal(BUDGET, "alice", Role.ASSIGNEE, "alices") == (
        "alice is an assignee and may not change the budget of task alices (spec.budget): "
        "only its reporter or admin may; ask one of them"
    )
    assert refusal(DEADLINES, "mallory", None, "alices") == (
        "mallory is not a participant and may not change the deadlines of task alices "
        "(spec.activeDeadlineSeconds, spec.inputTimeoutSeconds, spec.onTimeout, "
        "spec.idleTimeoutSeconds, spec.onIdle, spec.ttlSecondsAfterFinished): only its reporter "
        "or admin may; ask one of them"
    )
    assert refusal(MODEL, "bob", Role.WATCHER, "t1") == (
        "bob is a watcher and may not change the model of task t1: only its assignee, reporter "
        "or admin may; ask one of them"
    )
    assert refusal(BUDGET, "carol", Role.REPORTER, "t1") is None


# -- participants ---------------------------------------------------------------------------------

TEAM = [("alice", A), ("bob", W), ("rita", R), ("root", D)]


def changed(**roles: Role | None) -> list[tuple[str, Role]]:
    """TEAM with the given ids given a new role (None: taken off; a new id: added)."""
    out = [(who, roles.get(who, role)) for who, role in TEAM if roles.get(who, role) is not None]
    out += [(who, role) for who, role in roles.items() if role and who not in dict(TEAM)]
    return [(who, role) for who, role in out if role is not None]


@pytest.mark.parametrize(
    ("writer", "change"),
    [
        ("alice", {"alice": R}),  # the assignee makes herself the reporter
        ("alice", {"alice": D}),  # ... or the admin, who decides calls by default
        ("alice", {"sock": D}),  # ... or a second identity of hers
        ("alice", {"bob": R}),  # ... or a friend
        ("bob", {"bob": A}),  # a watcher makes himself anything
        ("rita", {"rita": D}),  # a reporter makes herself admin
    ],
)
def test_no_one_gives_a_role_above_their_own(writer: str, change: dict[str, Role]) -> None:
    refused = participants_refusal(writer, "t", TEAM, changed(**change))
    assert refused is not None
    if writer == "bob":
        assert "bob is a watcher and may not change who is on task t" in refused
    else:
        held = dict(TEAM)[writer].value
        assert f"may not give anyone a role above {held} on task t" in refused
        assert "so no one raises their own" in refused


@pytest.mark.parametrize(
    ("writer", "change"),
    [
        ("alice", {"bob": None}),  # the assignee takes the watcher off
        ("alice", {"rita": None}),  # ... or the reporter who set her budget
        ("alice", {"rita": W}),  # ... or lowers her
        ("rita", {"root": R}),  # a reporter lowers the admin
        ("rita", {"root": None}),  # ... or takes them off
    ],
)
def test_others_are_taken_off_only_by_a_reporter_or_admin_up_to_their_own_role(
    writer: str, change: dict[str, Role | None]
) -> None:
    refused = participants_refusal(writer, "t", TEAM, changed(**change))
    assert refused is not None
    assert "may not take others off task t or lower their roles" in refused


@pytest.mark.parametrize(
    ("writer", "change"),
    [
        ("alice", {"carol": W}),  # the assignee adds a watcher
        ("alice", {"dave": A}),  # ... or a second assignee
        ("alice", {"alice": W, "dave": A}),  # ... or steps down for someone else
        ("rita", {"carol": R, "bob": None}),  # a reporter adds a reporter, takes a watcher off
        ("rita", {"alice": None, "dave": A}),  # ... replaces the assignee
        ("rita", {"rita": None}),  # ... leaves
        ("root", {"rita": None, "alice": W, "erin": D}),  # an admin does anything
    ],
)
def test_what_each_may_do_with_participants(writer: str, change: dict[str, Role | None]) -> None:
    assert participants_refusal(writer, "t", TEAM, changed(**change)) is None


def spec(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "goal": "ship it",
        "participants": [{"id": who, "role": role.value} for who, role in TEAM],
    }
    return base | fields


def test_the_assignee_may_not_remove_the_approval_rules_nor_raise_the_budget() -> None:
    old = spec(approval=[{"tools": ["ops__deploy"]}], budget={"maxTokens": 1000})
    removed = {k: v for k, v in old.items() if k != "approval"}
    assert update_refusal("alice", "t", old, removed) == refusal(APPROVAL, "alice", A, "t")
    raised = old | {"budget": {"maxTokens": 10**9}}
    assert update_refusal("alice", "t", old, raised) == refusal(BUDGET, "alice", A, "t")
    assert update_refusal("rita", "t", old, removed) is None
    assert update_refusal("root", "t", old, raised) is None


def test_an_update_is_refused_for_its_first_change_in_the_tables_order() -> None:
    old = spec()
    new = old | {"budget": {"maxTokens": 5}, "plan": {"steps": []}}
    assert update_refusal("bob", "t", old, new) == refusal(WORK, "bob", W, "t")
    assert update_refusal("alice", "t", old, new) == refusal(BUDGET, "alice", A, "t")


def test_an_unchanged_spec_is_no_change_whoever_writes_it() -> None:
    assert update_refusal("mallory", "t", spec(), spec()) is None
