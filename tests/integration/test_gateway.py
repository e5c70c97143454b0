"""The A2A gateway end to end: an a2a-sdk client, over JSON-RPC and over HTTP+JSON, talking to
gateway processes that run with the chart's RBAC, the real operator, a real control plane and
the scripted model server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers.proto_helpers import new_data_part
from a2a.types import Message, Role, StreamResponse, TaskState
from a2a.utils.errors import TaskNotFoundError

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.integration.gateway_support import (
    JSONRPC,
    REST,
    TRANSPORTS,
    GatewayProcess,
    Replicas,
    Users,
    kubectl,
    parse_metrics,
    said,
    states,
    sub_state,
    task_id_of,
    text_message,
)
from tiny_harness.a2a_gateway.namespace_feed import NamespaceFeed
from tiny_harness.a2a_gateway.rendering import sub_task_rows
from tiny_harness.a2a_gateway.stream import TaskStreams
from tiny_harness.a2a_gateway.tally import QuotaTally
from tiny_harness.core.command_spec import commands_from_params
from tiny_harness.core.commands.builtins import BUILTIN_SPECS
from tiny_harness.core.extensions import (
    APPROVAL_EXT_URI,
    COMMANDS_EXT_URI,
    STATUS_EXT_KEY,
    STATUS_EXT_URI,
    TASK_EXT_KEY,
    TASK_EXT_URI,
)
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.kube.client import HarnessTasks
from tiny_harness.kube.watching import watch_client

pytestmark = pytest.mark.controlplane

Gateway = Callable[..., GatewayProcess]
Operator = Callable[..., OperatorProcess]


async def test_the_agent_card_lists_the_transports_streaming_and_three_optional_extensions(
    gateway: Replicas,
) -> None:
    replica = gateway()

    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{replica.url}/.well-known/agent-card.json")).json()
        schemas = {
            name: (await http.get(f"{replica.url}/a2a/ext/{name}.json")).json()
            for name in ("task", "status", "commands", "approval/v1")
        }

    assert card["name"] == "tiny-harness"
    assert card["description"]
    assert card["skills"]
    assert card["capabilities"]["streaming"] is True
    assert {(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]} == {
        (JSONRPC, "1.0"),
        (REST, "1.0"),
        (JSONRPC, "0.3"),
        (REST, "0.3"),
    }
    # What a 0.3 client reads from the same card.
    assert (card["protocolVersion"], card["preferredTransport"]) == ("0.3", "JSONRPC")
    assert card["url"] == f"{replica.url}/"
    extensions = {e["uri"]: e for e in card["capabilities"]["extensions"]}
    assert set(extensions) == {TASK_EXT_URI, STATUS_EXT_URI, COMMANDS_EXT_URI, APPROVAL_EXT_URI}
    for ext in extensions.values():
        assert ext.get("required", False) is False
        assert ext["description"]
    advertised = commands_from_params(extensions[COMMANDS_EXT_URI]["params"])
    assert advertised == BUILTIN_SPECS
    assert {c.argument_hint for c in advertised} >= {"[<model>]", "<description>"}
    assert schemas["task"]["$id"] == f"{TASK_EXT_URI}.json"
    assert schemas["status"]["$id"] == f"{STATUS_EXT_URI}.json"
    assert schemas["approval/v1"]["$id"] == f"{APPROVAL_EXT_URI}.json"
    assert extensions[APPROVAL_EXT_URI]["params"]["sub_state"] == "awaiting-approval"
    assert f"{replica.url}/a2a/ext/status.json" in extensions[STATUS_EXT_URI]["description"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_whole_conversation_through_the_gateway(
    transport: str,
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
    kubectl: Kubectl,
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "Hello Alice."}, {"type": "text", "text": "Two is 2."}]
    )
    operator()
    replica = gateway()
    alice = await users(replica.url, "alice", transport=transport)

    first = await alice.send("Hi!")
    task_id = task_id_of(first)

    assert states(first)[-2:] == ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]
    assert sub_state(first[-1]) == "awaiting-next-message"
    assert first[-1].status_update.status.message.parts[0].text == "Hello Alice."

    second = await alice.send("And two?", task_id=task_id)

    assert states(second) == [
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_WORKING",
        "TASK_STATE_INPUT_REQUIRED",
    ]
    assert sub_state(second[-1]) == "awaiting-next-message"

    done = await alice.complete(task_id)

    assert states(done)[-1] == "TASK_STATE_COMPLETED"
    assert done[-1].status_update.status.message.parts[0].text == "completed by alice"
    task = await alice.get(task_id)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert said(task) == [
        ("user", "Hi!"),
        ("agent", "Hello Alice."),
        ("user", "And two?"),
        ("agent", "Two is 2."),
        ("user", "/complete"),
    ]
    assert (await alice.get(task_id, history_length=2)).history[0].parts[0].text == "Two is 2."
    assert STATUS_EXT_KEY not in task.metadata
    assert dict(task.metadata[TASK_EXT_KEY]["participants"][0]) == {
        "id": "alice",
        "role": "assignee",
    }
    # kubectl shows the task the A2A client created, in the same state.
    rows = kubectl.run("get", "ht").stdout.splitlines()
    assert rows[1].split()[:2] == [task_id, "TASK_STATE_COMPLETED"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_data_part_reaches_the_model_as_its_json_under_its_media_type(
    transport: str, gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    """A message of one data part is the model's to read, as a line naming its media type and
    the JSON itself; the model answers it like any other message."""
    order = {"id": "A-1", "items": [{"sku": "x", "qty": 2, "gift": True}], "note": "für Ana"}
    await model_server.control.script(
        [{"type": "text", "text": "Hello Alice."}, {"type": "text", "text": "Order filed."}]
    )
    operator()
    alice = await users(gateway().url, "alice", transport=transport)
    task_id = task_id_of(await alice.send("Hi!"))
    message = Message(
        message_id=str(uuid.uuid4()),
        task_id=task_id,
        role=Role.ROLE_USER,
        parts=[new_data_part(order, media_type="application/vnd.acme.order+json")],
    )

    events = await alice.stream(message)

    assert events[-1].status_update.status.message.parts[0].text == "Order filed."
    last = (await model_server.control.requests())[-1]
    read = [item["content"] for item in last.body["input"] if item.get("role") == "user"]
    assert read == [
        "Hi!",
        "Data (application/vnd.acme.order+json):\n"
        '{"id": "A-1", "items": [{"gift": true, "qty": 2, "sku": "x"}], "note": "für Ana"}',
    ]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_reply_has_one_id_in_its_status_event_and_the_history_and_two_replies_two(
    transport: str, gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    """Two turns that both answer "Done.": a client that de-duplicates by message id must
    still see both, and each event's id must be the one the history holds."""
    await model_server.control.script(
        [{"type": "text", "text": "Done."}, {"type": "text", "text": "Done."}]
    )
    operator()
    alice = await users(gateway().url, "alice", transport=transport)

    first = await alice.send("Do one thing.")
    task_id = task_id_of(first)
    second = await alice.send("And another.", task_id=task_id)
    task = await alice.get(task_id)

    event_ids = [events[-1].status_update.status.message.message_id for events in (first, second)]
    history_ids = [m.message_id for m in task.history if m.role == Role.ROLE_AGENT]
    assert event_ids == history_ids
    assert len(set(event_ids)) == 2
    assert task.status.message.message_id == event_ids[1]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "send"])
