"""A person approves a tool call before it runs, end to end: a HarnessToolServer whose
``spec.approval`` gates a tool, the real operator parking the turn, decisions sent as
participants send them (the API, and an a2a-sdk client through the gateway), and the test MCP
server counting what really ran."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events.event_queue_v2 import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Part, TaskState, TaskStatus
from a2a.types import Task as A2ATask
from google.protobuf.json_format import MessageToDict

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import NotYet, eventually_async
from tests.integration.gateway_support import JSONRPC, REST, A2AUser, Replicas
from tests.integration.gateway_support import kubectl as remote_kubectl
from tests.integration.lifecycle_support import Tasks
from tests.integration.remote_support import (
    GOAL,
    ON_REMOTE,
    PARENT,
    ForeignAgent,
    RemoteHarness,
    delegating,
    spawn_on,
    the_child,
)
from tests.integration.remote_support import declare as declare_agent
from tests.integration.toolserver_support import declare, tool_outputs, wait_ready
from tiny_harness.core.control_envelope import control_message
from tiny_harness.core.extensions import KAGENT_HITL_EXT_URI
from tiny_harness.core.reply_ids import command_reply_id, refusal_id
from tiny_harness.kube.names import API_VERSION, TOOL_SERVER_KIND
from tiny_harness.testing.mcp_server import McpServerThread

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]
AWAITING = "awaiting-approval"
PARKED = "TASK_STATE_INPUT_REQUIRED"
PEOPLE = [
    {"id": "alice", "role": "assignee"},
    {"id": "bob", "role": "watcher"},
    {"id": "carol", "role": "admin"},
    {"id": "dave", "role": "reporter"},
]


def weather_call(city: str, call_id: str) -> dict[str, Any]:
    return {
        "type": "tool_calls",
        "calls": [{"name": "weather__weather", "arguments": {"city": city}, "id": call_id}],
    }


def text(reply: str) -> dict[str, Any]:
    return {"type": "text", "text": reply}


@pytest.fixture
def gated(operator: Operator, kubectl: Kubectl, mcp: McpServerThread) -> McpServerThread:
    """The operator, and the test MCP server as tool server ``weather`` whose ``weather``
    tool needs approval (and ``slow`` does not)."""
    operator()
    declare(kubectl, "weather", mcp.url, approval={"tools": ["weather"], "allowEdit": True})
    wait_ready(kubectl, "weather")
    return mcp


async def park(tasks: Tasks, name: str, ask: str = "Weather in Oslo?") -> dict[str, Any]:
    """A conversation on the gated server, sent ``ask``, parked awaiting approval."""
    await tasks.create(name, toolServers=["weather"], participants=PEOPLE)
    await tasks.wait(name, PARKED)
    await tasks.send(name, ask)
    return await tasks.wait(name, PARKED, sub_state=AWAITING, turn=1, within=60)


async def answer_to(tasks: Tasks, name: str, message_id: str) -> str:
    """The text that answers the decision ``message_id``: its reply, or its refusal."""
    ids = {command_reply_id(message_id), refusal_id(message_id)}

    async def answered() -> str | NotYet:
        found = [m for m in await tasks.transcript(name) if m.message_id in ids]
        return found[0].text if found else NotYet(ids)

    return await eventually_async(answered, within=30, what=f"the answer to {message_id}")


async def test_a_gated_call_waits_and_runs_once_when_approved(
    tasks: Tasks, model_server: ModelServer, gated: McpServerThread, kubectl: Kubectl
) -> None:
    await model_server.control.script(
        [weather_call("Oslo", "call_w1"), text("It is sunny in Oslo.")]
    )

    status = await park(tasks, "approve-me")

    (pending,) = status["approvals"]
    assert pending["callId"] == "call_w1"
    assert pending["tool"] == "weather__weather"
    assert pending["arguments"] == {"city": "Oslo"}
    assert "decision" not in pending
    assert "weather__weather (call call_w1)" in status["message"]
    assert gated.served("weather") == []  # nothing ran before a person said yes
    wide = kubectl.run("get", "ht", "approve-me", "-o", "wide").stdout
    assert AWAITING in wide

    decided = await tasks.decide("approve-me", "call_w1", reason="fine")
    assert await answer_to(tasks, "approve-me", decided) == (
        "weather__weather was approved by alice: fine"
    )
    done = await tasks.wait("approve-me", PARKED, turn=2, within=60)

    assert done["message"] == "It is sunny in Oslo."
    assert [c.arguments for c in gated.served("weather")] == [{"city": "Oslo"}]
    assert tool_outputs((await model_server.control.requests())[-1]) == ["Sunny in Oslo."]
    assert not done.get("approvals")


async def test_a_rejected_call_is_a_result_the_model_reads_and_never_runs(
    tasks: Tasks, model_server: ModelServer, gated: McpServerThread
) -> None:
    await model_server.control.script(
        [weather_call("Oslo", "call_r1"), text("I will not check the weather then.")]
    )
    await park(tasks, "reject-me")

    decided = await tasks.decide("reject-me", "call_r1", "reject", reason="not on prod")
    assert await answer_to(tasks, "reject-me", decided) == (
        "weather__weather was rejected by alice: not on prod"
    )
    await tasks.wait("reject-me", PARKED, turn=2, within=60)

    assert gated.served("weather") == []
    (rejected,) = tool_outputs((await model_server.control.requests())[-1])
    assert rejected == "Not run: weather__weather was rejected by alice: not on prod."


async def test_an_approval_may_edit_the_arguments_when_the_policy_allows(
    tasks: Tasks, model_server: ModelServer, gated: McpServerThread
) -> None:
    await model_server.control.script([weather_call("Oslo", "call_e1"), text("Sunny in Bergen.")])
    await park(tasks, "edit-me")

    await tasks.decide("edit-me", "call_e1", arguments={"city": "Bergen"})
    await tasks.wait("edit-me", PARKED, turn=2, within=60)

    assert [c.arguments for c in gated.served("weather")] == [{"city": "Bergen"}]


async def test_a_watcher_a_stranger_and_an_unnamed_role_are_refused_and_the_call_still_waits(
    tasks: Tasks, model_server: ModelServer, gated: McpServerThread
) -> None:
    await model_server.control.script([weather_call("Oslo", "call_x1"), text("Done.")])
    await park(tasks, "guarded")

    watcher = await tasks.decide("guarded", "call_x1", sender="bob")
    reporter = await tasks.decide("guarded", "call_x1", sender="dave")
    stranger = await tasks.decide("guarded", "call_x1", sender="mallory")
    missing = await tasks.decide("guarded", "call_nope")

    assert await answer_to(tasks, "guarded", watcher) == (
        "refused: bob is a watcher and may not decide call 'call_x1'"
    )
    assert await answer_to(tasks, "guarded", reporter) == (
        "refused: dave may not decide call 'call_x1' (weather__weather); it is decided by "
        "assignees or admins"
    )
    assert await answer_to(tasks, "guarded", stranger) == (
        "refused: mallory is not a participant of this task"
    )
    assert await answer_to(tasks, "guarded", missing) == (
        "refused: no call 'call_nope' waits for a decision on this task (waiting: call_x1)"
    )
    status = await tasks.status("guarded")
    assert status["subState"] == AWAITING
    assert "decision" not in status["approvals"][0]
    assert gated.served("weather") == []


async def test_the_same_decision_twice_changes_nothing_and_a_different_one_is_told_who_won(
    tasks: Tasks,
    model_server: ModelServer,
    operator: Operator,
    kubectl: Kubectl,
    mcp: McpServerThread,
) -> None:
    # Two calls, so the task keeps waiting after the first is decided.
    operator()
    declare(kubectl, "weather", mcp.url, approval={})
    wait_ready(kubectl, "weather")
    both = {
        "type": "tool_calls",
        "calls": [
            {"name": "weather__weather", "arguments": {"city": "Oslo"}, "id": "call_a"},
            {"name": "weather__weather", "arguments": {"city": "Rome"}, "id": "call_b"},
        ],
    }
    await model_server.control.script([both, text("Both checked.")])
    status = await park(tasks, "twice")
    assert [p["callId"] for p in status["approvals"]] == ["call_a", "call_b"]

    first = await tasks.decide("twice", "call_a")
    await answer_to(tasks, "twice", first)
    again = await tasks.decide("twice", "call_a")
    other = await tasks.decide("twice", "call_a", "reject", sender="carol")

    assert await answer_to(tasks, "twice", again) == "weather__weather was approved by alice"
    told = await answer_to(tasks, "twice", other)
    assert told.startswith("refused: call 'call_a' was already approved by alice at ")
    status = await tasks.status("twice")
    assert status["subState"] == AWAITING  # call_b still waits
    assert mcp.served("weather") == []

    await tasks.decide("twice", "call_b", "reject", sender="carol", reason="one is enough")
    await tasks.wait("twice", PARKED, turn=2, within=60)
    assert [c.arguments for c in mcp.served("weather")] == [{"city": "Oslo"}]


async def test_a_call_no_one_decides_is_rejected_at_its_timeout(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    operator()
    declare(kubectl, "weather", mcp.url, approval={"timeoutSeconds": 2})
    wait_ready(kubectl, "weather")
    await model_server.control.script([weather_call("Oslo", "call_t1"), text("No answer.")])
    await park(tasks, "ignored")

    await tasks.wait("ignored", PARKED, turn=2, within=60)

    assert mcp.served("weather") == []
    (timed_out,) = tool_outputs((await model_server.control.requests())[-1])
    assert timed_out == (
        "Not run: weather__weather was rejected: no one decided in time: not decided within "
        "2s (onTimeout: reject)."
    )


@pytest.mark.parametrize(
    ("transport", "protocol"),
    [(JSONRPC, "1.0"), (REST, "1.0"), (JSONRPC, "0.3"), (REST, "0.3")],
    ids=["jsonrpc-1.0", "rest-1.0", "jsonrpc-0.3", "rest-0.3"],
)
async def test_approve_reject_and_edit_through_the_gateway_over_a2a(
    tasks: Tasks,
    model_server: ModelServer,
    gated: McpServerThread,
    gateway: Replicas,
    transport: str,
    protocol: str,
) -> None:
    """Three calls wait; an a2a-sdk client sees them on the task and on the stream, approves
    one, rejects one with a reason and approves the third with edited arguments."""
    three = {
        "type": "tool_calls",
        "calls": [
            {"name": "weather__weather", "arguments": {"city": c}, "id": f"call_{c.lower()}"}
            for c in ("Oslo", "Rome", "Bergen")
        ],
    }
    await model_server.control.script([three, text("Two of three checked.")])
    await park(tasks, "over-a2a", "Weather in Oslo, Rome and Bergen?")
    alice = await A2AUser.connect(gateway().url, "alice", transport=transport, protocol=protocol)

    open_park = ""

    async def decide(action: str, call_id: str, **extra: Any) -> list[str]:
        envelope = control_message("over-a2a", action, call_id=call_id, park=open_park, **extra)
        events = await alice.stream(envelope)
        return [
            e.status_update.status.message.parts[0].text
            for e in events
            if e.HasField("status_update") and e.status_update.status.message.parts
        ]

    try:
        task = await alice.get("over-a2a")
        extension = MessageToDict(task.metadata)
        key = next(k for k in extension if k.endswith("/task"))
        open_park = extension[key]["approvals"][0]["park"]  # a decision names the park shown
        assert [(w["call_id"], w["tool"]) for w in extension[key]["approvals"]] == [
            ("call_oslo", "weather__weather"),
            ("call_rome", "weather__weather"),
            ("call_bergen", "weather__weather"),
        ]
        assert "weather__weather was approved by alice" in await decide("approve", "call_oslo")
        assert "weather__weather was rejected by alice: not Rome" in await decide(
            "reject", "call_rome", reason="not Rome"
        )
        edited = await decide("approve", "call_bergen", arguments={"city": "Paris"})
        assert "weather__weather was approved by alice with edited arguments" in edited
    finally:
        await alice.close()
    await tasks.wait("over-a2a", PARKED, turn=2, within=60)
    assert [c.arguments for c in gated.served("weather")] == [{"city": "Oslo"}, {"city": "Paris"}]
    outputs = tool_outputs((await model_server.control.requests())[-1])
    assert outputs[-3:] == [
        "Sunny in Oslo.",
        "Not run: weather__weather was rejected by alice: not Rome.",
        "Sunny in Paris.",
    ]


async def test_an_operator_killed_after_the_decision_runs_the_call_once_after_restart(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    first = operator(env={"TINY_HARNESS_FAILPOINT": "kill-after-decision:1"})
    declare(kubectl, "weather", mcp.url, approval={})
    wait_ready(kubectl, "weather")
    await model_server.control.script([weather_call("Oslo", "call_k1"), text("Sunny.")])
    await park(tasks, "killed")

    await tasks.decide("killed", "call_k1")
    assert await asyncio.to_thread(first.proc.wait, 30) == -9  # SIGKILL, at the failpoint
    status = await tasks.status("killed")
    assert status["approvals"][0]["decision"]["by"] == "alice"
    assert mcp.served("weather") == []

    operator(identity="operator-b")
    await tasks.wait("killed", PARKED, turn=2, within=60)
    assert [c.arguments for c in mcp.served("weather")] == [{"city": "Oslo"}]


ROUNDS = 50


async def test_two_deciders_racing_one_wins_and_the_other_is_told_every_time(
    tasks: Tasks, model_server: ModelServer, gated: McpServerThread
) -> None:
    """Alice approves and Carol rejects the same call at the same moment, 50 times: exactly
    one decision is recorded, the other decider reads who won, and the tool runs only when
    the approval won."""
    script: list[dict[str, Any]] = []
    for i in range(ROUNDS):
        script += [weather_call(f"city{i}", f"race_{i}"), text(f"round {i} done")]
    await model_server.control.script(script)
    await tasks.create("raced", toolServers=["weather"], participants=PEOPLE)
    await tasks.wait("raced", PARKED)
    approvals = 0
    for i in range(ROUNDS):
        await tasks.send("raced", f"Round {i}.")
        await tasks.wait("raced", PARKED, sub_state=AWAITING, turn=2 * i + 1, within=60)
        yes, no = await asyncio.gather(
            tasks.decide("raced", f"race_{i}", "approve", sender="alice"),
            tasks.decide("raced", f"race_{i}", "reject", sender="carol"),
        )
        said_yes, said_no = await asyncio.gather(
            answer_to(tasks, "raced", yes), answer_to(tasks, "raced", no)
        )
        won = [s for s in (said_yes, said_no) if not s.startswith("refused:")]
        told = [s for s in (said_yes, said_no) if s.startswith("refused:")]
        assert len(won) == 1, (said_yes, said_no)
        assert len(told) == 1, (said_yes, said_no)
        winner = "alice" if won[0] == said_yes else "carol"
        verb = "approved" if winner == "alice" else "rejected"
        assert told[0].startswith(f"refused: call 'race_{i}' was already {verb} by {winner}")
        approvals += winner == "alice"
        await tasks.wait("raced", PARKED, sub_state="awaiting-next-message", turn=2 * i + 2)
        ran = [c.arguments["city"] for c in gated.served("weather")]
        assert ran.count(f"city{i}") == (1 if winner == "alice" else 0)
    assert len(gated.served("weather")) == approvals


async def test_an_approval_racing_a_cancel_never_runs_the_call_after_the_cancel(
    tasks: Tasks, model_server: ModelServer, gated: McpServerThread
) -> None:
    """An approval and a cancel sent at the same moment, on 50 tasks at once: every task
    ends cancelled, every message is answered, a refused approval ran nothing, and no call
    runs twice (the idempotency key names the task and the turn)."""
    names = [f"cancel-race-{i}" for i in range(ROUNDS)]
    # Every model call asks for the gated call: which task's request takes which turn of the
    # script (and how many a loaded machine's retries take) does not matter.
    await model_server.control.script([weather_call("Oslo", "call_c")] * (4 * ROUNDS))
    parked = await asyncio.gather(*(park(tasks, name) for name in names))
    decisions = await asyncio.gather(
        *(
            asyncio.gather(
                tasks.decide(name, status["approvals"][0]["callId"]),
                tasks.control(name, "cancel"),
            )
            for name, status in zip(names, parked, strict=True)
        )
    )
    for name, (approve, _) in zip(names, decisions, strict=True):
        said = await answer_to(tasks, name, approve)
        ended = await tasks.wait(name, "TASK_STATE_CANCELED", within=60)
        assert ended["message"].startswith("cancelled by alice")
        ran = [c for c in gated.served("weather") if c.request_id.startswith(f"{name}/")]
        if said.startswith("refused:"):
            assert said == "refused: the task is in a terminal state (TASK_STATE_CANCELED)"
            assert ran == []
        else:
            assert said == "weather__weather was approved by alice"
            assert len(ran) <= 1  # the turn may have run it before the cancel cut it
    keys = [c.request_id for c in gated.served("weather")]
    assert len(keys) == len(set(keys))


async def test_a_sub_task_on_a_gated_remote_agent_waits_for_approval_then_is_created(
    kubectl: Kubectl,
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    remote: RemoteHarness,
) -> None:
    """One manifest change gates a remote agent: ``spec.approval`` on its HarnessAgent. The
    parent's spawn waits; nothing reaches the remote agent until the assignee approves."""
    await model_server.control.script(delegating({"type": "text", "text": "The market grew 5%."}))
    operator()
    await declare_agent(kubectl, "market", remote.card_url, approval={"timeoutSeconds": 600})
    await tasks.create(PARENT)
    await tasks.send(PARENT, "Research the market.")

    parked = await tasks.wait(PARENT, PARKED, sub_state=AWAITING, turn=1, within=60)
    (pending,) = parked["approvals"]
    assert pending["tool"] == "spawn_subtask"
    assert pending["arguments"] == {"goal": GOAL, "agent": "market"}
    assert pending["requirement"]["sources"] == ["HarnessAgent market"]
    assert await tasks.children(PARENT) == []
    assert await asyncio.to_thread(remote.tasks) == []  # nothing was sent to the agent

    await tasks.decide(PARENT, pending["callId"])
    child = await the_child(tasks, PARENT)
    done = await tasks.wait(child["metadata"]["name"], "TASK_STATE_COMPLETED", within=60)
    assert done["message"] == "The market grew 5%."


