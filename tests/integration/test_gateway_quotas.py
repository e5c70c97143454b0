"""What one participant may store, held at the gateway: a message over the size every message is
held to, and a send or a new task past a quota, are refused before anything is written, over
JSON-RPC and HTTP+JSON, with an A2A error that names the bound, its setting and the count.

No operator runs: the sends return at once (``return_immediately``), so the tasks stay as the
gateway created them (live, with no status yet) and everything in the namespace is the gateway's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from typing import Any

import httpx
import pytest
from a2a.types import Message, Part, Role, SendMessageConfiguration, SendMessageRequest, Task
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from kubernetes_asyncio import client

from tests.conftest import Kubectl
from tests.eventually import eventually_async
from tests.integration.gateway_support import (
    TRANSPORTS,
    A2AUser,
    Replicas,
    Users,
    cluster_objects,
    text_message,
)
from tiny_harness.a2a_gateway.namespace_feed import NamespaceFeed
from tiny_harness.a2a_gateway.quotas import Usage
from tiny_harness.a2a_gateway.tally import QuotaTally
from tiny_harness.cli.kubectl_session import Session
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.sizes import MESSAGE_BYTES
from tiny_harness.kube.client import HarnessTasks, connect
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import (
    API_VERSION,
    BYTES_ANNOTATION,
    GROUP,
    KIND,
    MESSAGE_KIND,
    SENDER_LABEL,
)

pytestmark = pytest.mark.controlplane

A2A_HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
KIB = 1024


async def post(user: A2AUser, message: Message) -> Task:
    """SendMessage, answered at once with the task as written (no operator takes it)."""
    request = SendMessageRequest(
        message=message, configuration=SendMessageConfiguration(return_immediately=True)
    )
    answers = [answer async for answer in user.client.send_message(request)]
    (answer,) = answers
    assert answer.HasField("task"), answer
    return answer.task


def two_parts(kib_each: int) -> Message:
    """A message of two text parts of ``kib_each`` KiB: each part within the size of a part,
    the whole over 256 KiB when ``kib_each`` is over 128."""
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text="a" * kib_each * KIB), Part(text="b" * kib_each * KIB)],
    )


async def rest_send(
    url: str, participant: str, message: dict[str, Any], method: str = "message:send"
) -> httpx.Response:
    """SendMessage (or ``message:stream``) over HTTP+JSON as any HTTP client sends it, to read
    the status."""
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(
            f"{url}/rest/{method}",
            json={"message": message, "configuration": {"returnImmediately": True}},
            headers={**A2A_HEADERS, "X-Participant-Id": participant},
        )


def raw_text(text: str, task_id: str = "") -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if task_id:
        message["taskId"] = task_id
    return message


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_message_over_256_kib_is_refused_with_the_limit_and_nothing_is_created(
    transport: str, gateway: Replicas, users: Users, kubectl: Kubectl
) -> None:
    replica = gateway()
    alice = await users(replica.url, "alice", transport=transport, streaming=False)
    task = await post(alice, text_message("A small start."))
    before = cluster_objects(kubectl)
    to_the_task = two_parts(150)
    to_the_task.task_id = task.id

    with pytest.raises(InvalidParamsError) as first:
        await post(alice, two_parts(150))
    with pytest.raises(InvalidParamsError) as later:
        await post(alice, to_the_task)

    for refused in (first, later):
        assert "the message carries 300 KiB" in refused.value.message
        assert "at most 256 KiB: split it into several messages, or send a link" in (
            refused.value.message
        )
    assert cluster_objects(kubectl) == before  # no task, no HarnessMessage


async def test_over_http_json_a_message_too_large_is_a_413_that_says_the_limit(
    gateway: Replicas, kubectl: Kubectl
) -> None:
    replica = gateway()
    big = raw_text("x" * 200 * KIB)
    big["parts"].append({"text": "y" * 100 * KIB})
    before = cluster_objects(kubectl)

    answer = await rest_send(replica.url, "alice", big)

    error = answer.json()["error"]
    assert (answer.status_code, error["code"], error["status"]) == (413, 413, "INVALID_ARGUMENT")
    assert error["details"][0]["reason"] == "INVALID_PARAMS"
    assert "a message may carry at most 256 KiB" in error["message"]
    assert cluster_objects(kubectl) == before


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_past_a_participants_message_quota_the_next_send_is_refused_and_others_still_send(
    transport: str, gateway: Replicas, users: Users, kubectl: Kubectl
) -> None:
    replica = gateway(max_messages_per_participant=3)
    alice = await users(replica.url, "alice", transport=transport, streaming=False)
    bob = await users(replica.url, "bob", transport=transport, streaming=False)
    task = await post(alice, text_message("One."))
    await post(alice, text_message("Two.", task_id=task.id))
    await post(alice, text_message("Three.", task_id=task.id))
    before = cluster_objects(kubectl)

    with pytest.raises(UnsupportedOperationError) as refused:
        await post(alice, text_message("Four.", task_id=task.id))
    with pytest.raises(UnsupportedOperationError):
        await post(alice, text_message("A new task, with a fourth message."))

    assert cluster_objects(kubectl) == before
    assert refused.value.message.startswith(
        "quota exceeded: alice keeps 3 messages stored, the most a participant may keep "
        "(gateway.max_messages_per_participant = 3); a task's messages are deleted with it"
    )
    assert refused.value.data == {
        "reason": "over_quota",
        "quota": "gateway.max_messages_per_participant",
        "limit": "3",
        "count": "3",
        "adding": "1",
        "scope": "participant",
    }
    # Another participant's quota is their own.
    theirs = await post(bob, text_message("Mine."))
    assert len(cluster_objects(kubectl)["harnessmessages"]) == 4
    assert theirs.id not in before["harnesstasks"]


async def test_over_http_json_a_quota_is_a_429_that_names_it(
    gateway: Replicas, users: Users, kubectl: Kubectl
) -> None:
    replica = gateway(max_messages_per_participant=1)
    alice = await users(replica.url, "alice", streaming=False)
    task = await post(alice, text_message("One."))
    before = cluster_objects(kubectl)

    unary = await rest_send(replica.url, "alice", raw_text("Two.", task.id))
    stream = await rest_send(replica.url, "alice", raw_text("Two.", task.id), "message:stream")

    for answer in (unary, stream):
        error = answer.json()["error"]
        assert (answer.status_code, error["code"], error["status"]) == (
            429,
            429,
            "RESOURCE_EXHAUSTED",
        )
        assert error["details"][0]["reason"] == "UNSUPPORTED_OPERATION"
        assert "(gateway.max_messages_per_participant = 1)" in error["message"]
        assert "alice keeps 1 message stored" in error["message"]
    assert cluster_objects(kubectl) == before


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_live_task_quota_refuses_a_new_task_until_one_ends(
    transport: str, gateway: Replicas, users: Users, kubectl: Kubectl, api: Any, namespace: str
) -> None:
    replica = gateway(max_live_tasks_per_participant=2)
    alice = await users(replica.url, "alice", transport=transport, streaming=False)
    first = await post(alice, text_message("First."))
    again = text_message("Second.")
    second = await post(alice, again)
    before = cluster_objects(kubectl)

    with pytest.raises(UnsupportedOperationError) as refused:
        await post(alice, text_message("Third."))
    # The same first message again creates nothing, so it is no new task: it is answered.
    retried = await post(alice, again)
    # A message to a live task is not a new task.
    await post(alice, text_message("More about the first.", task_id=first.id))

    assert refused.value.message == (
        "quota exceeded: alice has 2 live tasks, the most a participant may have "
        "(gateway.max_live_tasks_per_participant = 2); complete or cancel one of them before "
        "starting another"
    )
    assert retried.id == second.id
    after = cluster_objects(kubectl)
    assert after["harnesstasks"].keys() == before["harnesstasks"].keys()

    # Once a task has ended, there is room for another.
    await HarnessTasks(api, namespace).patch_status(
        first.id, {"state": "TASK_STATE_COMPLETED", "message": "completed by alice"}
    )

    async def third_task() -> Task | None:
        try:
            return await post(alice, text_message("Third, now."))
        except UnsupportedOperationError:
            return None  # not yet: the ended task is counted live until the watch says so

    await eventually_async(third_task, within=10, what="room for a third task")


async def test_messages_written_by_any_route_count_and_deleting_one_makes_room(
    gateway: Replicas, users: Users, api: Any, namespace: str
) -> None:
    """What the gateway did not write counts as its own (here a message ``kubectl harness``
    would write, there before the gateway starts: its listing finds it), and a message
    deleted (with its task, or here by hand) frees its place once the watch says so."""
    created = await HarnessTasks(api, namespace).create(
        "elsewhere", {"goal": "Help.", "participants": [{"id": "alice", "role": "assignee"}]}
    )
    messages = HarnessMessages(api, namespace)
    other = await messages.send(
        MessageSpec(
            task="elsewhere",
            message_id="by-kubectl-harness",
            sender="alice",
            parts=(MessagePart(text="One, from elsewhere."),),
        ),
        task=created,
    )
    replica = gateway(max_messages_per_participant=2)
    alice = await users(replica.url, "alice", streaming=False)

    await post(alice, text_message("Two.", task_id="elsewhere"))
    with pytest.raises(UnsupportedOperationError, match="alice keeps 2 messages stored"):
        await post(alice, text_message("Three?", task_id="elsewhere"))
    await messages.delete(other.name)

    async def taken() -> Task | None:
        try:
            return await post(alice, text_message("Three, now.", task_id="elsewhere"))
        except UnsupportedOperationError:
            return None  # not yet: the deletion is still on its way to the watch

    await eventually_async(taken, within=10, what="room once the message was deleted")


async def test_the_tally_follows_what_every_route_writes_and_deletes(
    api: Any, namespace: str
) -> None:
    """The tally itself against the API server: listed, then watched, each change of either
    collection reaches the counts (a message's metadata alone, a task's state)."""
    tally = QuotaTally(GatewaySettings(namespace=namespace))
    counting = asyncio.create_task(NamespaceFeed(namespace, tally, queue_bound=8).run(api))
    try:
        await tally.ready()
        tasks = HarnessTasks(api, namespace)
        created = await tasks.create(
            "counted",
            {"goal": "Help.", "participants": [{"id": "alice", "role": "assignee"}]},
            labels={SENDER_LABEL: label_value("alice")},
        )
        sent = await HarnessMessages(api, namespace).send(
            MessageSpec(
                task="counted",
                message_id="m",
                sender="alice",
                parts=(MessagePart(text="twelve bytes"),),
            ),
            task=created,
        )

        def usage(expected: Usage) -> bool | None:
            return True if tally.usage("alice")[0] == expected else None

        await eventually_async(
            lambda: usage(Usage(messages=1, message_bytes=12, live_tasks=1)),
            within=10,
            what="the message and the task counted",
        )
        await tasks.patch_status("counted", {"state": "TASK_STATE_CANCELED"})
        await HarnessMessages(api, namespace).delete(sent.name)
        await eventually_async(
            lambda: usage(Usage()), within=10, what="the deletion and the end counted"
        )
    finally:
        counting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await counting


# -- what the tally believes: only what the harness can prove ----------------------------------


def mallorys_task_and_rights(kubectl: Kubectl) -> None:
    """mallory's own task, and RBAC to write messages as any participant may."""
    kubectl.run(
        "create", "role", "speak", "--verb=create,get,list,patch",
        "--resource=harnessmessages,harnesstasks",
    )  # fmt: skip
    kubectl.run("create", "rolebinding", "speak", "--role=speak", "--user=mallory")
    task = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "mallorys"},
        "spec": {"goal": "Mine.", "participants": [{"id": "mallory", "role": "assignee"}]},
    }
    kubectl.run("create", "-f", "-", stdin=json.dumps(task))


