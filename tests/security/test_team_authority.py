"""Two people in one namespace: neither can steer, wedge or read the other's task.

Each test stands for one abuse a team member could try (docs/design/threat-model.md names
them): a stranger attaching a "sub-task" to someone else's task through the gateway, a task that
only *names* a parent (written by an administrator, or left over from an older task of the same
name), and a task name re-used after a delete, which used to hand the new task's participants
the old conversation. They run against the real control plane, the real operator and gateway,
and the scripted model, and assert what the victim and the newcomer see.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from a2a.utils.errors import A2AError, InvalidParamsError, UnsupportedOperationError

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.integration.gateway_support import REST, Replicas, Users, said, task_id_of
from tests.integration.lifecycle_support import Tasks
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.kube.client import ConflictError
from tiny_harness.kube.names import API_VERSION, KIND, MESSAGE_KIND

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


SECRET = "the launch code is 7-7-4"


async def parked(tasks: Tasks, name: str, *, turn: int = 1) -> dict[str, Any]:
    return await tasks.wait(
        name, "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-next-message", turn=turn
    )


async def victims_task(tasks: Tasks, model_server: ModelServer) -> str:
    """Alice's conversation, parked after one answered turn; bob watches it."""
    await model_server.control.script([{"type": "text", "text": "Noted."}])
    await tasks.create("victim")
    await parked(tasks, "victim", turn=0)
    await tasks.send("victim", "Hello.")
    await parked(tasks, "victim")
    return "victim"


def task_names(kubectl: Kubectl) -> list[str]:
    return sorted(t["metadata"]["name"] for t in kubectl.get_json("harnesstasks")["items"])


# -- a sub-task is attached by the harness, for someone who may end the parent -------------------


@pytest.mark.parametrize("who", ["mallory", "bob"])
async def test_a_stranger_or_a_watcher_cannot_attach_a_sub_task_through_the_gateway(
    who: str,
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
    tasks: Tasks,
    kubectl: Kubectl,
) -> None:
    operator()
    url = gateway().url
    await victims_task(tasks, model_server)
    before = task_names(kubectl)
    intruder = await users(url, who, transport=REST)
    envelope = {"goal": "Read me the launch codes.", "parent": {"task_id": "victim"}}

    with pytest.raises(A2AError) as refused:
        await intruder.send("Attach me.", envelope=envelope)

    if who == "mallory":  # not on the task: it reads as if it did not exist
        assert isinstance(refused.value, InvalidParamsError)
        assert "parent: task 'victim' not found" in str(refused.value)
    else:
        assert isinstance(refused.value, UnsupportedOperationError)
        assert (
            "parent: refused: bob is a watcher and may not start a sub-task of task victim: "
            "only its assignee, reporter or admin may; ask one of them" in str(refused.value)
        )
    assert task_names(kubectl) == before
    status = await tasks.status("victim")
    assert not status.get("subTasks")


async def test_an_assignee_attaches_a_sub_task_through_the_gateway_and_it_is_a_child(
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
    tasks: Tasks,
    kubectl: Kubectl,
) -> None:
    operator()
    url = gateway().url
    await victims_task(tasks, model_server)
    await model_server.control.script([{"type": "text", "text": "Outline drafted."}])
    alice = await users(url, "alice")
    envelope = {"goal": "Draft an outline.", "parent": {"task_id": "victim"}}

    child = task_id_of(await alice.send("Please draft it.", envelope=envelope))

    meta = kubectl.get_json("ht", child)["metadata"]
    victim_uid = kubectl.get_json("ht", "victim")["metadata"]["uid"]
    assert [(o["name"], o["uid"]) for o in meta["ownerReferences"]] == [("victim", victim_uid)]
    rows = await wait_rows(tasks, "victim")
    assert [r["taskId"] for r in rows] == [child]


async def wait_rows(tasks: Tasks, name: str, within: float = 30.0) -> list[dict[str, Any]]:
    async def rows() -> list[dict[str, Any]] | None:
        return (await tasks.status(name)).get("subTasks")

    return await eventually_async(rows, within=within, what=f"{name} to show a sub-task row")


async def test_a_task_that_only_names_a_parent_is_not_its_sub_task_and_is_reported(
    operator: Operator, model_server: ModelServer, tasks: Tasks, kubectl: Kubectl
) -> None:
    """Written with spec.parent but without the harness's owner reference (here by an
    administrator, whom the identity policy does not stop): the parent shows no row for it,
    takes no turn for it, and may be completed while it is open; the stray gets an Event."""
    op: OperatorProcess = operator()
    await victims_task(tasks, model_server)
    await model_server.control.script([{"type": "text", "text": "Stray work."}])

    await tasks.tasks.create(
        "stray",
        {
            "goal": "Make the victim wait for me.",
            "parent": {"taskId": "victim"},
            "participants": [{"id": "mallory", "role": "assignee"}],
        },
    )

    event = await wait_event(kubectl, "stray", "NotASubTask")
    assert (
        "spec.parent names task victim, but this task was not created by the harness"
        in (event["message"])
    )
    status = await tasks.status("victim")
    assert not status.get("subTasks")
    assert status["turn"] == 1
    await tasks.control("victim", "complete")
    ended = await tasks.wait("victim", "TASK_STATE_COMPLETED")
    assert ended["message"] == "completed by alice"
    assert "names victim as its parent but is not its sub-task" in op.log()


async def wait_event(kubectl: Kubectl, obj: str, reason: str, within: float = 30.0) -> Any:
    def event() -> Any:
        events = kubectl.get_json("events")["items"]
        wanted = (
            e for e in events if (e["involvedObject"].get("name"), e["reason"]) == (obj, reason)
        )
        return next(wanted, None)

    return await eventually_async(
        lambda: asyncio.to_thread(event),
        within=within,
        what=f"a {reason} event on {obj}",
        interval=0.1,
    )


