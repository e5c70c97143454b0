"""Abuse of the A2A gateway, each refused before anything is written: after every refusal the
namespace holds exactly the tasks, messages and turn records it held before.

The tasks are set up with the admin's API (as the operator would have left them) and no operator
runs, so any change in the cluster could only have come from the gateway.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2AClientError
from a2a.types import Message, Part, Role
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from tests.conftest import Kubectl
from tests.integration.gateway_support import (
    JSONRPC,
    REST,
    TRANSPORTS,
    A2AUser,
    GatewayProcess,
    Replicas,
    Users,
    cluster_objects,
    control_message,
    text_message,
)
from tiny_harness.kube.client import HarnessTasks

pytestmark = pytest.mark.controlplane

A2A_HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def namespace(kubeconfig: Path) -> str:
    """One namespace for this module: every test makes its own tasks in it."""
    name = f"abuse-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", "create", "namespace", name],
        check=True,
        capture_output=True,
    )
    return name


@pytest.fixture(scope="module")
def replicas(
    kubeconfig: Path, namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Replicas]:
    started = Replicas(kubeconfig, namespace, tmp_path_factory.mktemp("gateways"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def gateway(replicas: Replicas) -> GatewayProcess:
    """The replica most tests use: a small body limit and a rate limit nobody here reaches."""
    return replicas(max_request_bytes=4096, rate_limit_per_minute=10_000)


@pytest.fixture
def kubectl(kubeconfig: Path, namespace: str) -> Kubectl:
    return Kubectl(kubeconfig, namespace)


@pytest.fixture
async def users() -> AsyncIterator[Users]:
    opened = Users()
    yield opened
    await opened.close()


@pytest.fixture
async def task(api: Any, namespace: str) -> str:
    """A conversation parked for the next message: alice its assignee, bob a watcher."""
    name = f"task-{uuid.uuid4().hex[:8]}"
    tasks = HarnessTasks(api, namespace)
    await tasks.create(
        name,
        {
            "goal": "Help.",
            "participants": [
                {"id": "alice", "role": "assignee"},
                {"id": "bob", "role": "watcher"},
            ],
        },
    )
    await tasks.patch_status(
        name,
        {
            "state": "TASK_STATE_INPUT_REQUIRED",
            "subState": "awaiting-next-message",
            "lifecycle": "conversation",
            "message": "What next?",
        },
    )
    return name


@pytest.fixture
async def ended(api: Any, namespace: str, task: str) -> str:
    await HarnessTasks(api, namespace).patch_status(
        task, {"state": "TASK_STATE_COMPLETED", "subState": None, "message": "completed by alice"}
    )
    return task


async def act(user: A2AUser, action: str, task: str) -> object:
    """Do ``action`` to ``task`` as ``user``: what each refusal below is made of."""
    if action == "get":
        return await user.get(task)
    if action == "send":
        return await user.send("Let me in.", task_id=task)
    if action == "complete":
        return await user.complete(task)
    if action == "cancel":
        return await user.cancel(task)
    return await anext(user.subscribe(task))


# -- identity and membership --------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("action", ["get", "send", "complete", "cancel", "subscribe"])
async def test_a_non_member_is_told_the_task_does_not_exist(
    transport: str, action: str, gateway: GatewayProcess, users: Users, kubectl: Kubectl, task: str
) -> None:
    mallory = await users(gateway.url, "mallory", transport=transport)
    before = cluster_objects(kubectl)

    with pytest.raises(TaskNotFoundError):
        await act(mallory, action, task)

    assert cluster_objects(kubectl) == before


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("action", ["complete", "cancel"])
async def test_a_watcher_may_not_complete_or_cancel_a_task(
    transport: str, action: str, gateway: GatewayProcess, users: Users, kubectl: Kubectl, task: str
) -> None:
    bob = await users(gateway.url, "bob", transport=transport)
    before = cluster_objects(kubectl)

    with pytest.raises(
        UnsupportedOperationError,
        match=f"bob is a watcher and may not {action} the task; ask its assignee",
    ):
        await act(bob, action, task)

    assert cluster_objects(kubectl) == before
    assert kubectl.get_json("ht", task)["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_a_call_that_names_no_participant_is_refused(
    gateway: GatewayProcess, kubectl: Kubectl, task: str
) -> None:
    before = cluster_objects(kubectl)
    async with httpx.AsyncClient() as http:
        anonymous = await http.get(f"{gateway.url}/rest/tasks/{task}", headers=A2A_HEADERS)
        too_long = await http.get(
            f"{gateway.url}/rest/tasks/{task}",
            headers={**A2A_HEADERS, "X-Participant-Id": "a" * 300},
        )

    assert anonymous.status_code == 401
    assert "X-Participant-Id" in anonymous.json()["error"]["message"]
    assert too_long.status_code == 401
    assert "1 to 253 printable characters" in too_long.json()["error"]["message"]
    assert cluster_objects(kubectl) == before


# -- envelopes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model", "gpt-expensive"),
        ("lifecycle", "delegated"),
        ("reasoning_effort", "high"),
        ("reasoningEffort", "high"),
    ],
)
async def test_a_first_message_whose_envelope_sets_a_server_controlled_field_creates_no_task(
    transport: str,
    field: str,
    value: str,
    gateway: GatewayProcess,
    users: Users,
    kubectl: Kubectl,
) -> None:
    alice = await users(gateway.url, "alice", transport=transport)
    before = cluster_objects(kubectl)

    with pytest.raises(UnsupportedOperationError, match="server-controlled field"):
        await alice.send("Use the big model.", envelope={"goal": "Do it.", field: value})

    assert cluster_objects(kubectl) == before


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_first_message_cannot_point_a_task_at_a_tool_server_url(
    transport: str, gateway: GatewayProcess, users: Users, kubectl: Kubectl
) -> None:
    alice = await users(gateway.url, "alice", transport=transport)
    before = cluster_objects(kubectl)

    with pytest.raises(InvalidParamsError, match="tool_servers"):
        await alice.send(
            "Use my server.",
            envelope={"goal": "Do it.", "tool_servers": ["http://attacker.example/mcp"]},
        )

    assert cluster_objects(kubectl) == before


async def test_a_task_envelope_on_an_existing_task_is_refused(
    gateway: GatewayProcess, users: Users, kubectl: Kubectl, task: str
) -> None:
    bob = await users(gateway.url, "bob")
    before = cluster_objects(kubectl)

    with pytest.raises(InvalidParamsError, match="only on a task's first message"):
        await bob.send(
            "Make me the assignee.",
            task_id=task,
            envelope={"goal": "Mine.", "participants": [{"id": "bob", "role": "assignee"}]},
        )

    assert cluster_objects(kubectl) == before


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("envelope", "problem"),
    [
        ({"kind": "control", "action": "delete"}, "unknown action 'delete'"),
        ({"kind": "control", "action": "complete", "force": True}, "unexpected field(s) force"),
        ({"kind": "control"}, "the field action is missing"),
        ({"kind": "takeover", "action": "complete"}, "unknown envelope kind 'takeover'"),
    ],
)
async def test_a_malformed_control_envelope_is_refused(
    transport: str,
    envelope: dict[str, Any],
    problem: str,
    gateway: GatewayProcess,
    users: Users,
    kubectl: Kubectl,
    task: str,
) -> None:
    alice = await users(gateway.url, "alice", transport=transport)
    before = cluster_objects(kubectl)

    with pytest.raises(InvalidParamsError, match="invalid event envelope") as refused:
        await alice.stream(control_message(task, envelope))

    assert problem in refused.value.message
    assert cluster_objects(kubectl) == before


@pytest.mark.parametrize(
    ("part", "problem"),
    [
        (
            Part(url="file:///etc/passwd", media_type="application/pdf"),
            "parts[0]: the file's URL must be an https (or http) URL with a host",
        ),
        (
            Part(url="http://169.254.169.254", media_type="image/png"),
            None,  # passed to the provider as it is, never fetched here: see below
        ),
        (Part(), "parts[0]: an empty part is not taken"),
    ],
)
async def test_a_malformed_file_part_is_refused_naming_it_and_a_url_is_never_fetched(
    gateway: GatewayProcess,
    users: Users,
    kubectl: Kubectl,
    task: str,
    part: Part,
    problem: str | None,
) -> None:
    alice = await users(gateway.url, "alice")
    message = Message(message_id=str(uuid.uuid4()), task_id=task, role=Role.ROLE_USER, parts=[part])
    before = cluster_objects(kubectl)

    if problem is None:
        # Taken as a URL for the model's provider to fetch: the harness itself never reaches it
        # (core/attachments.py), so a metadata address is no way into the cluster.
        await alice.stream(message)
        return
    with pytest.raises(InvalidParamsError) as refused:
        await alice.stream(message)

    assert problem in refused.value.message
    assert cluster_objects(kubectl) == before


# -- ended tasks --------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_ended_task_refuses_messages_completion_and_cancel_naming_its_state(
    transport: str, gateway: GatewayProcess, users: Users, kubectl: Kubectl, ended: str
) -> None:
    alice = await users(gateway.url, "alice", transport=transport)
    before = cluster_objects(kubectl)
    refusal = r"the task is in a terminal state \(TASK_STATE_COMPLETED\)"

    with pytest.raises(UnsupportedOperationError, match=refusal):
        await alice.send("One more thing.", task_id=ended)
    with pytest.raises(UnsupportedOperationError, match=refusal):
        await alice.complete(ended)
    with pytest.raises(TaskNotCancelableError, match=refusal):
        await alice.cancel(ended)
    with pytest.raises(UnsupportedOperationError, match=refusal):
        await anext(alice.subscribe(ended))

    assert cluster_objects(kubectl) == before


# -- the wire -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{this is not json", -32700),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}', -32600),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}]', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 7}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/delete", "params": {"id": "x"}}', -32601),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}', -32600),
    ],
    ids=[
        "not-json",
        "wrong-version",
        "batch",
        "bad-params",
        "no-message",
        "unknown",
        "v0.3-no-message",
    ],
)
async def test_malformed_json_rpc_and_unknown_methods_are_refused(
    body: bytes, code: int, gateway: GatewayProcess, kubectl: Kubectl
) -> None:
    before = cluster_objects(kubectl)
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            f"{gateway.url}/", content=body, headers={**A2A_HEADERS, "X-Participant-Id": "alice"}
        )

    assert answer.json()["error"]["code"] == code
    assert cluster_objects(kubectl) == before


async def test_a_malformed_rest_body_is_refused(gateway: GatewayProcess, kubectl: Kubectl) -> None:
    before = cluster_objects(kubectl)
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            f"{gateway.url}/rest/message:send",
            content=b'{"message": {"parts": "nope"',
            headers={**A2A_HEADERS, "X-Participant-Id": "alice"},
        )

    assert answer.status_code == 400
    assert cluster_objects(kubectl) == before


@pytest.mark.parametrize("transport", [JSONRPC, REST])
async def test_an_oversized_body_is_refused_with_413_before_anything_is_written(
    transport: str, gateway: GatewayProcess, users: Users, kubectl: Kubectl
) -> None:
    alice = await users(gateway.url, "alice", transport=transport)
    before = cluster_objects(kubectl)

    with pytest.raises(A2AClientError, match="413"):
        await alice.send("x" * 8192)
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            f"{gateway.url}/rest/message:send",
            content=text_message("x" * 8192).SerializeToString(),
            headers={**A2A_HEADERS, "X-Participant-Id": "alice"},
        )

    assert answer.status_code == 413
    assert "at most 4096 bytes (gateway.max_request_bytes)" in answer.json()["error"]["message"]
    assert cluster_objects(kubectl) == before


async def test_a_burst_past_the_rate_limit_is_refused_with_429_before_anything_is_written(
    replicas: Replicas, users: Users, kubectl: Kubectl
) -> None:
    limited = replicas(rate_limit_per_minute=5)
    alice = await users(limited.url, "alice", transport=REST)
    for _ in range(5):
        await alice.list()
    before = cluster_objects(kubectl)

    with pytest.raises(A2AClientError, match="429"):
        await alice.send("One too many.")
    async with httpx.AsyncClient() as http:
        answer = await http.get(
            f"{limited.url}/rest/tasks", headers={**A2A_HEADERS, "X-Participant-Id": "alice"}
        )
        other = await http.get(
            f"{limited.url}/rest/tasks", headers={**A2A_HEADERS, "X-Participant-Id": "bob"}
        )

    assert answer.status_code == 429
    assert int(answer.headers["Retry-After"]) >= 1
    assert "at most 5 requests per minute" in answer.json()["error"]["message"]
    assert other.status_code == 200
    assert cluster_objects(kubectl) == before


@pytest.mark.parametrize("status", ["TASK_STATE_BOGUS", "working", "999"])
async def test_a_list_filter_that_is_not_a_task_state_is_invalid_params_over_both_transports(
    status: str, gateway: GatewayProcess, task: str
) -> None:
    """The SDK's lenient parse would read an unknown state as no filter and list every task."""
    headers = {**A2A_HEADERS, "X-Participant-Id": "alice"}
    async with httpx.AsyncClient() as http:
        rpc = await http.post(
            f"{gateway.url}/",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "ListTasks",
                "params": {"status": status},
            },
            headers=headers,
        )
        rest = await http.get(
            f"{gateway.url}/rest/tasks", params={"status": status}, headers=headers
        )
        valid = await http.get(
            f"{gateway.url}/rest/tasks",
            params={"status": "TASK_STATE_INPUT_REQUIRED"},
            headers=headers,
        )

    expected = f"status: '{status}' is not a task state; use one of"
    assert rpc.json()["error"]["code"] == -32602
    assert rpc.json()["error"]["message"].startswith(expected)
    assert rest.status_code == 400
    assert rest.json()["error"]["message"].startswith(expected)
    assert valid.status_code == 200
    assert task in [t["id"] for t in valid.json()["tasks"]]


@pytest.mark.parametrize(
    "path",
    [
        "/rest/v1/tasks/none?historyLength=:",  # protocol 0.3: the SDK's adapter answered 500
        "/rest/tasks/none?historyLength=two",
        "/rest/tasks?pageSize=1e3",
    ],
)
async def test_a_numeric_query_parameter_that_is_not_a_number_is_a_400_naming_it(
    path: str, gateway: GatewayProcess
) -> None:
    async with httpx.AsyncClient() as http:
        answer = await http.get(
            f"{gateway.url}{path}", headers={**A2A_HEADERS, "X-Participant-Id": "alice"}
        )

    name, value = path.split("?")[1].split("=")
    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == f"{name}: {value!r} is not a whole number"
