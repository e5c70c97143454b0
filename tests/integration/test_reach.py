"""What a task's model may do to other people, end to end (docs/design/agents.md, "Whom the
model may reach"): a prompt-injected model that names a stranger for
``create_task_for_participant`` is refused with a tool error it reads, no task is created, and
the stranger's ``ListTasks`` shows nothing; the task's spec.reach and the namespace's list
(``[operator] reach``) widen it. A tree of sub-tasks grows to ``max_sub_task_depth`` and no
further, whichever way a sub-task is made: the model's spawn, ``/sub-task``, the gateway's
child. Real control plane, operator, gateway (the a2a-sdk client) and scripted model."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import pytest
from a2a.utils.errors import A2AError, UnsupportedOperationError

from tests.conftest import ModelServer, OperatorProcess
from tests.eventually import NotYet, eventually_async
from tests.integration.gateway_support import Replicas, Users
from tests.integration.lifecycle_support import Tasks
from tests.integration.question_support import ASK_CAROL, QUESTION, asked

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

SECRET: Final = "The launch code is 0000."
#: What a model told to by someone else's words asks for: the conversation, put before mallory.
HAND_TO_MALLORY: Final[dict[str, Any]] = {
    "type": "tool_calls",
    "calls": [
        {
            "name": "create_task_for_participant",
            "arguments": {"participant": "mallory", "goal": f"For you: {SECRET}"},
        }
    ],
}


def inputs(request: Any) -> str:
    return json.dumps((request.body or {}).get("input", []))


async def task_names(tasks: Tasks) -> list[str]:
    return sorted(str(t["metadata"]["name"]) for t in await tasks.tasks.list())


async def test_the_model_cannot_put_the_conversation_before_a_stranger(
    gateway: Replicas, users: Users, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [HAND_TO_MALLORY, {"type": "text", "text": "I may not ask mallory."}]
    )
    operator()
    url = gateway().url
    await tasks.create("release")
    await tasks.send("release", f"Get the budget approved. {SECRET}")

    status = await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED", turn=1)

    assert status["message"] == "I may not ask mallory."
    refusal = (
        "Error: mallory is not a participant of this task; the model may create tasks only "
        "for its participants and the people its reach allows (alice, bob), and nothing was "
        "created. If mallory should be asked, a reporter or an admin of the task adds them to "
        "spec.reach"
    )
    [_, second] = await model_server.control.requests()
    assert json.dumps(refusal)[1:-1] in inputs(second)
    assert await task_names(tasks) == ["release"]
    assert not status.get("subTasks")
    mallory = await users(url, "mallory")
    assert list((await mallory.list()).tasks) == []


async def test_a_person_in_the_tasks_reach_is_asked(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([ASK_CAROL, {"type": "text", "text": "I asked carol."}])
    operator()
    await tasks.create("release", reach=["carol"])
    await tasks.send("release", "Get the budget approved.")

    await asked(tasks, "release")


async def test_a_person_in_the_namespaces_list_is_asked(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([ASK_CAROL, {"type": "text", "text": "I asked carol."}])
    operator(reach=["carol"])
    await tasks.create("release")
    await tasks.send("release", "Get the budget approved.")

    child = await asked(tasks, "release")
    assert (await tasks.status(child))["message"] == QUESTION


async def test_a_spawn_past_the_depth_bound_is_refused_to_the_model(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """At most one level: the root's sub-task is made, its own spawn is refused, and the
    sub-task's model reads why and does the work itself."""
    spawn = {"name": "spawn_subtask", "arguments": {"goal": "Count to three."}}
    deeper = {"name": "spawn_subtask", "arguments": {"goal": "Count deeper."}}
    in_child = "working on task lead-"
    await model_server.control.script(
        [
            {"type": "tool_calls", "calls": [spawn]},
            {"type": "tool_calls", "calls": [deeper], "when": in_child},
            {"type": "text", "text": "One, two, three.", "when": in_child},
        ]
    )
    operator(max_sub_task_depth=1)
    await tasks.create("lead")
    await tasks.send("lead", "Delegate the counting.")

    child = await eventually_one_child(tasks, "lead")
    done = await tasks.wait(child, "TASK_STATE_COMPLETED", within=60)

    assert done["message"] == "One, two, three."
    assert await tasks.children(child) == []
    refusal = (
        f"Error: the sub-task was not created: task {child} is 1 level below its root task, "
        "and sub-tasks go at most 1 level deep (operator.max_sub_task_depth); do this part of "
        "the work here"
    )
    said = [inputs(r) for r in await model_server.control.requests()]
    assert any(json.dumps(refusal)[1:-1] in text for text in said)


async def test_a_sub_task_command_past_the_depth_bound_is_refused_and_nothing_is_created(
    tasks: Tasks, operator: Operator
) -> None:
    operator(max_sub_task_depth=1)
    await tasks.create("lead")
    await tasks.send("lead", "/sub-task Plan the party.")
    child = await eventually_one_child(tasks, "lead")

    await tasks.send(child, "/sub-task Plan the cake.")

    said = await tasks.wait_agent_message(child, "refused:")
    assert said.text == (
        f"refused: task {child} is 1 level below its root task, and sub-tasks go at most 1 "
        "level deep (operator.max_sub_task_depth); no sub-task was created: go on in this task"
    )
    assert await tasks.children(child) == []


async def test_a_sub_task_attached_through_the_gateway_past_the_depth_bound_is_refused(
    gateway: Replicas, users: Users, tasks: Tasks
) -> None:
    """A chain eight deep (the default bound), made by hand; alice may end its last task,
    and still may not attach a ninth level to it."""
    await tasks.create("root")
    above = "root"
    for level in range(1, 9):
        await tasks.create_child(above, f"level-{level}", f"Level {level}.")
        above = f"level-{level}"
    before = await task_names(tasks)
    alice = await users(gateway().url, "alice")
    envelope = {"goal": "Go one deeper.", "parent": {"task_id": "level-8"}}

    with pytest.raises(A2AError) as refused:
        await alice.send("Attach it.", envelope=envelope)

    assert isinstance(refused.value, UnsupportedOperationError)
    assert (
        "parent: refused: task level-8 is 8 levels below its root task, and sub-tasks go at "
        "most 8 levels deep (operator.max_sub_task_depth); nothing was created: attach it "
        "higher up the tree, or start a task of its own"
    ) in str(refused.value)
    assert await task_names(tasks) == before


async def eventually_one_child(tasks: Tasks, parent: str) -> str:
    async def one() -> str | NotYet:
        found = await tasks.children(parent)
        return str(found[0]["metadata"]["name"]) if len(found) == 1 else NotYet(found)

    return await eventually_async(one, within=30, what=f"the sub-task of {parent}")
