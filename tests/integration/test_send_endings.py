"""Every way a send ends, one test per row of the table in ``docs/design/gateway.md`` ("How a
send ends"): an a2a-sdk client against a gateway with the chart's RBAC, the real operator, a
real control plane and the scripted model server. Rows already covered elsewhere name their
test in the table."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from a2a.types import Role, TaskState
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.integration.gateway_support import (
    PROTOCOLS,
    TRANSPORTS,
    GatewayProcess,
    Replicas,
    Users,
    cluster_objects,
    control_message,
    kubectl,
    said,
    states,
    task_id_of,
    text_message,
)
from tiny_harness.core.commands.builtins import BUILTIN_SPECS
from tiny_harness.core.reply_ids import command_reply_id, refusal_id

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]
TEAM = {"participants": [{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "watcher"}]}


def reply_text(events: list) -> tuple[str, str]:  # type: ignore[type-arg]
    """The last event's status message: (its id, its text)."""
    last = events[-1]
    status = last.status_update.status if last.HasField("status_update") else last.task.status
    return status.message.message_id, "".join(p.text for p in status.message.parts)


# -- the task ends ---------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_completion_ends_the_send_and_the_same_completion_again_answers_alike(
    transport: str, gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "On it."}])
    operator()
    alice = await users(gateway().url, "alice", transport=transport)
    task_id = task_id_of(await alice.send("Ship it."))
    completion = control_message(task_id)

    first = await asyncio.wait_for(alice.stream(completion), 20)
    again = await asyncio.wait_for(alice.stream(completion), 20)  # a retry: the same message id

    assert states(first)[-1] == "TASK_STATE_COMPLETED"
    assert states(again) == ["TASK_STATE_COMPLETED"]
    with pytest.raises(UnsupportedOperationError, match="terminal state"):
        await alice.complete(task_id)  # a new completion of an ended task


async def test_two_completions_at_once_both_end_with_the_task_completed(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    """The second identical control: both are written before the operator takes either (it
    is stopped meanwhile); it applies the first and acknowledges the second as already done,
    and both calls end."""
    await model_server.control.script([{"type": "text", "text": "On it."}])
    first = operator()
    alice = await users(gateway().url, "alice")
    task_id = task_id_of(await alice.send("Ship it."))
    first.stop()

    both = asyncio.gather(alice.complete(task_id), alice.complete(task_id))
    await eventually_async(lambda: _completions_pending(alice, task_id), within=20, what="both")
    operator(identity="operator-b")
    ended = await asyncio.wait_for(both, 20)

    assert [states(events)[-1] for events in ended] == ["TASK_STATE_COMPLETED"] * 2


async def _completions_pending(user: object, task_id: str) -> bool:
    task = await user.get(task_id)  # type: ignore[attr-defined]
    return len([m for m in task.history if m.role == Role.ROLE_USER]) == 3


async def test_a_model_error_ends_the_send_with_the_task_failed_and_the_fix_named(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "error", "status": 400, "message": "unknown parameter: temperature"}]
    )
    operator()
    alice = await users(gateway().url, "alice")

    events = await asyncio.wait_for(alice.send("Hi!"), 20)

    assert states(events)[-1] == "TASK_STATE_FAILED"
    assert "unknown parameter: temperature" in reply_text(events)[1]


async def test_a_cancel_by_another_participant_ends_a_send_that_waits_on_the_model(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "Hello."}, {"type": "text", "text": "Late.", "delay_seconds": 30}]
    )
    operator()
    url = gateway().url
    alice = await users(url, "alice")
    task_id = task_id_of(await alice.send("Hi!", envelope={"goal": "talk", **REPORTED}))
    carol = await users(url, "carol")

    waiting = asyncio.create_task(alice.send("Think hard.", task_id=task_id))
    await eventually_async(
        lambda: _working(alice, task_id), within=20, what="the turn to call the model"
    )
    await carol.cancel(task_id)
    events = await asyncio.wait_for(waiting, 20)

    assert states(events)[-1] == "TASK_STATE_CANCELED"
    assert reply_text(events)[1] == "cancelled by carol"