@pytest.mark.parametrize("charged", ["alice", "everyone"])
async def test_one_message_written_by_hand_cannot_fill_anothers_quota(
    charged: str, gateway: Replicas, users: Users, kubectl: Kubectl
) -> None:
    """mallory writes one message about her own task, labelled as alice's (or as no one's)
    and annotated with a terabyte: the API server refuses it, and alice's next send is taken
    (the tally would have believed it, and refused alice, and then everyone, with a 429)."""
    mallorys_task_and_rights(kubectl)
    replica = gateway()
    alice = await users(replica.url, "alice", streaming=False)
    task = await post(alice, text_message("One."))
    labels = {SENDER_LABEL: "alice"} if charged == "alice" else {}
    forged = {
        "apiVersion": API_VERSION,
        "kind": MESSAGE_KIND,
        "metadata": {
            "name": "forged",
            "labels": labels,
            "annotations": {BYTES_ANNOTATION: str(10**12)},
        },
        "spec": {"task": "mallorys", "messageId": "forged", "sender": "mallory",
                 "parts": [{"text": "hi"}]},
    }  # fmt: skip

    refused = kubectl.run(
        "create", "-f", "-", "--as=mallory", stdin=json.dumps(forged), check=False
    )

    assert refused.returncode != 0
    assert "are written by the harness alone" in refused.stderr
    assert "forged" not in cluster_objects(kubectl)["harnessmessages"]
    sent = await post(alice, text_message("Two.", task_id=task.id))
    assert sent.id == task.id


