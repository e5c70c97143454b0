"""Identity the API server enforces (the ValidatingAdmissionPolicy of ``kube/admission.py``,
applied by the local control plane): a user cannot write a message signed by someone else,
create a task that leaves them out, link a task to a parent, change the spec of a task beyond
what the authority table gives their role (``test_spec_authority.py`` has the table's own
tests), or write a turn record, while the gateway's ServiceAccount may speak for the
participants it authenticated. Tried with impersonation (``kubectl --as``) on the real
authorizer: each user has RBAC to create and update messages, tasks and turn records, so only
the policy refuses.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import Kubectl
from tests.eventually import eventually
from tiny_harness.kube.names import API_VERSION, KIND, MESSAGE_KIND, TURN_KIND

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
        "create", "role", "speak", "--verb=create,get,list,update,patch",
        "--resource=harnessmessages,harnesstasks,harnessturns",
    )  # fmt: skip
    kubectl.run(
        "create", "rolebinding", "speak", "--role=speak",
        *(f"--user={u}" for u in USERS), f"--serviceaccount={ns}:{GATEWAY}",
    )  # fmt: skip
    eventually(
        lambda: "written by alice" in message_as(kubectl, "alice", "bob", dry_run=True).stderr,
        within=30,
        what="the identity policy to be enforced",
        interval=0.2,
    )
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


def test_a_decision_is_bound_to_its_writer_as_any_message(people: Kubectl) -> None:
    """A decision on a call that waits for approval is a message like any other: Bob cannot
    approve in Alice's name, whatever the operator would make of it."""
    decision = {
        "apiVersion": API_VERSION,
        "kind": MESSAGE_KIND,
        "metadata": {"name": "d-bob-as-alice"},
        "spec": {"task": "release", "messageId": "d-bob-as-alice", "sender": "alice",
                 "decision": {"callId": "call_1", "verdict": "approve"}},
    }  # fmt: skip
    refused = people.run("create", "-f", "-", "--as=bob", stdin=json.dumps(decision), check=False)

    assert refused.returncode != 0
    assert "spec.sender is alice, but this message is written by bob" in refused.stderr
    assert messages(people) == []


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


# -- parenthood, spec changes and the journal ---------------------------------------------------


def alices_task(kubectl: Kubectl) -> str:
    """alice's task (written by the administrator, as the harness would): bob watches it."""
    body = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "alices"},
        "spec": {
            "goal": "ship the release",
            "participants": [
                {"id": "alice", "role": "assignee"},
                {"id": "bob", "role": "watcher"},
            ],
        },
    }
    kubectl.run("create", "-f", "-", stdin=json.dumps(body))
    return "alices"


def child_as(kubectl: Kubectl, user: str, parent: str) -> Run:
    body = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": f"child-by-{user.rsplit(':', 1)[-1]}"},
        "spec": {
            "goal": "wait for me",
            "parent": {"taskId": parent},
            "participants": [{"id": user, "role": "assignee"}],
        },
    }
    return kubectl.run("create", "-f", "-", f"--as={user}", stdin=json.dumps(body), check=False)


def patch_as(kubectl: Kubectl, user: str, task: str, spec: dict[str, object]) -> Run:
    return kubectl.run(
        "patch", "ht", task, "--type=merge", "-p", json.dumps({"spec": spec}), f"--as={user}",
        check=False,
    )  # fmt: skip


PARENT_REFUSED = "spec.parent is set by the harness alone, for a participant who may end the parent"


@pytest.mark.parametrize("user", ["mallory", "alice"])
def test_nobody_but_the_harness_names_a_parent_on_a_task_they_create(
    people: Kubectl, user: str
) -> None:
    """Not a stranger, and not alice either, though she may end the parent: a CEL rule cannot
    read the parent to check her role on it, so the harness (``/sub-task``, the gateway) does."""
    alices_task(people)

    refused = child_as(people, user, "alices")

    assert refused.returncode != 0
    assert PARENT_REFUSED in refused.stderr
    assert "start a sub-task with /sub-task" in refused.stderr
    assert [t["metadata"]["name"] for t in people.get_json("harnesstasks")["items"]] == ["alices"]


def test_the_gateway_may_create_a_child_for_the_participant_it_checked(people: Kubectl) -> None:
    alices_task(people)
    gateway = f"system:serviceaccount:{people.namespace}:{GATEWAY}"

    created = child_as(people, gateway, "alices")

    assert created.returncode == 0, created.stderr


@pytest.mark.parametrize("user", ["mallory", "bob"])
def test_a_stranger_or_a_watcher_may_not_change_a_tasks_spec(people: Kubectl, user: str) -> None:
    alices_task(people)
    before = people.get_json("ht", "alices")["spec"]

    refused = patch_as(people, user, "alices", {"participants": [{"id": user, "role": "assignee"}]})

    phrase = "a watcher" if user == "bob" else "not a participant"
    assert refused.returncode != 0
    assert (
        f"{user} is {phrase} and may not change who is on task alices (spec.participants): "
        "only its assignee, reporter or admin may; ask one of them" in refused.stderr
    )
    assert people.get_json("ht", "alices")["spec"] == before


def test_the_assignee_may_change_who_is_on_her_task(people: Kubectl) -> None:
    alices_task(people)
    participants = [
        {"id": "alice", "role": "assignee"},
        {"id": "bob", "role": "watcher"},
        {"id": "carol", "role": "watcher"},
    ]

    changed = patch_as(people, "alice", "alices", {"participants": participants})

    assert changed.returncode == 0, changed.stderr
    assert people.get_json("ht", "alices")["spec"]["participants"] == participants


def test_not_even_the_assignee_may_give_her_task_a_parent_later(people: Kubectl) -> None:
    alices_task(people)
    other = child_as(people, f"system:serviceaccount:{people.namespace}:{GATEWAY}", "alices")
    assert other.returncode == 0, other.stderr

    refused = patch_as(people, "alice", "alices", {"parent": {"taskId": "child-by-" + GATEWAY}})

    assert refused.returncode != 0
    assert PARENT_REFUSED in refused.stderr
    assert "parent" not in people.get_json("ht", "alices")["spec"]


@pytest.mark.parametrize("user", ["alice", "gateway"])
def test_nobody_but_the_operator_writes_a_turn_record(people: Kubectl, user: str) -> None:
    """A forged record would put words in the agent's mouth; the gateway writes none either."""
    alices_task(people)
    writer = f"system:serviceaccount:{people.namespace}:{GATEWAY}" if user == "gateway" else user
    record = {
        "apiVersion": API_VERSION,
        "kind": TURN_KIND,
        "metadata": {"name": "alices-forged-t1"},
        "spec": {"task": "alices", "turn": 1, "chunk": 0, "entries": []},
    }

    refused = people.run(
        "create", "-f", "-", f"--as={writer}", stdin=json.dumps(record), check=False
    )

    assert refused.returncode != 0
    assert "HarnessTurn records are the journal the operator keeps of each turn" in refused.stderr
    assert people.get_json("harnessturns")["items"] == []
