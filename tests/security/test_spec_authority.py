"""Whoever is gated cannot remove the gate: the authority table (``core/authority.py``) on the
real authorizer, and through ``/budget`` with the real operator.

Each user is impersonated (``kubectl --as``) with RBAC to create, update and patch tasks, so
only the identity admission policy, whose spec rules are generated from the table, refuses.
A property test patches random specs as random participants and checks that the policy and
the table agree both ways, in the same words.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import NotYet, eventually, eventually_async
from tests.integration.lifecycle_support import Tasks
from tiny_harness.core.authority import (
    APPROVAL,
    BUDGET,
    PARTICIPANTS,
    grant_refusal_text,
    refusal_text,
    update_refusal,
)
from tiny_harness.core.task import Role
from tiny_harness.kube.names import API_VERSION, KIND

pytestmark = pytest.mark.controlplane

Run = subprocess.CompletedProcess[str]
Operator = Callable[..., OperatorProcess]

#: Who is impersonated: the team of every task here, and a stranger.
USERS = ("alice", "bob", "rita", "root", "carol", "dave", "mallory")
TEAM = [
    {"id": "alice", "role": "assignee"},
    {"id": "bob", "role": "watcher"},
    {"id": "rita", "role": "reporter"},
    {"id": "root", "role": "admin"},
]
GATES = {
    "approval": [{"tools": ["ops__deploy"], "participants": ["rita"]}],
    "budget": {"maxTokens": 1000},
}


@pytest.fixture
def people(kubectl: Kubectl) -> Kubectl:
    """RBAC to create, update and patch tasks for every user; then wait (bounded) until the
    policy is enforced."""
    kubectl.run(
        "create", "role", "edit-tasks", "--verb=create,get,list,update,patch",
        "--resource=harnesstasks,harnessmessages",
    )  # fmt: skip
    kubectl.run(
        "create", "rolebinding", "edit-tasks", "--role=edit-tasks", *(f"--user={u}" for u in USERS)
    )  # fmt: skip
    create(kubectl, "probe", {"goal": "probe", "participants": TEAM})
    probe = {"budget": {"maxTokens": 7}}
    eventually(
        lambda: (
            "denied request" in patch_as(kubectl, "mallory", "probe", probe, dry_run=True).stderr
        ),
        within=30,
        what="the identity policy to be enforced",
        interval=0.2,
    )
    return kubectl


def create(kubectl: Kubectl, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The task as the cluster administrator writes it (the harness, a test's setup)."""
    body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": spec}
    made = kubectl.run("create", "-f", "-", "-o", "json", stdin=json.dumps(body))
    return dict(json.loads(made.stdout)["spec"])


def patch_as(
    kubectl: Kubectl, user: str, task: str, spec: dict[str, Any], *, dry_run: bool = False
) -> Run:
    """A merge patch of the spec (a null removes a field), as ``user``."""
    return kubectl.run(
        "patch", "ht", task, "--type=merge", "-p", json.dumps({"spec": spec}), f"--as={user}",
        *(["--dry-run=server"] if dry_run else []), check=False,
    )  # fmt: skip


def replace_spec_as(kubectl: Kubectl, user: str, task: str, spec: dict[str, Any]) -> Run:
    """The whole spec replaced by ``spec`` (a JSON patch), as ``user``."""
    body = json.dumps([{"op": "replace", "path": "/spec", "value": spec}])
    return kubectl.run(
        "patch", "ht", task, "--type=json", "-p", body, f"--as={user}", "-o", "json",
        check=False,
    )  # fmt: skip


def spec_of(kubectl: Kubectl, task: str) -> dict[str, Any]:
    return dict(kubectl.get_json("ht", task)["spec"])


def gated_task(kubectl: Kubectl, name: str = "gated") -> dict[str, Any]:
    return create(kubectl, name, {"goal": "ship the release", "participants": TEAM, **GATES})


# -- whoever is gated cannot remove the gate --------------------------------------------------