async def test_a_message_sent_as_its_participant_counts_high_until_the_operator_measures_it(
    api: Any, cluster: Any, namespace: str, operator: Any
) -> None:
    """``kubectl harness send`` as alice writes no bytes annotation (only the harness may): the
    tally counts the message at the most a message carries, then at what the operator
    measured."""
    tally = QuotaTally(GatewaySettings(namespace=namespace))
    counting = asyncio.create_task(NamespaceFeed(namespace, tally, queue_bound=8).run(api))
    as_alice = await connect(cluster.kubeconfig)
    as_alice.set_default_header("Impersonate-User", "alice")
    try:
        await tally.ready()
        created = await HarnessTasks(api, namespace).create(
            "measured", {"goal": "Help.", "participants": [{"id": "alice", "role": "assignee"}]}
        )
        # alice may write messages in this namespace, as a participant's kubectl would.
        await grant_messages(api, namespace, "alice")
        sent = await Session(as_alice, namespace, "alice").send_text(created, "twelve bytes")

        def usage(expected: Usage) -> bool | None:
            return True if tally.usage("alice")[0] == expected else None

        await eventually_async(
            lambda: usage(Usage(messages=1, message_bytes=MESSAGE_BYTES)),
            within=10,
            what="the message counted at the most a message carries",
        )
        operator()
        await eventually_async(
            lambda: usage(Usage(messages=1, message_bytes=12)),
            within=30,
            what="the message counted at what the operator measured",
        )
        stored = await HarnessMessages(api, namespace).get(sent.name)
        assert stored is not None
        assert stored.annotations[BYTES_ANNOTATION] == "12"
    finally:
        counting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await counting
        await as_alice.close()


async def grant_messages(api: Any, namespace: str, user: str) -> None:
    """A Role to write and read messages and read tasks, bound to ``user``."""
    rbac = client.RbacAuthorizationV1Api(api)
    await rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "speak"},
            "rules": [
                {
                    "apiGroups": [GROUP],
                    "resources": ["harnessmessages", "harnesstasks"],
                    "verbs": ["create", "get", "list"],
                }
            ],
        },
    )
    await rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "speak"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "speak"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    )