REPORTED = {
    "participants": [{"id": "alice", "role": "assignee"}, {"id": "carol", "role": "reporter"}]
}


async def _working(user: object, task_id: str) -> bool:
    task = await user.get(task_id)  # type: ignore[attr-defined]
    return bool(task.status.state == TaskState.TASK_STATE_WORKING)


# -- answered outside a turn -----------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "send"])
async def test_a_completion_refused_for_an_open_sub_task_ends_with_the_refusal(
    transport: str,
    streaming: bool,
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
) -> None:
    # The child works on its brief for a long while, so it is open when the completion comes.
    await model_server.control.script(
        [
            {"type": "text", "text": "Planning."},
            {"type": "text", "text": "Outline.", "delay_seconds": 30, "when": "Draft an outline"},
        ]
    )
    operator()
    alice = await users(gateway().url, "alice", transport=transport, streaming=streaming)
    task_id = task_id_of(await alice.send("Plan the release."))
    await asyncio.wait_for(alice.send("/sub-task Draft an outline", task_id=task_id), 20)
    completion = control_message(task_id)

    events = await asyncio.wait_for(alice.stream(completion), 20)

    message_id, text = reply_text(events)
    assert message_id == refusal_id(completion.message_id)
    assert "cannot complete while sub-task(s) are unresolved" in text
    assert states(events)[-1] == "TASK_STATE_INPUT_REQUIRED"
    # The notice is in the history under the same id (the child's news may start a turn of
    # the parent's afterwards, so it need not be the last thing said).
    task = await alice.get(task_id)
    assert message_id in [m.message_id for m in task.history if m.role == Role.ROLE_AGENT]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_command_refused_by_the_role_check_ends_with_its_reason_as_the_reply(
    transport: str, gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello."}])
    operator()
    url = gateway().url
    alice = await users(url, "alice")
    task_id = task_id_of(await alice.send("Hi!", envelope={"goal": "talk", **TEAM}))
    bob = await users(url, "bob", transport=transport)
    command = text_message("/effort high", task_id=task_id)

    events = await asyncio.wait_for(bob.stream(command), 20)

    message_id, text = reply_text(events)
    assert message_id == command_reply_id(command.message_id)
    assert "bob is a watcher and may not change the reasoning effort" in text
    assert states(events)[-1] == "TASK_STATE_INPUT_REQUIRED"


async def test_a_command_from_someone_with_no_role_is_refused_before_anything_is_written(
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
    kubectl: Kubectl,
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello."}])
    operator()
    url = gateway().url
    alice = await users(url, "alice")
    task_id = task_id_of(await alice.send("Hi!"))
    mallory = await users(url, "mallory")
    before = cluster_objects(kubectl)

    with pytest.raises(TaskNotFoundError):
        await asyncio.wait_for(mallory.send("/status", task_id=task_id), 20)

    assert cluster_objects(kubectl) == before


async def test_an_unknown_command_is_an_ordinary_message_and_the_turn_answers_it(
    gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "Hello."}, {"type": "text", "text": "No such command here."}]
    )
    operator()
    alice = await users(gateway().url, "alice")
    task_id = task_id_of(await alice.send("Hi!"))

    events = await asyncio.wait_for(alice.send("/frobnicate now", task_id=task_id), 20)

    assert reply_text(events)[1] == "No such command here."
    assert states(events)[-1] == "TASK_STATE_INPUT_REQUIRED"


# -- answered without a status event, or not at all ------------------------------------------