def test_the_assignee_may_not_patch_away_her_tasks_approval_rules(people: Kubectl) -> None:
    before = gated_task(people)

    refused = patch_as(people, "alice", "gated", {"approval": None})

    assert refused.returncode != 0
    assert refusal_text(APPROVAL, "alice", Role.ASSIGNEE, "gated") in refused.stderr
    assert (
        "alice is an assignee and may not change the approval rules of task gated "
        "(spec.approval): only its reporter or admin may; ask one of them" in refused.stderr
    )
    assert spec_of(people, "gated") == before


def test_the_assignee_may_not_raise_the_budget_that_bounds_her(people: Kubectl) -> None:
    before = gated_task(people)

    refused = patch_as(people, "alice", "gated", {"budget": {"maxTokens": 10**9}})

    assert refused.returncode != 0
    assert (
        "alice is an assignee and may not change the budget of task gated (spec.budget): "
        "only its reporter or admin may; ask one of them" in refused.stderr
    )
    assert spec_of(people, "gated") == before


@pytest.mark.parametrize("user", ["rita", "root"])
def test_a_reporter_or_an_admin_may_change_the_gates(people: Kubectl, user: str) -> None:
    gated_task(people)

    changed = patch_as(people, user, "gated", {"approval": None, "budget": {"maxTokens": 5000}})

    assert changed.returncode == 0, changed.stderr
    after = spec_of(people, "gated")
    assert "approval" not in after
    assert after["budget"] == {"maxTokens": 5000}


@pytest.mark.parametrize("role", ["reporter", "admin"])
def test_the_assignee_may_not_make_herself_reporter_or_admin(people: Kubectl, role: str) -> None:
    before = gated_task(people)
    # Someone else takes her place as the assignee the schema asks for.
    raised = [{**p, "role": role} if p["id"] == "alice" else p for p in TEAM]
    raised.append({"id": "dave", "role": "assignee"})

    refused = patch_as(people, "alice", "gated", {"participants": raised})

    assert refused.returncode != 0
    assert grant_refusal_text("alice", Role.ASSIGNEE, "gated") in refused.stderr
    assert spec_of(people, "gated") == before


@pytest.mark.parametrize("role", ["assignee", "reporter", "admin"])
def test_a_watcher_makes_himself_nothing(people: Kubectl, role: str) -> None:
    before = gated_task(people)
    raised = [{**p, "role": role} if p["id"] == "bob" else p for p in TEAM]

    refused = patch_as(people, "bob", "gated", {"participants": raised})

    assert refused.returncode != 0
    assert refusal_text(PARTICIPANTS, "bob", Role.WATCHER, "gated") in refused.stderr
    assert spec_of(people, "gated") == before


def test_the_assignee_may_add_a_watcher_and_a_reporter_a_reporter(people: Kubectl) -> None:
    gated_task(people)
    watcher = [*TEAM, {"id": "carol", "role": "watcher"}]

    added = patch_as(people, "alice", "gated", {"participants": watcher})
    assert added.returncode == 0, added.stderr
    reporter = [*TEAM, {"id": "carol", "role": "reporter"}]
    raised = patch_as(people, "rita", "gated", {"participants": reporter})

    assert raised.returncode == 0, raised.stderr
    assert spec_of(people, "gated")["participants"] == reporter


async def test_the_assignee_is_refused_the_budget_through_the_command_in_the_same_words(
    people: Kubectl, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """What the assignee may not patch she may not change with ``/budget`` either: the same
    rule, the same sentence; the reporter may, through both doors."""
    operator()
    gated_task(people)
    patched = patch_as(people, "alice", "gated", {"budget": {"maxTokens": 10**9}})
    words = refusal_text(BUDGET, "alice", Role.ASSIGNEE, "gated")
    assert words in patched.stderr

    await tasks.send("gated", "/budget tokens 1000000000", sender="alice")
    refused = await tasks.wait_agent_message("gated", "may not change the budget")

    assert refused.text == f"refused: {words}"
    await tasks.send("gated", "/budget tokens 5000", sender="rita")
    await tasks.wait_agent_message("gated", "budget set: 5,000 tokens")

    async def raised() -> dict[str, Any] | NotYet:
        budget = (await tasks.status("gated")).get("budget") or {}
        return budget if budget.get("maxTokens") == 5000 else NotYet(f"budget {budget}")

    await eventually_async(raised, within=30, what="the reporter's budget in the status")
    assert patch_as(people, "rita", "gated", {"budget": {"maxTokens": 6000}}).returncode == 0


# -- the table and the policy agree, both ways ------------------------------------------------

ROLES = st.sampled_from([r.value for r in Role])
IDS = ("alice", "bob", "rita", "root", "carol")
WRITERS = (*IDS, "dave", "mallory")


@st.composite
def teams(draw: st.DrawFn) -> list[dict[str, str]]:
    """Participants with unique ids and an assignee (what the schema accepts)."""
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=len(IDS), unique=True))
    roles = [draw(ROLES) for _ in ids]
    if "assignee" not in roles:
        roles[draw(st.integers(0, len(ids) - 1))] = "assignee"
    return [{"id": i, "role": r} for i, r in zip(ids, roles, strict=True)]