async def test_a_command_answers_with_its_reply_as_the_status_message_and_the_call_ends(
    transport: str,
    streaming: bool,
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
) -> None:
    """A command changes no state, so a call that waited for a state change would never end:
    the reply is the status message (with the history entry's id), and there the call ends."""
    await model_server.control.script([{"type": "text", "text": "Hello Alice."}])
    operator()
    alice = await users(gateway().url, "alice", transport=transport, streaming=streaming)
    task_id = task_id_of(await alice.send("Hi!"))

    for command in ("/status", "/effort high", "/status"):
        message = text_message(command, task_id=task_id)
        events = await asyncio.wait_for(alice.stream(message), 20)

        last = events[-1]
        status = last.status_update.status if streaming else last.task.status
        assert status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert status.message.message_id == f"cmd-{message.message_id}"
        task = await alice.get(task_id)
        (reply,) = [m for m in task.history if m.message_id == status.message.message_id]
        assert reply.parts[0].text == status.message.parts[0].text
        assert reply.parts[0].text

    assert "effort: high" in (await alice.get(task_id)).history[-1].parts[0].text
    assert len(await model_server.control.requests()) == 1  # the commands never reached it


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "send"])
async def test_a_long_turns_model_calls_so_far_stream_by_and_the_send_ends_on_its_reply(
    streaming: bool, gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    """A turn that plans, then thinks for seconds: every renewal of its lease (each second
    here) carries the calls it has journaled, a subscriber sees the count, and the send still
    ends on the turn's reply, not on a renewal."""
    await model_server.control.script(
        [
            {"type": "text", "text": "Hello."},
            {
                "type": "tool_calls",
                "calls": [{"name": "create_plan", "arguments": {"steps": [{"name": "one"}]}}],
            },
            {"type": "text", "text": "Planned.", "delay_seconds": 3},
        ]
    )
    operator(lease_seconds=3)
    alice = await users(gateway().url, "alice", streaming=streaming)
    task_id = task_id_of(await alice.send("Hi."))
    watcher = await users(gateway().url, "alice")
    seen: list[tuple[str, int, int]] = []
    anchored = asyncio.Event()

    async def follow() -> None:
        async for event in watcher.subscribe(task_id):
            anchored.set()
            if event.HasField("status_update"):
                update = event.status_update
                extension = dict(update.metadata).get(TASK_EXT_KEY) or {}
                used = dict(extension).get("turn_usage") or {}
                before = dict(dict(extension).get("usage") or {})
                seen.append(
                    (
                        TaskState.Name(update.status.state),
                        int(dict(used).get("model_calls") or 0),
                        int(before.get("model_calls") or 0),
                    )
                )
                if update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
                    return

    following = asyncio.create_task(follow())
    await asyncio.wait_for(anchored.wait(), 20)
    events = await asyncio.wait_for(alice.send("Plan it.", task_id=task_id), 30)
    await asyncio.wait_for(following, 30)

    last = events[-1]
    status = last.status_update.status if streaming else last.task.status
    assert status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert status.message.parts[0].text == "Planned."
    # The planning call was journaled before the tool ran; renewals counted it while the
    # second call was still out; the park counts both in the task's usage, and none running.
    assert ("TASK_STATE_WORKING", 1, 1) in seen
    assert seen[-1] == ("TASK_STATE_INPUT_REQUIRED", 0, 3)


async def test_a_childs_progress_is_an_event_on_its_parents_stream_and_it_shares_the_context(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "Parent here."}, {"type": "text", "text": "Outline drafted."}]
    )
    operator()
    alice = await users(gateway().url, "alice")
    first = await alice.send("Plan the release.", context_id="release-ctx")
    parent = task_id_of(first)
    created = await asyncio.wait_for(alice.send("/sub-task Draft an outline", task_id=parent), 20)
    child = created[-1].status_update.status.message.parts[0].text.rsplit(" ", 1)[-1]

    assert (await alice.get(child)).context_id == "release-ctx"

    rows_seen: list[list[tuple[str, str]]] = []
    anchored = asyncio.Event()

    async def watch_parent() -> None:
        async for event in alice.subscribe(parent):
            # The task as read comes first; the watch runs from the version read, so nothing
            # after it is missed however late the watch opens.
            anchored.set()
            if event.HasField("status_update"):
                rows = sub_task_rows(event.status_update)
                rows_seen.append([(r["task_id"], r["state"]) for r in rows])
                if rows_seen[-1] == [(child, "TASK_STATE_INPUT_REQUIRED")] and len(rows_seen) > 1:
                    return

    watcher = asyncio.create_task(watch_parent())
    await asyncio.wait_for(anchored.wait(), 20)
    await alice.send("Go.", task_id=child)
    await asyncio.wait_for(watcher, 20)

    assert (child, "TASK_STATE_WORKING") in [row for rows in rows_seen for row in rows]
    assert rows_seen[-1] == [(child, "TASK_STATE_INPUT_REQUIRED")]
    parent_task = await alice.get(parent)
    assert parent_task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED


async def test_a_protocol_0_3_client_holds_a_conversation_beside_a_1_0_client(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    """JSON-RPC as 0.3 clients send it (``message/send``, kinds on every object, no
    ``A2A-Version`` header) against the same gateway a 1.0 client uses."""
    await model_server.control.script(
        [
            {"type": "text", "text": "Hello from 0.3."},
            {"type": "text", "text": "Two is 2."},
            {"type": "text", "text": "Hello from 1.0."},
        ]
    )
    operator()
    replica = gateway()

    async def send(http: httpx.AsyncClient, text: str, task_id: str | None) -> dict[str, Any]:
        message: dict[str, Any] = {
            "kind": "message",
            "messageId": f"m-{text}",
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
        }
        if task_id:
            message["taskId"] = task_id
        answer = await http.post(
            f"{replica.url}/",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {"message": message},
            },
            headers={"X-Participant-Id": "alice"},
            timeout=30,
        )
        body: dict[str, Any] = answer.json()
        assert "result" in body, body
        return body["result"]  # type: ignore[no-any-return]

    async with httpx.AsyncClient() as http:
        first = await send(http, "Hi!", None)
        second = await send(http, "And two?", first["id"])

    assert first["kind"] == "task"
    assert first["status"]["state"] == "input-required"
    assert second["status"]["state"] == "input-required"
    assert [(m["role"], m["parts"][0]["text"]) for m in second["history"]] == [
        ("user", "Hi!"),
        ("agent", "Hello from 0.3."),
        ("user", "And two?"),
        ("agent", "Two is 2."),
    ]
    alice = await users(replica.url, "alice")
    task = await alice.get(first["id"])
    assert said(task)[-1] == ("agent", "Two is 2.")
    newer = await alice.send("Hi from 1.0!")
    assert newer[-1].status_update.status.message.parts[0].text == "Hello from 1.0."