async def test_a_message_the_operator_refuses_without_a_status_change_ends_with_the_refusal(
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
    kubeconfig: Path,
    namespace: str,
) -> None:
    """The operator keeps a refusal out of the status; the send hears it from the journal at a
    quiet tick. Bob is taken off the task between the gateway's check and the operator's."""
    await model_server.control.script([{"type": "text", "text": "Hello."}])
    first = operator()
    url = gateway().url
    alice = await users(url, "alice")
    team = {
        "participants": [{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "reporter"}]
    }
    task_id = task_id_of(await alice.send("Hi!", envelope={"goal": "talk", **team}))
    first.stop()
    bob = await users(url, "bob")
    message = text_message("Can I still say something?", task_id=task_id)

    sending = asyncio.create_task(bob.stream(message))
    await eventually_async(
        lambda: _pending(alice, task_id, message.message_id), within=20, what="bob's message"
    )
    only_alice = {"spec": {"participants": [{"id": "alice", "role": "assignee"}]}}
    kubectl(
        kubeconfig,
        "-n",
        namespace,
        "patch",
        "ht",
        task_id,
        "--type=merge",
        "-p",
        json.dumps(only_alice),
    )
    operator(identity="operator-b")
    events = await asyncio.wait_for(sending, 30)

    message_id, text = reply_text(events)
    assert message_id == refusal_id(message.message_id)
    assert text == "refused: bob is not a participant of this task"


async def _pending(user: object, task_id: str, message_id: str) -> bool:
    task = await user.get(task_id)  # type: ignore[attr-defined]
    return any(m.message_id == message_id for m in task.history)


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "send"])
async def test_a_message_no_operator_takes_ends_with_a_note_and_is_answered_later(
    streaming: bool, gateway: Replicas, users: Users, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Sorry, I was away."}])
    replica: GatewayProcess = gateway(send_take_seconds=2)
    alice = await users(replica.url, "alice", streaming=streaming)
    message = text_message("Anyone there?")

    events = await asyncio.wait_for(alice.stream(message), 30)

    task_id = task_id_of(events)
    message_id, text = reply_text(events)
    assert message_id == f"waiting-{message.message_id}"
    assert "no operator has taken it" in text
    operator()
    answered = await eventually_async(
        lambda: _said(alice, task_id), within=30, what="the queued message's answer"
    )
    assert answered == [("user", "Anyone there?"), ("agent", "Sorry, I was away.")]


async def _said(user: object, task_id: str) -> list[tuple[str, str]] | None:
    task = await user.get(task_id)  # type: ignore[attr-defined]
    return said(task) if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED else None


# -- every command, over both transports and both protocol versions ---------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_every_command_answers_over_each_transport_and_protocol_version(
    protocol: str,
    transport: str,
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello."}])
    operator()
    alice = await users(gateway().url, "alice", transport=transport, protocol=protocol)
    task_id = task_id_of(await alice.send("Hi!"))
    commands = {
        "model": "/model scripted-large",
        "effort": "/effort low",
        "sub-task": "/sub-task Write the changelog",
        "status": "/status",
        "budget": "/budget",
    }
    assert set(commands) == {spec.name for spec in BUILTIN_SPECS}, "a command is untested"

    replies: dict[str, str] = {}
    for name, command in commands.items():
        message = text_message(command, task_id=task_id)
        events = await asyncio.wait_for(alice.stream(message), 20)
        message_id, text = reply_text(events)
        assert message_id == command_reply_id(message.message_id), name
        replies[name] = text

    assert "scripted-large" in replies["model"]
    assert "low" in replies["effort"]
    child = replies["sub-task"].rsplit(" ", 1)[-1]
    assert (await alice.get(child)).context_id == (await alice.get(task_id)).context_id
    assert child in replies["status"]
    assert replies["budget"].startswith("budget: none (no limit)\nused: 1 model call")
    # Commands never reach the model (the child may call it for its own goal meanwhile).
    bodies = [r.raw_body.decode() for r in await model_server.control.requests()]
    assert not [command for command in commands.values() if any(command in b for b in bodies)]
    assert alice.versions_sent == {protocol}
