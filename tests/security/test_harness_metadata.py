"""Metadata that gives power is the harness's alone (the identity policy of
``kube/admission.py``, on the real API server): owner references (the garbage collector deletes
an object with its owner), finalizers, and every label and annotation under the harness's
prefix (the shard a task is worked in, whose a message is and what it carries for the quotas, a
task's context), and deletion (a task by its assignee, reporter or admin, a message by its
sender, a turn record by nobody). Tried with impersonation (``kubectl --as``): each user holds
RBAC to create, update, patch and delete tasks, messages and turn records, so only the policy
refuses. What the harness's own
participant-side tool writes as its user (``kubectl harness send``) still passes, and so does
an ordinary label of one's own.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Kubectl
from tests.eventually import eventually
from tiny_harness.cli.kubectl_session import Session
from tiny_harness.kube.client import HarnessTasks
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.names import (
    API_VERSION,
    BYTES_ANNOTATION,
    CONTEXT_ID_ANNOTATION,
    FIRST_MESSAGE_ANNOTATION,
    KIND,
    LIFECYCLE_ANNOTATION,
    MESSAGE_KIND,
    PARENT_LABEL,
    PREFIX,
    SENDER_LABEL,
    SHARD_LABEL,
    TASK_LABEL,
    TURN_KIND,
    TURN_LABEL,
)

pytestmark = pytest.mark.controlplane

Run = subprocess.CompletedProcess[str]

#: On alices: alice assignee, rita reporter, adam admin, bob watcher; mallory is on nothing.
ROLES = {"alice": "assignee", "rita": "reporter", "adam": "admin", "bob": "watcher"}
USERS = (*ROLES, "mallory")
GARBAGE_COLLECTOR = "system:serviceaccount:kube-system:generic-garbage-collector"
#: What alices carries of the harness's, as the harness would have written it.
ALICES_LABELS = {SHARD_LABEL: "0", SENDER_LABEL: "alice"}
ALICES_ANNOTATIONS = {CONTEXT_ID_ANNOTATION: "ctx-release"}


def task_body(name: str, participants: dict[str, str], **metadata: Any) -> str:
    return json.dumps(
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": name, **metadata},
            "spec": {
                "goal": "ship the release",
                "participants": [{"id": p, "role": r} for p, r in participants.items()],
            },
        }
    )


@pytest.fixture
def team(kubectl: Kubectl) -> Kubectl:
    """A Role to create, update, patch and delete tasks, messages and turn records, bound to
    the users and to the garbage collector's ServiceAccount; alice's task written by the
    administrator as the harness would (its shard, sender and context); then wait until the
    policy is enforced."""
    kubectl.run(
        "create", "role", "speak", "--verb=create,get,list,update,patch,delete",
        "--resource=harnessmessages,harnesstasks,harnessturns",
    )  # fmt: skip
    kubectl.run(
        "create", "rolebinding", "speak", "--role=speak",
        *(f"--user={u}" for u in (*USERS, GARBAGE_COLLECTOR)),
    )  # fmt: skip
    kubectl.run(
        "create", "-f", "-",
        stdin=task_body(
            "alices", ROLES, labels=ALICES_LABELS, annotations=ALICES_ANNOTATIONS
        ),
    )  # fmt: skip
    eventually(
        lambda: "written by mallory" in message_as(kubectl, "mallory", "alices", "alice").stderr,
        within=30,
        what="the identity policy to be enforced",
        interval=0.2,
    )
    return kubectl


def patch_as(kubectl: Kubectl, user: str, metadata: dict[str, Any], task: str = "alices") -> Run:
    args = ["patch", "ht", task, "--type=merge", "-p", json.dumps({"metadata": metadata})]
    return kubectl.run(*args, f"--as={user}", check=False)


def finalizers() -> dict[str, Any]:
    return {"finalizers": ["example.com/hold"]}


def a_foreign_owner() -> dict[str, Any]:
    """An owner reference to an object that does not exist: the garbage collector deletes what
    carries it."""
    return {
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": str(uuid.uuid4())}
        ]
    }


def trusted(obj: dict[str, Any]) -> dict[str, Any]:
    """What a reader of the object trusts in its metadata."""
    meta = obj["metadata"]
    return {
        "ownerReferences": meta.get("ownerReferences"),
        "finalizers": meta.get("finalizers"),
        "labels": {k: v for k, v in (meta.get("labels") or {}).items() if k.startswith(PREFIX)},
        "annotations": {
            k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith(PREFIX)
        },
    }


# -- the garbage collector, finalizers, the shard ---------------------------------------------


@pytest.mark.parametrize("user", ["mallory", "bob", "alice"])
def test_nobody_but_the_harness_hands_a_task_to_the_garbage_collector(
    team: Kubectl, user: str
) -> None:
    """A stranger, a watcher, the assignee herself: an owner reference is the harness's. The
    same patch by the administrator on a decoy shows the garbage collector has had its look."""
    before = team.get_json("ht", "alices")

    refused = patch_as(team, user, a_foreign_owner())

    assert refused.returncode != 0
    assert (
        "metadata.ownerReferences of harnesstasks alices are set by the harness alone (the "
        f"garbage collector deletes an object with its owner), and {user} may not change them"
        in refused.stderr
    )
    team.run("create", "-f", "-", stdin=task_body("decoy", {"alice": "assignee"}))
    team.run("patch", "ht", "decoy", "--type=merge", "-p",
             json.dumps({"metadata": a_foreign_owner()}))  # fmt: skip
    eventually(
        lambda: "decoy" not in names(team, "harnesstasks"),
        within=30,
        what="the garbage collector to delete the decoy",
    )
    after = team.get_json("ht", "alices")
    assert trusted(after) == trusted(before)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]


@pytest.mark.parametrize("user", ["mallory", "alice"])
def test_nobody_but_the_harness_adds_a_finalizer(team: Kubectl, user: str) -> None:
    refused = patch_as(team, user, finalizers())

    assert refused.returncode != 0
    assert (
        "metadata.finalizers of harnesstasks alices are written by the harness alone (a "
        f"finalizer keeps an object from being deleted), and {user} may not add, remove or "
        "change one" in refused.stderr
    )
    assert "finalizers" not in team.get_json("ht", "alices")["metadata"]


@pytest.mark.parametrize("shard", ["7", None], ids=["moved", "removed"])
def test_a_stranger_cannot_move_a_task_to_another_shard(team: Kubectl, shard: str | None) -> None:
    refused = patch_as(team, "mallory", {"labels": {SHARD_LABEL: shard}})

    assert refused.returncode != 0
    assert (
        f"the labels {SHARD_LABEL} of harnesstasks alices are written by the harness alone (it "
        "shards its work and counts quotas by them), and mallory may not change them"
        in refused.stderr
    )
    assert trusted(team.get_json("ht", "alices"))["labels"] == ALICES_LABELS


def test_a_watcher_cannot_change_a_tasks_context(team: Kubectl) -> None:
    refused = patch_as(team, "bob", {"annotations": {CONTEXT_ID_ANNOTATION: "ctx-bobs"}})

    assert refused.returncode != 0
    assert f"the annotations {CONTEXT_ID_ANNOTATION} of harnesstasks alices" in refused.stderr
    assert trusted(team.get_json("ht", "alices"))["annotations"] == ALICES_ANNOTATIONS


def test_a_label_of_ones_own_still_passes(team: Kubectl) -> None:
    changed = patch_as(team, "alice", {"labels": {"example.com/sprint": "42"}})

    assert changed.returncode == 0, changed.stderr
    labels = team.get_json("ht", "alices")["metadata"]["labels"]
    assert labels == {**ALICES_LABELS, "example.com/sprint": "42"}


def test_the_garbage_collector_may_still_remove_an_owner_reference(team: Kubectl) -> None:
    """It orphans dependents (``kubectl delete --cascade=orphan``) by removing their owner
    references, and removes its finalizers: the control plane is not checked."""
    owner = team.get_json("ht", "alices")["metadata"]
    owned = {"apiVersion": API_VERSION, "kind": KIND, "name": "alices", "uid": owner["uid"]}
    team.run("create", "-f", "-",
             stdin=task_body("owned", {"alice": "assignee"}, ownerReferences=[owned]))  # fmt: skip

    orphaned = patch_as(team, GARBAGE_COLLECTOR, {"ownerReferences": None}, "owned")

    assert orphaned.returncode == 0, orphaned.stderr
    assert "ownerReferences" not in team.get_json("ht", "owned")["metadata"]


# -- deletion ---------------------------------------------------------------------------------


@pytest.mark.parametrize("user", ["mallory", "bob"])
def test_a_stranger_or_a_watcher_cannot_delete_a_task(team: Kubectl, user: str) -> None:
    refused = team.run("delete", "ht", "alices", f"--as={user}", check=False)

    assert refused.returncode != 0
    assert (
        "task alices is deleted by its assignee, reporter or admin alone (its messages and turn "
        f"records go with it), and {user} is none of them" in refused.stderr
    )
    assert "alices" in names(team, "harnesstasks")


def test_the_reporter_may_delete_her_task(team: Kubectl) -> None:
    deleted = team.run("delete", "ht", "alices", "--as=rita", "--wait=false", check=False)

    assert deleted.returncode == 0, deleted.stderr
    eventually(lambda: "alices" not in names(team, "harnesstasks"), within=30, what="deleted")


def test_a_message_is_deleted_by_its_sender_alone(team: Kubectl) -> None:
    sent = message_as(team, "alice", "alices")
    assert sent.returncode == 0, sent.stderr
    (name,) = names(team, "harnessmessages")

    refused = team.run("delete", "hmsg", name, "--as=mallory", check=False)
    deleted = team.run("delete", "hmsg", name, "--as=alice", check=False)

    assert refused.returncode != 0
    assert f"message {name} was sent by alice, who alone deletes it" in refused.stderr
    assert deleted.returncode == 0, deleted.stderr


def test_nobody_but_the_harness_deletes_a_turn_record(team: Kubectl) -> None:
    record = {
        "apiVersion": API_VERSION,
        "kind": TURN_KIND,
        "metadata": {"name": "alices-t1"},
        "spec": {"task": "alices", "turn": 1, "chunk": 0, "entries": []},
    }
    team.run("create", "-f", "-", stdin=json.dumps(record))

    refused = team.run("delete", "hturn", "alices-t1", "--as=alice", check=False)

    assert refused.returncode != 0
    assert "may not delete one: they are deleted with their task" in refused.stderr
    assert names(team, "harnessturns") == ["alices-t1"]


# -- messages: what kubectl harness send writes, and nothing more ------------------------------


def names(kubectl: Kubectl, kind: str) -> list[str]:
    return [o["metadata"]["name"] for o in kubectl.get_json(kind)["items"]]


def message_as(
    kubectl: Kubectl, user: str, task: str, sender: str | None = None, **metadata: Any
) -> Run:
    """``user`` writes a message to ``task`` signed ``sender`` (themselves by default); one
    signed by someone else is only tried (``--dry-run=server``)."""
    name = f"m-{uuid.uuid4().hex[:8]}"
    body = {
        "apiVersion": API_VERSION,
        "kind": MESSAGE_KIND,
        "metadata": {"name": name, **metadata},
        "spec": {
            "task": task,
            "messageId": name,
            "sender": sender or user,
            "parts": [{"text": "hi"}],
        },
    }
    dry = ["--dry-run=server"] if sender not in (None, user) else []
    return kubectl.run(
        "create", "-f", "-", f"--as={user}", *dry, stdin=json.dumps(body), check=False
    )


def test_a_message_cannot_be_charged_to_someone_else(team: Kubectl) -> None:
    """mallory, on her own task, labels her message as alice's: alice's quota would count it."""
    team.run("create", "-f", "-", stdin=task_body("mallorys", {"mallory": "assignee"}))

    refused = message_as(team, "mallory", "mallorys", labels={SENDER_LABEL: "alice"})

    assert refused.returncode != 0
    assert (
        f"the labels {SENDER_LABEL} are written by the harness alone (it shards its work and "
        "counts quotas by them): remove them; a sender label may name only its writer, mallory"
        in refused.stderr
    )
    assert names(team, "harnessmessages") == []


def test_a_message_cannot_say_how_many_bytes_it_carries(team: Kubectl) -> None:
    """A size the writer chose would fill everyone's quota: the operator measures instead."""
    team.run("create", "-f", "-", stdin=task_body("mallorys", {"mallory": "assignee"}))

    refused = message_as(team, "mallory", "mallorys", annotations={BYTES_ANNOTATION: str(10**12)})

    assert refused.returncode != 0
    assert (
        f"the annotations {BYTES_ANNOTATION} are written by the harness alone (the bytes a "
        "message carries" in refused.stderr
    )
    assert "the operator measures a message itself" in refused.stderr
    assert names(team, "harnessmessages") == []