async def test_a_remote_task_s_approval_is_decided_here_and_relayed_back(
    tasks: Tasks,
    operator: Operator,
    kubectl: Kubectl,
    model_server: ModelServer,
    remote: RemoteHarness,
    mcp: McpServerThread,
) -> None:
    """The remote harness gates its tool; its task waits; the sub-task here shows the remote
    call as its own pending approval; Alice (a participant here, not there) approves it here;
    the operator relays the decision to the remote task, which runs the tool once."""
    server = {
        "apiVersion": API_VERSION,
        "kind": TOOL_SERVER_KIND,
        "metadata": {"name": "weather"},
        "spec": {"url": mcp.url, "default": True, "approval": {"tools": ["weather"]}},
    }
    remote_kubectl(
        remote.admin, "-n", remote.namespace, "apply", "-f", "-", stdin=json.dumps(server)
    )
    await model_server.control.script(
        [
            *delegating(
                {**weather_call("Oslo", "call_remote"), "when": ON_REMOTE},
                {"type": "text", "text": "Sunny, and the market grew.", "when": "Sunny in Oslo."},
            ),
            {"type": "text", "text": "Read it.", "when": "the market grew"},
        ]
    )
    operator()
    await declare_agent(kubectl, "market", remote.card_url)
    await tasks.create(PARENT)
    await tasks.send(PARENT, "Research the market.")

    child = (await the_child(tasks, PARENT))["metadata"]["name"]
    mirrored = await tasks.wait(child, PARKED, sub_state=AWAITING, within=90)
    (pending,) = mirrored["approvals"]
    assert (pending["callId"], pending["tool"]) == ("call_remote", "weather__weather")
    assert pending["arguments"] == {"city": "Oslo"}
    assert pending["requirement"]["sources"][-1].endswith("on agent market")
    assert mcp.served("weather") == []

    watcher = await tasks.decide(child, "call_remote", sender="bob")
    assert "is a watcher" in await answer_to(tasks, child, watcher)
    await tasks.decide(child, "call_remote", reason="go ahead")

    done = await tasks.wait(child, "TASK_STATE_COMPLETED", within=90)
    assert done["message"] == "Sunny, and the market grew."
    assert [c.arguments for c in mcp.served("weather")] == [{"city": "Oslo"}]
    relayed = [
        m["spec"] for m in await asyncio.to_thread(remote.messages) if "decision" in m["spec"]
    ]
    # The relayed decision names the park the call waits in on the remote task.
    assert [m["decision"].pop("park")[:2] for m in relayed] == ["1-"]
    assert [(m["sender"], m["decision"]) for m in relayed] == [
        (
            "harness-a",
            {
                "callId": "call_remote",
                "verdict": "approve",
                "reason": f"go ahead (decided by alice on {child})",
            },
        )
    ]


