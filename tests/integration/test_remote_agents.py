"""Sub-tasks on remote A2A agents, end to end: the harness under test (this test's namespace,
its operator) delegates to a second tiny-harness (another namespace of the same control plane,
with its own operator and gateway) and to a foreign agent built with the a2a-sdk's own server,
both declared as ``HarnessAgent`` objects. Real control plane, real processes, scripted model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.integration.kubectl_support import Harness
from tests.integration.lifecycle_support import Tasks
from tests.integration.remote_support import (
    CALLER,
    CHILD,
    PARENT,
    ForeignAgent,
    RemoteHarness,
    agent_manifest,
    declare,
    delegating,
    ready_condition,
    remote_state,
    spawn_on,
    start_delegating,
    the_child,
    wait_ready,
)
from tiny_harness.core.extensions import TASK_EXT_URI
from tiny_harness.core.secret_destinations import origin_of

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


@pytest.fixture
async def foreign() -> AsyncIterator[ForeignAgent]:
    agent = ForeignAgent()
    async with agent.running():
        yield agent


#: The remote task's model asks a question (the remote task parks awaiting its answer).
ASK_REGION: Final = {
    "type": "tool_calls",
    "calls": [{"name": "ask_participant", "arguments": {"question": "Which region?"}}],
}


def inputs(request: Any) -> str:
    return json.dumps((request.body or {}).get("input", []))


async def test_an_agents_card_is_read_into_its_status_and_the_model_is_offered_it(
    kubectl: Kubectl,
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    remote: RemoteHarness,
) -> None:
    operator()
    agent = await declare(
        kubectl, "market", remote.card_url, description="Knows the market.", skills=[]
    )

    status = agent["status"]
    assert status["name"] == "tiny-harness"
    assert status["url"] == f"{remote.gateway.url}/"
    assert (status["protocolBinding"], status["protocolVersion"]) == ("JSONRPC", "1.0")
    assert status["streaming"] is True
    assert TASK_EXT_URI in status["extensions"]
    assert ready_condition(agent)["reason"] == "CardRead"
    listed = kubectl.run("get", "harnessagents").stdout.split("\n")
    assert listed[0].split()[:3] == ["NAME", "READY", "AGENT"]
    assert listed[1].split()[:3] == ["market", "True", "tiny-harness"]

    await model_server.control.script([{"type": "text", "text": "Noted."}])
    await tasks.create("chat")
    await tasks.send("chat", "What can you hand work to?")
    await tasks.wait("chat", "TASK_STATE_INPUT_REQUIRED", turn=1)
    [request] = await model_server.control.requests()
    [spawn] = [t for t in request.body["tools"] if t["name"] == "spawn_subtask"]
    assert spawn["parameters"]["properties"]["agent"]["enum"] == ["market"]
    assert "- market (tiny-harness): An agent harness" in spawn["description"]
    assert "Knows the market." in spawn["description"]


async def test_a_parent_delegates_to_a_remote_harness_and_completes_after_reading_its_result(
    kubectl: Kubectl,
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    remote: RemoteHarness,
) -> None:
    await model_server.control.script(
        delegating(
            {"type": "text", "text": "The market grew 5%."},
            {"type": "text", "text": "Read it: 5% growth.", "when": "The market grew 5%"},
        )
    )
    operator()
    await start_delegating(kubectl, tasks, remote.card_url)

    child = await the_child(tasks, "research")
    name = child["metadata"]["name"]
    done = await tasks.wait(name, "TASK_STATE_COMPLETED", within=60)
    parent = await tasks.wait("research", "TASK_STATE_INPUT_REQUIRED", turn=2, within=60)

    assert child["spec"]["agent"] == "market"
    assert done["message"] == "The market grew 5%."
    [row] = parent["subTasks"]
    assert (row["taskId"], row["agent"], row["state"]) == (name, "market", "TASK_STATE_COMPLETED")
    assert parent["message"] == "Read it: 5% growth."
    said = [(m.role, m.text) for m in await tasks.transcript(name)]
    assert said == [("user", "Summarise the market"), ("agent", "The market grew 5%.")]
    # On the remote harness: one task, delegated by this one, and one message sent to it.
    [there] = remote.tasks()
    assert there["spec"]["parent"] == {"taskId": name, "agent": "tiny-harness"}
    assert there["status"]["state"] == "TASK_STATE_COMPLETED"
    assert there["status"]["lifecycle"] == "delegated"
    assert {"id": CALLER, "role": "assignee"} in there["spec"]["participants"]
    assert [m["spec"]["task"] for m in remote.messages()] == [there["metadata"]["name"]]
    last = (await model_server.control.requests())[-1]
    assert "The market grew 5%." in inputs(last)


async def test_a_remote_question_reaches_the_parent_and_the_parents_answer_goes_back(
    kubectl: Kubectl,
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    remote: RemoteHarness,
) -> None:
    child = CHILD
    await model_server.control.script(
        delegating(
            ASK_REGION,
            {
                "type": "tool_calls",
                "calls": [
                    {
                        "name": "reply_to_subtask",
                        "arguments": {"task_id": child, "text": "Europe."},
                    }
                ],
                "when": "Which region?",
            },
            {"type": "text", "text": "Answered it.", "when": "Sent to sub-task"},
            {"type": "text", "text": "Europe grew 3%.", "when": "Europe."},
            {"type": "text", "text": "Europe: 3%.", "when": "Europe grew 3%"},
        )
    )
    operator()
    await start_delegating(kubectl, tasks, remote.card_url)

    await the_child(tasks, "research")
    # The question and its answer may pass faster than a poll: the journal tells them.
    done = await tasks.wait(child, "TASK_STATE_COMPLETED", within=60)
    parent = await tasks.wait("research", "TASK_STATE_INPUT_REQUIRED", turn=3, within=60)

    assert done["message"] == "Europe grew 3%."
    assert parent["message"] == "Europe: 3%."
    said = [(m.role, m.text) for m in await tasks.transcript(child)]
    assert said == [
        ("user", "Summarise the market"),
        ("agent", "Which region?"),
        ("user", "Europe."),
        ("agent", "Europe grew 3%."),
    ]
    [there] = remote.tasks()
    assert there["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(remote.messages()) == 2  # the brief, then the parent's answer: each once
    questions = [r for r in await model_server.control.requests() if "Which region?" in inputs(r)]
    assert questions  # the question reached the parent's model


async def test_a_cancel_of_the_sub_task_reaches_the_remote_task(
    kubectl: Kubectl,
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    remote: RemoteHarness,
) -> None:
    await model_server.control.script(
        delegating({"type": "text", "text": "Too late.", "delay_seconds": 60})
    )
    operator()
    await start_delegating(kubectl, tasks, remote.card_url)
    await the_child(tasks, "research")

    async def remote_at_work() -> bool:
        found = await asyncio.to_thread(remote.tasks)
        # Not yet while there is no task, or it has no status yet (the operator writes it).
        return bool(found[0]["status"].get("runner"))

    await eventually_async(remote_at_work, within=30, what="the remote task to work on the brief")
    await tasks.control(CHILD, "cancel")

    cancelled = await tasks.wait(CHILD, "TASK_STATE_CANCELED")
    assert cancelled["message"] == "cancelled by alice"
    there = await remote_state(remote, "TASK_STATE_CANCELED")
    assert there["status"]["message"] == f"cancelled by {CALLER}"


async def test_a_cancel_that_cannot_reach_the_remote_agent_still_cancels_and_says_so(
    kubectl: Kubectl, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """The agent follows fine but cannot be reached to cancel (503, as from a proxy in front
    of an agent that has gone): the cancel is tried as the agent's spec allows, then the
    sub-task is cancelled here all the same, its message and a Warning Event saying so."""
    await model_server.control.script(
        [spawn_on("echo", "Please wait"), {"type": "text", "text": "Handed over."}]
    )
    async with ForeignAgent(unavailable_for=("CancelTask",)).running() as agent:
        operator()
        await declare(kubectl, "echo", agent.card_url, maxRetries=1)
        await tasks.create(PARENT)
        await tasks.send(PARENT, "Hand it over.")
        child = (await the_child(tasks, PARENT))["metadata"]["name"]
        await eventually_async(
            lambda: agent.executor.received == ["Please wait"],
            within=30,
            what="the agent to work on the brief",
        )

        await tasks.control(child, "cancel")

        cancelled = await tasks.wait(child, "TASK_STATE_CANCELED", within=60)
        assert cancelled["message"] == (
            "cancelled by alice (the remote task could not be cancelled: agent echo answered "
            "HTTP 503 (2 attempts))"
        ), cancelled["message"]
        [warning] = [
            e
            for e in kubectl.get_json("events")["items"]
            if e["involvedObject"].get("name") == child and e["reason"] == "RemoteCancelFailed"
        ]
        assert warning["type"] == "Warning"
        assert agent.executor.cancelled == []  # nobody could tell it


#: A parent that asks agent ``echo`` to say hello, then says what echo said.
ASK_ECHO: Final = [
    spawn_on("echo", "Say hello"),
    {"type": "text", "text": "Asked echo.", "when": "Spawned sub-task"},
    {"type": "text", "text": "Echo said hello.", "when": "echo: Say hello"},
]


async def greeted(tasks: Tasks) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run :data:`ASK_ECHO` on task ``greet``: its sub-task's status once COMPLETED, and the
    parent's once its second turn has read the result."""
    await tasks.create("greet")
    await tasks.send("greet", "Get a greeting.")
    child = (await the_child(tasks, "greet"))["metadata"]["name"]
    done = await tasks.wait(child, "TASK_STATE_COMPLETED", within=60)
    parent = await tasks.wait("greet", "TASK_STATE_INPUT_REQUIRED", turn=2, within=60)
    return done, parent