@pytest.mark.parametrize("owner", ["another task", "blocking"])
def test_a_message_may_be_owned_only_by_the_task_it_is_sent_to(team: Kubectl, owner: str) -> None:
    alices = team.get_json("ht", "alices")["metadata"]
    team.run("create", "-f", "-", stdin=task_body("mallorys", {"mallory": "assignee"}))
    mallorys = team.get_json("ht", "mallorys")["metadata"]
    reference: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    if owner == "another task":
        reference |= {"name": "alices", "uid": alices["uid"]}
    else:
        reference |= {"name": "mallorys", "uid": mallorys["uid"], "blockOwnerDeletion": True}

    refused = message_as(team, "mallory", "mallorys", ownerReferences=[reference])

    assert refused.returncode != 0
    assert (
        "metadata.ownerReferences are set by the harness alone (the garbage collector deletes "
        "an object with its owner): a task is created with none, and a message with at most "
        "one, to the HarnessTask its spec.task names" in refused.stderr
    )
    assert names(team, "harnessmessages") == []


@pytest.fixture
async def alice_api(cluster: Any) -> AsyncIterator[Any]:
    """An API client as alice herself (the administrator's credentials, impersonating her)."""
    from tiny_harness.kube.client import connect

    api = await connect(cluster.kubeconfig)
    api.set_default_header("Impersonate-User", "alice")
    yield api
    await api.close()