async def test_the_sub_state_is_in_the_task_metadata_while_the_task_is_parked(
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
) -> None:
    await model_server.control.script([{"type": "text", "text": "Noted."}])
    operator()
    alice = await users(gateway().url, "alice")

    task_id = task_id_of(await alice.send("Remember the milk."))
    task = await alice.get(task_id)

    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert json.loads(json.dumps(dict(task.metadata[STATUS_EXT_KEY]))) == {
        "sub_state": "awaiting-next-message"
    }


async def test_send_message_without_streaming_answers_with_the_parked_task_and_its_history(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello Alice."}])
    operator()
    alice = await users(gateway().url, "alice", transport=REST, streaming=False)

    (answer,) = await alice.send("Hi!")

    assert answer.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert said(answer.task) == [("user", "Hi!"), ("agent", "Hello Alice.")]


async def test_a_task_envelope_sets_the_goal_and_people_and_the_sender_joins_as_reporter(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer, kubectl: Kubectl
) -> None:
    await model_server.control.script([{"type": "text", "text": "On it."}])
    operator()
    url = gateway().url
    alice = await users(url, "alice")
    envelope = {
        "goal": "Plan the offsite.",
        "acceptance_criteria": ["A venue is booked."],
        "participants": [
            {"id": "carol", "role": "assignee"},
            {"id": "bob", "role": "watcher"},
        ],
    }

    task_id = task_id_of(await alice.send("Let's plan it.", envelope=envelope))

    spec = kubectl.get_json("ht", task_id)["spec"]
    assert spec["goal"] == "Plan the offsite."
    assert spec["acceptanceCriteria"] == ["A venue is booked."]
    assert spec["participants"] == [
        {"id": "carol", "role": "assignee"},
        {"id": "bob", "role": "watcher"},
        {"id": "alice", "role": "reporter"},
    ]
    bob = await users(url, "bob", transport=REST)
    assert (await bob.get(task_id)).id == task_id


async def test_list_tasks_shows_a_participant_only_the_tasks_they_are_on(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}]
    )
    operator()
    url = gateway().url
    alice = await users(url, "alice")
    dave = await users(url, "dave", transport=REST)
    mine = task_id_of(await alice.send("Task one."))
    theirs = task_id_of(await dave.send("Task two."))

    alice_sees = await alice.list()
    dave_sees = await dave.list(history_length=5)
    eve_sees = await (await users(url, "eve")).list()

    assert [t.id for t in alice_sees.tasks] == [mine]
    assert [t.id for t in dave_sees.tasks] == [theirs]
    assert said(dave_sees.tasks[0]) == [("user", "Task two."), ("agent", "Two.")]
    assert list(eve_sees.tasks) == []


