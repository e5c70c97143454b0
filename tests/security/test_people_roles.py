"""The chart's roles for people (``templates/rbac-people.yaml``), on the real authorizer.

A participant works with tasks and messages; what gates a participant's work (a tool server's
approval policy, where a Secret's value may go, an agent's policy) is written by a
configurator, whom the participant role does not make them. Neither role reaches a status
subresource or the turn journal: those are the operator's. Tried with impersonation
(``kubectl --as``): RBAC alone refuses, before any admission policy is asked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.conftest import Kubectl
from tests.eventually import eventually
from tests.integration.chart_support import Helm, build_helm
from tiny_harness.kube.names import API_VERSION, KIND, TOOL_SERVER_KIND, TURN_KIND

pytestmark = pytest.mark.controlplane


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(build_helm(), tmp_path_factory.mktemp("helm-home"))


def people_roles(helm: Helm, namespace: str) -> list[dict[str, Any]]:
    """The two ClusterRoles the chart renders for people, with the default values."""
    docs = helm.render(namespace, {})
    return [
        d
        for d in docs
        if d["kind"] == "ClusterRole"
        and d["metadata"]["labels"].get("app.kubernetes.io/component") == "people"
    ]


@pytest.fixture
def team(helm: Helm, kubectl: Kubectl) -> dict[str, str]:
    """The roles applied; ``pat`` bound to the participant role and ``cora`` to the
    configurator role in the test's namespace. Returns the roles' names by kind of person."""
    roles = people_roles(helm, kubectl.namespace)
    kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump_all(roles))
    names = {r["metadata"]["name"].rsplit("-", 1)[-1]: r["metadata"]["name"] for r in roles}
    for user, kind in (("pat", "participant"), ("cora", "configurator")):
        kubectl.run("create", "rolebinding", user, f"--clusterrole={names[kind]}", f"--user={user}")
    return names


def tool_server(name: str) -> str:
    return json.dumps(
        {
            "apiVersion": API_VERSION,
            "kind": TOOL_SERVER_KIND,
            "metadata": {"name": name},
            "spec": {
                "url": "http://127.0.0.1:9/mcp",
                "approval": {"tools": ["deploy"], "roles": ["reporter"]},
            },
        }
    )


def can(kubectl: Kubectl, user: str, verb: str, resource: str, *flags: str) -> bool:
    out = kubectl.run("auth", "can-i", verb, resource, f"--as={user}", *flags, check=False)
    return out.stdout.strip() == "yes"


def test_the_chart_renders_a_participant_and_a_configurator_role(helm: Helm) -> None:
    names = sorted(r["metadata"]["name"] for r in people_roles(helm, "team"))

    assert names == ["tiny-harness-team-configurator", "tiny-harness-team-participant"]


def test_a_participant_works_with_tasks_but_not_with_what_gates_them(
    kubectl: Kubectl, team: dict[str, str]
) -> None:
    server = tool_server("deploys")
    created = kubectl.run("create", "-f", "-", "--as=cora", stdin=server, check=False)
    assert created.returncode == 0, created.stderr

    task = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "pats"},
        "spec": {"goal": "ship it", "participants": [{"id": "pat", "role": "assignee"}]},
    }
    made = kubectl.run("create", "-f", "-", "--as=pat", stdin=json.dumps(task), check=False)
    assert made.returncode == 0, made.stderr
    assert kubectl.run("get", "htool", "deploys", "--as=pat", check=False).returncode == 0

    ungated = kubectl.run(
        "patch", "htool", "deploys", "--as=pat", "--type=merge",
        "-p", '{"spec": {"approval": null}}', check=False,
    )  # fmt: skip
    status = kubectl.run(
        "patch", "ht", "pats", "--as=pat", "--subresource=status", "--type=merge",
        "-p", '{"status": {"state": "TASK_STATE_COMPLETED"}}', check=False,
    )  # fmt: skip
    turn = {
        "apiVersion": API_VERSION,
        "kind": TURN_KIND,
        "metadata": {"name": "pats-forged"},
        "spec": {"task": "pats", "turn": 0, "entries": []},
    }
    forged = kubectl.run("create", "-f", "-", "--as=pat", stdin=json.dumps(turn), check=False)

    for refused in (ungated, status, forged):
        assert refused.returncode != 0
        assert "Forbidden" in refused.stderr
        assert 'User "pat" cannot' in refused.stderr
    kept = kubectl.get_json("htool", "deploys")
    assert kept["spec"]["approval"] == {"tools": ["deploy"], "roles": ["reporter"]}
    assert (kubectl.get_json("ht", "pats").get("status") or {}).get("state") != (
        "TASK_STATE_COMPLETED"
    )
    assert kubectl.get_json("harnessturns")["items"] == []

    relaxed = kubectl.run(
        "patch", "htool", "deploys", "--as=cora", "--type=merge",
        "-p", '{"spec": {"approval": {"tools": ["deploy"], "roles": ["admin"]}}}', check=False,
    )  # fmt: skip
    assert relaxed.returncode == 0, relaxed.stderr


def test_a_namespaces_editors_are_participants_and_its_admins_configurators(
    kubectl: Kubectl, team: dict[str, str]
) -> None:
    """Aggregated into Kubernetes' own ``edit`` and ``admin`` roles (the controller manager's
    aggregation controller fills them in, so the grant is waited for, bounded)."""
    kubectl.run("create", "rolebinding", "eddie", "--clusterrole=edit", "--user=eddie")
    kubectl.run("create", "rolebinding", "ada", "--clusterrole=admin", "--user=ada")

    eventually(
        lambda: (
            can(kubectl, "eddie", "create", "harnesstasks")
            and can(kubectl, "ada", "patch", "harnesstoolservers")
        ),
        within=60,
        what="the people roles to be aggregated into edit and admin",
        interval=0.5,
    )
    assert not can(kubectl, "eddie", "patch", "harnesstoolservers")
    assert not can(kubectl, "eddie", "patch", "harnessagents")
    assert not can(kubectl, "eddie", "patch", "harnesstasks", "--subresource=status")
    assert not can(kubectl, "ada", "create", "harnessturns")
    assert can(kubectl, "eddie", "create", "harnessmessages")