async def kept_as_artifact(harness: Harness, tasks: Tasks) -> None:
    """The agent's artifact (of :func:`greeted`'s sub-task) is the sub-task's own: in its
    index, and read whole by a participant of the parent with ``kubectl harness artifact``."""
    child = (await the_child(tasks, "greet"))["metadata"]["name"]
    [row] = (await tasks.status(child))["artifacts"]
    assert (row["name"], row["size"], len(row["chunks"])) == ("answer", 15, 1)
    written = await harness.run("artifact", child, "answer")
    assert written.returncode == 0, written.stderr
    assert written.stdout == "echo: Say hello"


async def test_a_foreign_a2a_agent_does_the_sub_task(
    kubectl: Kubectl,
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    foreign: ForeignAgent,
    harness: Harness,
) -> None:
    await model_server.control.script(ASK_ECHO)
    operator()
    agent = await declare(kubectl, "echo", foreign.card_url)
    assert agent["status"]["skills"] == [
        {"id": "echo", "name": "Echo", "description": "Says it back."}
    ]
    assert TASK_EXT_URI not in agent["status"].get("extensions", [])
    done, parent = await greeted(tasks)

    assert done["message"] == "echo: Say hello"
    assert parent["message"] == "Echo said hello."
    assert foreign.executor.received == ["Say hello"]
    await kept_as_artifact(harness, tasks)