async def test_subscribe_shows_the_current_state_then_every_change_and_ends_when_the_task_ends(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "Hello."}, {"type": "text", "text": "Again."}]
    )
    operator()
    url = gateway().url
    alice = await users(url, "alice")
    task_id = task_id_of(await alice.send("Hi!"))
    watcher = await users(url, "alice", transport=REST)
    seen: list[StreamResponse] = []

    async def follow() -> None:
        async for event in watcher.subscribe(task_id):
            seen.append(event)

    following = asyncio.create_task(follow())
    await eventually_async(lambda: seen, within=30, what="the subscription's first event")
    await alice.send("More?", task_id=task_id)
    await alice.complete(task_id)
    await asyncio.wait_for(following, timeout=30)

    assert states(seen) == [
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_WORKING",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_COMPLETED",
    ]
    assert said(seen[0].task) == [("user", "Hi!"), ("agent", "Hello.")]
    assert sub_state(seen[2]) == "awaiting-next-message"
    assert sub_state(seen[3]) is None


async def test_a_message_sent_through_one_replica_is_streamed_by_a_subscriber_on_another(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "From A."}, {"type": "text", "text": "Still A."}]
    )
    operator()
    first, second = gateway(), gateway()
    sender = await users(first.url, "alice")
    task_id = task_id_of(await sender.send("Hi through A."))
    subscriber = await users(second.url, "alice", transport=REST)
    seen: list[StreamResponse] = []

    async def follow() -> None:
        async for event in subscriber.subscribe(task_id):
            seen.append(event)

    following = asyncio.create_task(follow())
    await eventually_async(lambda: seen, within=30, what="the subscription on replica B")
    await sender.send("Again through A.", task_id=task_id)
    await eventually_async(lambda: seen[2:], within=30, what="replica B to stream the second turn")
    await sender.complete(task_id)
    await asyncio.wait_for(following, timeout=30)

    assert states(seen) == [
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_WORKING",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_COMPLETED",
    ]
    assert seen[2].status_update.status.message.parts[0].text == "Still A."