async def test_kubectl_harness_send_writes_what_the_policy_accepts(
    team: Kubectl, alice_api: Any
) -> None:
    """What ``kubectl harness send`` writes as alice: an owner reference to the task, the task
    and shard labels, her own sender label, no bytes (the operator measures them)."""
    session = Session(alice_api, team.namespace, "alice")
    task = await HarnessTasks(alice_api, team.namespace).get("alices")

    sent = await session.send_text(task, "Ship it on Friday.")

    stored = team.get_json("hmsg", sent.name)["metadata"]
    assert stored["ownerReferences"][0]["uid"] == task["metadata"]["uid"]
    assert trusted({"metadata": stored})["labels"] == {
        TASK_LABEL: "alices",
        SHARD_LABEL: "0",
        SENDER_LABEL: "alice",
    }
    assert BYTES_ANNOTATION not in (stored.get("annotations") or {})


# -- the property: no metadata patch by a participant changes what a reader trusts -------------

HARNESS_LABELS = (SHARD_LABEL, SENDER_LABEL, TASK_LABEL, TURN_LABEL, PARENT_LABEL, f"{PREFIX}/x")
HARNESS_ANNOTATIONS = (
    BYTES_ANNOTATION,
    CONTEXT_ID_ANNOTATION,
    LIFECYCLE_ANNOTATION,
    FIRST_MESSAGE_ANNOTATION,
    f"{PREFIX}/x",
)
OWN_LABELS = ("example.com/sprint", "team")
VALUES = st.sampled_from(["0", "7", "alice", "mallory", label_value("x" * 80), "1000000000000"])


