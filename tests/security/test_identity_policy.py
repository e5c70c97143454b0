"""Identity the API server enforces (the ValidatingAdmissionPolicy of ``kube/admission.py``,
applied by the local control plane): a user cannot write a message signed by someone else, nor
create a task that leaves them out, while the gateway's ServiceAccount may speak for the
participants it authenticated. Tried with impersonation (``kubectl --as``) on the real
authorizer: each user has RBAC to create messages and tasks, so only the policy refuses.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.conftest import Kubectl
from tiny_harness.kube.names import API_VERSION, KIND, MESSAGE_KIND

pytestmark = pytest.mark.controlplane

Run = subprocess.CompletedProcess[str]

USERS = ("alice", "bob", "mallory")
GATEWAY = "tiny-harness-gateway"


@pytest.fixture
def people(kubectl: Kubectl) -> Kubectl:
    """A Role to create and read tasks and messages, bound to three users and to a gateway
    ServiceAccount; then wait (bounded) until the policy is enforced."""
    ns = kubectl.namespace
    kubectl.run("create", "serviceaccount", GATEWAY)
    kubectl.run(
        "create", "role", "speak",
        "--verb=create,get,list", "--resource=harnessmessages,harnesstasks",
    )  # fmt: skip
    kubectl.run(
        "create", "rolebinding", "speak", "--role=speak",
        *(f"--user={u}" for u in USERS), f"--serviceaccount={ns}:{GATEWAY}",
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while "written by alice" not in message_as(kubectl, "alice", "bob", dry_run=True).stderr:
        assert time.monotonic() < deadline, "the identity policy was not enforced within 30 s"
        time.sleep(0.2)
    return kubectl


def message(name: str, sender: str) -> str:
    return json.dumps(
        {
            "apiVersion": API_VERSION,
            "kind": MESSAGE_KIND,
            "metadata": {"name": name},
            "spec": {"task": "release", "messageId": name, "sender": sender,
                     "parts": [{"text": "ship it"}]},
        }
    )  # fmt: skip


def message_as(kubectl: Kubectl, user: str, sender: str, *, dry_run: bool = False) -> Run:
    args = ["create", "-f", "-", f"--as={user}"]
    if dry_run:
        args.append("--dry-run=server")
    return kubectl.run(*args, stdin=message(name_of(user, sender), sender), check=False)


def name_of(user: str, sender: str) -> str:
    """A message name for ``user`` sending as ``sender`` (a ServiceAccount's colons dropped)."""
    return f"m-{user.rsplit(':', 1)[-1]}-as-{sender}"


def task_as(kubectl: Kubectl, user: str, participants: list[dict[str, str]]) -> Run:
    body = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": f"t-by-{user}"},
        "spec": {"goal": "ship the release", "participants": participants},
    }
    return kubectl.run("create", "-f", "-", f"--as={user}", stdin=json.dumps(body), check=False)


def messages(kubectl: Kubectl) -> list[str]:
    return [m["metadata"]["name"] for m in kubectl.get_json("harnessmessages")["items"]]


def test_alice_cannot_send_as_bob_and_nothing_is_written(people: Kubectl) -> None:
    refused = message_as(people, "alice", "bob")

    assert refused.returncode != 0
    assert (
        "spec.sender is bob, but this message is written by alice: a message speaks for the "
        "user who writes it" in refused.stderr
    )
    assert messages(people) == []


def test_alice_may_send_as_herself(people: Kubectl) -> None:
    sent = message_as(people, "alice", "alice")

    assert sent.returncode == 0, sent.stderr
    assert messages(people) == ["m-alice-as-alice"]


def test_the_gateway_may_send_for_the_participant_it_authenticated(people: Kubectl) -> None:
    gateway = f"system:serviceaccount:{people.namespace}:{GATEWAY}"

    sent = message_as(people, gateway, "alice")

    assert sent.returncode == 0, sent.stderr
    assert messages(people) == [name_of(gateway, "alice")]


def test_a_user_may_not_create_a_task_that_names_only_others(people: Kubectl) -> None:
    refused = task_as(people, "mallory", [{"id": "alice", "role": "assignee"}])

    assert refused.returncode != 0
    assert "spec.participants does not name mallory, who creates the task" in refused.stderr
    assert people.get_json("harnesstasks")["items"] == []


def test_a_user_may_create_a_task_they_are_on(people: Kubectl) -> None:
    created = task_as(
        people,
        "mallory",
        [{"id": "alice", "role": "assignee"}, {"id": "mallory", "role": "reporter"}],
    )

    assert created.returncode == 0, created.stderr
    assert [t["metadata"]["name"] for t in people.get_json("harnesstasks")["items"]] == [
        "t-by-mallory"
    ]