class KagentLike(AgentExecutor):
    """An agent that speaks kagent's hitl extension: a message asks for approval of one
    call (input-required, ``tool_approval_request`` in the status message); the response
    (``tool_approval_response``) runs it or not, and the task completes saying which."""

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None
        assert context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        message = context.message
        assert message is not None
        said = MessageToDict(message.metadata).get(KAGENT_HITL_EXT_URI)
        if context.current_task is None:
            await event_queue.enqueue_event(
                A2ATask(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[message],
                )
            )
        if said is None:
            ask = updater.new_agent_message(
                [Part(text="Approve deploy to prod?")],
                metadata={
                    KAGENT_HITL_EXT_URI: {
                        "type": "tool_approval_request",
                        "tools": [
                            {
                                "id": "conf-1",
                                "call_id": "k1",
                                "name": "deploy",
                                "args": {"env": "prod"},
                            }
                        ],
                    }
                },
            )
            ask.extensions.append(KAGENT_HITL_EXT_URI)
            await updater.update_status(TaskState.TASK_STATE_INPUT_REQUIRED, message=ask)
            return
        self.responses.append(said)
        (decision,) = said["approvals"]
        result = "deployed to prod" if decision["approved"] else "not deployed"
        await updater.add_artifact([Part(text=result)], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


async def test_a_kagent_agent_s_approval_request_is_decided_here_and_answered_in_its_shape(
    tasks: Tasks, operator: Operator, kubectl: Kubectl, model_server: ModelServer
) -> None:
    """A remote agent that speaks kagent's hitl extension: its ``tool_approval_request`` is
    this sub-task's pending approval, and the decision goes back as its
    ``tool_approval_response``, every call's in one message, the reason with it."""
    kagent = KagentLike()
    agent = ForeignAgent(executor=kagent, extensions=(KAGENT_HITL_EXT_URI,))
    async with agent.running():
        await model_server.control.script(
            [
                spawn_on("ops", "Deploy to prod"),
                {"type": "text", "text": "Delegated.", "when": "Spawned sub-task"},
            ]
        )
        operator()
        await declare_agent(kubectl, "ops", agent.card_url)
        await tasks.create(PARENT)
        await tasks.send(PARENT, "Ship it.")

        child = (await the_child(tasks, PARENT))["metadata"]["name"]
        parked = await tasks.wait(child, PARKED, sub_state=AWAITING, within=60)
        (pending,) = parked["approvals"]
        assert (pending["callId"], pending["tool"]) == ("conf-1", "deploy")
        assert pending["arguments"] == {"env": "prod"}
        assert pending["requirement"]["allowEdit"] is False  # kagent takes no edits

        await tasks.decide(child, "conf-1", "reject", reason="not today")
        done = await tasks.wait(child, "TASK_STATE_COMPLETED", within=60)

    assert "not deployed" in done["message"]
    (response,) = kagent.responses
    assert response == {
        "type": "tool_approval_response",
        "approvals": [
            {
                "id": "conf-1",
                "approved": False,
                "rejection_reason": f"not today (rejected by alice on {child})",
            }
        ],
    }
