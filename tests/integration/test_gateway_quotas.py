"""What one participant may store, held at the gateway: a message over the size every message is
held to, and a send or a new task past a quota, are refused before anything is written, over
JSON-RPC and HTTP+JSON, with an A2A error that names the bound, its setting and the count.

No operator runs: the sends return at once (``return_immediately``), so the tasks stay as the
gateway created them (live, with no status yet) and everything in the namespace is the gateway's.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import httpx
import pytest
from a2a.types import Message, Part, Role, SendMessageConfiguration, SendMessageRequest, Task
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError

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
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.kube.client import HarnessTasks
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import SENDER_LABEL

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