#: Values each field may take; None: absent.
VALUES: dict[str, list[Any]] = {
    "name": [None, "release", "hotfix"],
    "type": [None, "ops"],
    "goal": ["ship it", "ship it twice"],
    "description": [None, "carefully"],
    "acceptanceCriteria": [None, ["tests pass"], ["tests pass", "docs"]],
    "approval": [None, GATES["approval"], [{"tools": ["ops__deploy"], "roles": ["admin"]}]],
    "budget": [None, {"maxTokens": 1000}, {"maxTokens": 10**9}, {"maxModelCalls": 3}],
    "activeDeadlineSeconds": [None, 60, 3600],
    "onTimeout": [None, "fail", "complete"],
    "ttlSecondsAfterFinished": [None, 0, 600],
    "toolServers": [None, ["ops"], ["ops", "search"]],
    "agent": [None, "billing"],
}


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"participants": draw(teams())}
    for field, values in VALUES.items():
        value = draw(st.sampled_from(values))
        if value is not None:
            spec[field] = value
    return spec


@st.composite
def edits(draw: st.DrawFn, team: list[dict[str, str]]) -> list[dict[str, str]]:
    """``team`` with one participant added, taken off or given another role (a whole new
    team now and then), keeping the assignee the schema asks for."""
    if draw(st.integers(0, 4)) == 0:
        return draw(teams())
    who = draw(st.sampled_from(IDS))
    role = draw(st.sampled_from([None, *[r.value for r in Role]]))
    edited = [p for p in team if p["id"] != who]
    if role is not None:
        edited.append({"id": who, "role": role})
    if not any(p["role"] == "assignee" for p in edited):
        edited.append({"id": "dave", "role": "assignee"})
    return edited


@st.composite
def changes(draw: st.DrawFn, old: dict[str, Any]) -> dict[str, Any]:
    """``old`` with its participants edited (even odds) and a few other fields (each with
    odds of one in four) drawn again."""
    new = dict(old)
    if draw(st.booleans()):
        new["participants"] = draw(edits(old["participants"]))
    for field, values in VALUES.items():
        if not draw(st.booleans()) or not draw(st.booleans()):
            continue
        value = draw(st.sampled_from(values))
        if value is None:
            new.pop(field, None)
        else:
            new[field] = value
    return new


_names = itertools.count()


def test_the_policy_accepts_exactly_the_spec_changes_the_table_authorises(
    people: Kubectl,
) -> None:
    """Random participants patch random specs: a change the table refuses is refused with
    the table's words and changes nothing; a change it authorises is accepted as written."""

    @settings(
        max_examples=50,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        name = f"p{next(_names)}"
        old = create(people, name, data.draw(specs(), label="old"))
        new = data.draw(changes(old), label="new")
        # Mostly someone on the task, whose role decides; now and then anyone.
        on_task = [p["id"] for p in old["participants"]]
        writer = data.draw(
            st.sampled_from(on_task) | st.sampled_from(on_task) | st.sampled_from(WRITERS),
            label="writer",
        )
        expected = update_refusal(writer, name, old, new)

        written = replace_spec_as(people, writer, name, new)
        event("accepted" if expected is None else "refused: " + expected.split(":")[0])

        if expected is None:
            assert written.returncode == 0, written.stderr
            assert json.loads(written.stdout)["spec"] == new
        else:
            assert written.returncode != 0
            assert expected in written.stderr
            assert spec_of(people, name) == old

    check()