async def test_an_assignee_cancels_a_task(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer, kubectl: Kubectl
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello."}])
    operator()
    alice = await users(gateway().url, "alice", transport=REST)
    task_id = task_id_of(await alice.send("Hi!"))

    cancelled = await alice.cancel(task_id)

    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert cancelled.status.message.parts[0].text == "cancelled by alice"
    assert kubectl.get_json("ht", task_id)["status"]["state"] == "TASK_STATE_CANCELED"


async def test_a_retried_first_message_finds_the_task_it_created(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer, kubectl: Kubectl
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello."}])
    operator()
    alice = await users(gateway().url, "alice")
    message = text_message("Hi!")

    first = task_id_of(await alice.stream(message))
    again = await alice.stream(message)

    assert task_id_of(again) == first
    assert states(again) == ["TASK_STATE_INPUT_REQUIRED"]
    assert len(kubectl.get_json("ht")["items"]) == 1
    assert len(kubectl.get_json("hmsg")["items"]) == 1


async def test_with_token_review_the_kubernetes_user_is_the_participant(
    gateway: Replicas, users: Users, kubeconfig: Path, namespace: str, api: Any
) -> None:
    replica = gateway(participant_identity="tokenreview")
    account = f"system:serviceaccount:{namespace}:alice"
    await HarnessTasks(api, namespace).create(
        "alices-task", {"goal": "Check.", "participants": [{"id": account, "role": "assignee"}]}
    )
    kubectl(kubeconfig, "-n", namespace, "create", "serviceaccount", "alice")
    token = kubectl(kubeconfig, "-n", namespace, "create", "token", "alice").strip()

    alice = await users(replica.url, None, token=token)
    listed = await alice.list()

    assert [t.id for t in listed.tasks] == ["alices-task"]
    async with httpx.AsyncClient() as http:
        claimed = await http.post(
            f"{replica.url}/rest/tasks/alices-task:cancel",
            headers={"X-Participant-Id": account, "A2A-Version": "1.0"},
        )
        forged = await http.get(
            f"{replica.url}/rest/tasks/alices-task",
            headers={"Authorization": "Bearer not-a-token", "A2A-Version": "1.0"},
        )
    assert claimed.status_code == 401
    assert "Authorization: Bearer" in claimed.json()["error"]["message"]
    assert forged.status_code == 401
    assert "refused by Kubernetes" in forged.json()["error"]["message"]


async def test_metrics_count_requests_by_method_and_outcome_open_streams_and_latency(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello."}])
    operator()
    replica = gateway()
    alice = await users(replica.url, "alice")
    task_id = task_id_of(await alice.send("Hi!"))
    with pytest.raises(TaskNotFoundError):
        await alice.get("no-such-task")
    subscription = alice.subscribe(task_id)
    await anext(subscription)

    scraped = parse_metrics(replica.metrics())
    await subscription.aclose()

    assert scraped[("tiny_harness_gateway_requests_total", "SendStreamingMessage", "ok")] == 1
    assert scraped[("tiny_harness_gateway_requests_total", "GetTask", "task_not_found")] == 1
    assert scraped[("tiny_harness_gateway_open_streams", "SubscribeToTask", "")] == 1
    assert scraped[("tiny_harness_gateway_request_seconds_count", "GetTask", "")] == 1


async def test_a_resume_from_before_the_watch_history_is_the_task_as_it_is_and_says_so(
    api: Any, namespace: str
) -> None:
    """A client that resumes from a version etcd no longer keeps the history of (its event id
    is older than the API server's compaction) cannot be sent what it missed: it is sent the
    task as it is now, marked as a gap, rather than nothing or an error."""
    tasks = HarnessTasks(api, namespace)
    await tasks.create("old", {"goal": "Wait.", "participants": [{"id": "a", "role": "assignee"}]})
    await tasks.patch_status("old", {"state": "TASK_STATE_INPUT_REQUIRED"})
    watches = watch_client(api)
    feed = NamespaceFeed(namespace, QuotaTally(GatewaySettings(namespace=namespace)), queue_bound=8)
    following = asyncio.create_task(feed.run(watches))
    try:
        await feed.ready()
        held = feed.index.version("old")
        assert held is not None
        resumed = await TaskStreams(feed, watches).missed("old", since=1, held=held)
    finally:
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        await watches.close()

    assert resumed.gap
    assert [c.event.status.state for c in resumed.changes] == [TaskState.TASK_STATE_INPUT_REQUIRED]