@st.composite
def metadata_patches(draw: st.DrawFn) -> dict[str, Any]:
    """A merge patch of metadata: any mix of owner references, finalizers, the harness's
    labels and annotations (set or removed) and labels of one's own."""
    patch: dict[str, Any] = {}
    if draw(st.booleans()):
        patch["ownerReferences"] = draw(
            st.sampled_from([None, a_foreign_owner()["ownerReferences"]])
        )
    if draw(st.booleans()):
        patch["finalizers"] = draw(st.sampled_from([None, ["example.com/hold"]]))
    labels = draw(st.dictionaries(st.sampled_from(HARNESS_LABELS), st.none() | VALUES, max_size=2))
    labels |= draw(st.dictionaries(st.sampled_from(OWN_LABELS), st.none() | VALUES, max_size=2))
    annotations = draw(
        st.dictionaries(st.sampled_from(HARNESS_ANNOTATIONS), st.none() | VALUES, max_size=2)
    )
    if labels:
        patch["labels"] = labels
    if annotations:
        patch["annotations"] = annotations
    return patch


def merged(meta: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """``meta`` after a JSON merge patch of it (what the API server would store)."""
    out = dict(meta)
    for key, value in patch.items():
        if isinstance(value, dict):
            inner = dict(out.get(key) or {})
            for k, v in value.items():
                if v is None:
                    inner.pop(k, None)
                else:
                    inner[k] = v
            out[key] = inner or None
        else:
            out[key] = value
    return {k: v for k, v in out.items() if v not in (None, {}, [])}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(user=st.sampled_from(USERS), patch=metadata_patches())
def test_no_metadata_patch_by_a_participant_changes_what_a_reader_trusts(
    team: Kubectl, user: str, patch: dict[str, Any]
) -> None:
    """Whoever patches (stranger, watcher, assignee, reporter, admin of the task), a patch that
    would change the harness's metadata is refused whole, and one that changes only labels of
    one's own is taken."""
    before = team.get_json("ht", "alices")
    expected = merged(before["metadata"], patch)
    changes_trusted = trusted({"metadata": expected}) != trusted(before)

    result = patch_as(team, user, patch)

    after = team.get_json("ht", "alices")
    assert trusted(after) == trusted(before)
    if changes_trusted:
        assert result.returncode != 0, (user, patch)
        assert "harness alone" in result.stderr
        assert after["metadata"].get("labels") == before["metadata"].get("labels")
    else:
        assert result.returncode == 0, (user, patch, result.stderr)
        assert after["metadata"].get("labels") == expected.get("labels")