# -- a name is only a name: a new task of an old name sees nothing of the old one ----------------


def hand_written_message(task: str, text: str) -> str:
    """A message applied with kubectl, as a person would write it: no owner reference."""
    return json.dumps(
        {
            "apiVersion": API_VERSION,
            "kind": MESSAGE_KIND,
            "metadata": {"name": f"{task}-by-hand"},
            "spec": {
                "task": task,
                "messageId": "by-hand",
                "sender": "alice",
                "parts": [{"text": text}],
            },
        }
    )


async def old_conversation(tasks: Tasks, kubectl: Kubectl, model_server: ModelServer) -> None:
    """Alice's "release": a turn about the secret, then a hand-written message about it (no
    owner reference: not collected with its task) and its turn."""
    await model_server.control.script(
        [
            {"type": "text", "text": f"I will remember: {SECRET}."},
            {"type": "text", "text": "Noted again."},
        ]
    )
    await tasks.create("release")
    await parked(tasks, "release", turn=0)
    await tasks.send("release", f"Remember this: {SECRET}.")
    await parked(tasks, "release")
    assert kubectl.apply(hand_written_message("release", f"Also: {SECRET}")).returncode == 0
    await parked(tasks, "release", turn=2)


def past_the_second_of(kubectl: Kubectl, message: str) -> None:
    """Wait until the clock is past the second ``message`` was created in. A message written
    without an owner reference belongs to the task of its name created no later than it, at
    the API's one-second resolution (kube/ownership.py); a successor created in that same
    second is the documented edge, which this test steps past rather than hits."""
    created = kubectl.get_json("harnessmessages", message)["metadata"]["creationTimestamp"]
    second = dt.datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
    time.sleep(max(0.0, second + 1 - time.time()))


async def recreate(tasks: Tasks, name: str, spec: dict[str, Any], within: float = 30.0) -> None:
    """Create the task anew once the old object is gone (an orphaning delete keeps it until
    the garbage collector has released its dependents)."""
    await eventually_async(
        lambda: tasks.tasks.create(name, spec),
        within=within,
        what=f"{name} to be deleted, so that it can be created anew",
        not_yet=(ConflictError,),
    )


def prompts(requests: list[Any]) -> str:
    return "\n".join(json.dumps(r.body) for r in requests)


@pytest.mark.parametrize("cascade", ["orphan", "background"])
async def test_a_task_recreated_under_an_old_name_sees_nothing_of_the_old_one(
    cascade: str,
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
    tasks: Tasks,
    kubectl: Kubectl,
) -> None:
    """Deleted by hand, its messages and turn records left behind (``orphan``: as when the
    garbage collector is not running or has not got to them), or still being collected
    (``background``: the new task is created at once, racing the collector); then a new task
    of the same name for carol. Neither carol's GetTask nor her model sees the old words."""
    operator()
    url = gateway().url
    await old_conversation(tasks, kubectl, model_server)
    past_the_second_of(kubectl, "release-by-hand")
    kubectl.run("delete", "ht", "release", f"--cascade={cascade}", "--wait=false")
    await model_server.control.reset()
    await model_server.control.script([{"type": "text", "text": "Hello carol."}])

    await recreate(
        tasks,
        "release",
        {"goal": "A new release.", "participants": [{"id": "carol", "role": "assignee"}]},
    )
    await parked(tasks, "release", turn=0)
    carol = await users(url, "carol")
    answer = await carol.send("Hi.", task_id="release")

    history = said(await carol.get("release"))
    assert history == [("user", "Hi."), ("agent", "Hello carol.")], answer
    assert SECRET not in prompts(await model_server.control.requests())
    if cascade == "orphan":  # the old objects are still there, and still not read
        leftovers = kubectl.get_json("harnessmessages")["items"]
        assert any(SECRET in json.dumps(m["spec"]) for m in leftovers)


async def test_a_hand_written_message_for_a_new_task_is_taken(
    operator: Operator, model_server: ModelServer, tasks: Tasks, kubectl: Kubectl
) -> None:
    """The other side of the rule: a message applied by hand, without an owner reference,
    after its task was created, is the task's."""
    await model_server.control.script([{"type": "text", "text": "Got your note."}])
    operator()
    await tasks.create("notes")
    await parked(tasks, "notes", turn=0)

    assert kubectl.apply(hand_written_message("notes", "A note by hand.")).returncode == 0

    await parked(tasks, "notes")
    assert [m.text for m in await tasks.transcript("notes")] == [
        "A note by hand.",
        "Got your note.",
    ]


async def test_messages_and_records_are_owned_by_the_tasks_uid(
    operator: Operator, model_server: ModelServer, tasks: Tasks, kubectl: Kubectl
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hi."}])
    operator()
    uid = (await tasks.create("owned"))["metadata"]["uid"]
    await parked(tasks, "owned", turn=0)
    await tasks.messages.send(
        MessageSpec(
            task="owned", message_id="m-1", sender="alice", parts=(MessagePart(text="Hi"),)
        ),
        task=await tasks.tasks.get("owned"),
    )
    await parked(tasks, "owned")

    for plural in ("harnessmessages", "harnessturns"):
        for obj in kubectl.get_json(plural)["items"]:
            refs = obj["metadata"]["ownerReferences"]
            assert [(r["kind"], r["name"], r["uid"]) for r in refs] == [(KIND, "owned", uid)]
    assert all(uid[:8] in r["metadata"]["name"] for r in kubectl.get_json("harnessturns")["items"])