# -- failures: each ends the sub-task FAILED with a reason that says what to look at ------------


async def spawned_and_failed(
    tasks: Tasks, model_server: ModelServer, agent: str, goal: str
) -> dict[str, Any]:
    await model_server.control.script(
        [
            spawn_on(agent, goal),
            {"type": "text", "text": "Handed over.", "when": "Spawned sub-task"},
        ]
    )
    await tasks.create("work")
    await tasks.send("work", "Hand it over.")
    child = (await the_child(tasks, "work"))["metadata"]["name"]
    failed = await tasks.wait(child, "TASK_STATE_FAILED", within=60)
    [error] = [c for c in failed["conditions"] if c["type"] == "Error"]
    return {**failed, "error": error}


async def test_an_agent_that_refuses_the_harnesss_credentials_fails_the_sub_task_at_once(
    kubectl: Kubectl, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    async with ForeignAgent(token="the-right-one").running() as guarded:
        kubectl.run("create", "secret", "generic", "echo-token", "--from-literal=token=wrong")
        kubectl.run(
            "annotate",
            "secret",
            "echo-token",
            f"tiny-harness.madarauchiha-314.github.io/agents=echo@{origin_of(guarded.card_url)}",
        )
        operator()
        await declare(
            kubectl,
            "echo",
            guarded.card_url,
            headers=[
                {
                    "name": "Authorization",
                    "valueFrom": {"secretKeyRef": {"name": "echo-token", "key": "token"}},
                }
            ],
        )
        failed = await spawned_and_failed(tasks, model_server, "echo", "Say hello")

    assert failed["error"]["reason"] == "RemoteUnauthorized"
    assert "refused the harness's credentials (HTTP 401)" in failed["message"]
    assert "harnessagent echo's spec.headers" in failed["message"]
    assert "wrong" not in json.dumps(failed)  # the credential is never shown
    assert guarded.executor.received == []


async def test_a_secret_that_does_not_name_the_agent_is_not_sent_and_the_agent_is_not_ready(
    kubectl: Kubectl, operator: Operator, foreign: ForeignAgent
) -> None:
    kubectl.run("create", "secret", "generic", "other-token", "--from-literal=token=t-1")
    operator()
    applied = kubectl.apply(
        agent_manifest(
            "echo",
            foreign.card_url,
            headers=[
                {
                    "name": "Authorization",
                    "valueFrom": {"secretKeyRef": {"name": "other-token", "key": "token"}},
                }
            ],
        )
    )
    assert applied.returncode == 0, applied.stderr

    agent = await wait_ready(lambda: kubectl.get_json("harnessagent", "echo"), status="False")

    condition = ready_condition(agent)
    assert condition["reason"] == "SecretNotAllowed"
    assert (
        f"add echo@{origin_of(foreign.card_url)} to its annotation "
        "tiny-harness.madarauchiha-314.github.io/agents" in condition["message"]
    )


async def test_an_agent_that_goes_away_fails_the_sub_task_after_bounded_retries(
    kubectl: Kubectl, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    async with ForeignAgent().running() as leaving:
        operator()
        await declare(kubectl, "echo", leaving.card_url, maxRetries=1)
    # Its card was read; now nothing answers at its address.

    failed = await spawned_and_failed(tasks, model_server, "echo", "Say hello")

    assert failed["error"]["reason"] == "RemoteUnavailable"
    assert "agent echo could not be reached" in failed["message"]
    assert "(2 attempts)" in failed["message"]


async def test_a_remote_task_that_never_answers_fails_the_sub_task_at_the_answer_timeout(
    kubectl: Kubectl,
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    foreign: ForeignAgent,
) -> None:
    operator()
    await declare(kubectl, "echo", foreign.card_url, answerTimeoutSeconds=3)

    failed = await spawned_and_failed(tasks, model_server, "echo", "Please wait")

    assert failed["error"]["reason"] == "RemoteNoAnswer"
    assert "showed no change for 3s" in failed["message"]
    assert "spec.answerTimeoutSeconds of harnessagent echo" in failed["message"]
    assert foreign.executor.received == ["Please wait"]


async def test_a_task_naming_an_agent_that_is_not_there_fails_saying_so(
    tasks: Tasks, operator: Operator
) -> None:
    operator()
    await tasks.create("parent")
    await tasks.create_child("parent", "parent-far", "Do it elsewhere.", agent="nowhere")

    failed = await tasks.wait("parent-far", "TASK_STATE_FAILED", within=30)

    assert "harnessagent 'nowhere'" in failed["message"]
    assert "there is no such HarnessAgent" in failed["message"]
    [error] = [c for c in failed["conditions"] if c["type"] == "Error"]
    assert error["reason"] == "RemoteAgentNotReady"


async def test_completing_the_sub_task_completes_the_remote_task(
    kubectl: Kubectl,
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    remote: RemoteHarness,
) -> None:
    child = CHILD
    await model_server.control.script(delegating(ASK_REGION))
    operator()
    await start_delegating(kubectl, tasks, remote.card_url)
    await the_child(tasks, "research")
    await tasks.wait(child, "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-answer")

    await tasks.control(child, "complete")

    done = await tasks.wait(child, "TASK_STATE_COMPLETED")
    assert done["message"] == "completed by alice"
    [there] = remote.tasks()
    assert there["status"]["state"] == "TASK_STATE_COMPLETED"
    assert there["status"]["message"] == f"completed by {CALLER}"


async def test_an_agent_that_does_not_stream_is_followed_by_polling(
    kubectl: Kubectl, tasks: Tasks, operator: Operator, model_server: ModelServer, harness: Harness
) -> None:
    async with ForeignAgent(streaming=False).running() as polled:
        await model_server.control.script(ASK_ECHO)
        operator()
        agent = await declare(kubectl, "echo", polled.card_url)
        assert agent["status"]["streaming"] is False
        done, _ = await greeted(tasks)

    assert done["message"] == "echo: Say hello"
    assert polled.executor.received == ["Say hello"]
    await kept_as_artifact(harness, tasks)
