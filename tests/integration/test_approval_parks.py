"""An approval decides exactly one call in exactly one park, end to end: the real operator, the
scripted model and the test MCP server counting what really ran.

Each test is a way around an approval that a participant (or a model, a proxy, a remote
agent) could take, and shows it closed: a sub-task's gated call waits for the deciders of the
tree above it; two calls the model gave one id are decided one by one, and the model is still
answered under its own ids; a decision answers only the park it names (one sent while the next
turn runs, one sent before its call exists, one after its deadline: each refused, nothing
run)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import NotYet, eventually_async
from tests.integration.lifecycle_support import Tasks
from tests.integration.test_approvals import AWAITING, PARKED, PEOPLE, answer_to, park, text
from tests.integration.toolserver_support import declare, inputs, tool_outputs, wait_ready
from tiny_harness.core.clock import now, parse
from tiny_harness.testing.mcp_server import McpServerThread

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


def calls(*called: tuple[str, dict[str, Any], str], **more: Any) -> dict[str, Any]:
    """A model answer asking for ``called`` (tool, arguments, the id the model gives it)."""
    return {
        "type": "tool_calls",
        "calls": [{"name": n, "arguments": a, "id": i} for n, a, i in called],
        **more,
    }


def weather(city: str, call_id: str) -> tuple[str, dict[str, Any], str]:
    return ("weather__weather", {"city": city}, call_id)


async def test_a_sub_tasks_gated_call_waits_for_the_deciders_of_its_parents_rule(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    """The parent's own rule gates weather for carol; its model spawns a child, whose model
    calls weather: the call waits in the child for carol, runs only once she approves."""
    operator()
    declare(kubectl, "weather", mcp.url)  # the server itself gates nothing
    wait_ready(kubectl, "weather")
    await model_server.control.script(
        [
            calls(("spawn_subtask", {"goal": "Check the weather in Oslo."}, "spawn-1")),
            {**text("Delegated."), "when": "Spawned sub-task"},
            calls(weather("Oslo", "call_child"), when="Check the weather in Oslo."),
            text("Sunny in Oslo, says the child."),
        ]
    )
    rule = {"tools": ["weather__weather"], "participants": ["carol"]}
    await tasks.create(
        "guarded-tree", toolServers=["weather"], participants=PEOPLE, approval=[rule]
    )
    await tasks.send("guarded-tree", "Delegate the weather.")

    async def child_name() -> str | NotYet:
        found = await tasks.children("guarded-tree")
        return str(found[0]["metadata"]["name"]) if found else NotYet("no child yet")

    child = await eventually_async(child_name, within=60, what="the spawned child")
    parked = await tasks.wait(child, PARKED, sub_state=AWAITING, within=60)
    (pending,) = parked["approvals"]
    assert (pending["callId"], pending["tool"]) == ("call_child", "weather__weather")
    assert pending["requirement"]["sources"] == [
        "the ancestor task guarded-tree's spec.approval[0]"
    ]
    assert mcp.served("weather") == []  # nothing ran before the tree's decider said yes

    alice = await tasks.decide(child, "call_child")
    assert await answer_to(tasks, child, alice) == (
        "refused: alice may not decide call 'call_child' (weather__weather); it is decided by carol"
    )
    assert mcp.served("weather") == []

    carol = await tasks.decide(child, "call_child", sender="carol")
    assert await answer_to(tasks, child, carol) == "weather__weather was approved by carol"
    await tasks.wait(child, "TASK_STATE_COMPLETED", within=60)
    assert [c.arguments for c in mcp.served("weather")] == [{"city": "Oslo"}]


async def test_two_calls_sharing_an_id_are_decided_one_by_one_and_answered_under_it(
    operator: Operator,
    kubectl: Kubectl,
    tasks: Tasks,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    """The model gives a harmless call and a dangerous one the same id. Each gets an id of
    its own; alice, who may approve the harmless one, approving it leaves the dangerous one
    waiting (and refuses hers on it); the model is answered under the id it gave."""
    operator()
    declare(kubectl, "weather", mcp.url, approval={})  # every tool: the assignee or an admin
    wait_ready(kubectl, "weather")
    await model_server.control.script(
        [
            calls(weather("Oslo", "dup"), ("weather__big", {"size": 3}, "dup")),
            text("One of two ran."),
        ]
    )
    carol_too = {"tools": ["weather__big"], "participants": ["carol"]}
    await tasks.create(
        "shared-id", toolServers=["weather"], participants=PEOPLE, approval=[carol_too]
    )
    await tasks.wait("shared-id", PARKED)
    await tasks.send("shared-id", "Weather, and something big.")
    status = await tasks.wait("shared-id", PARKED, sub_state=AWAITING, turn=1, within=60)

    shown = [(p["callId"], p["tool"], p.get("modelCallId")) for p in status["approvals"]]
    assert shown == [
        ("dup#1", "weather__weather", "dup"),
        ("dup#2", "weather__big", "dup"),
    ]
    harmless = await tasks.decide("shared-id", "dup#1")
    assert await answer_to(tasks, "shared-id", harmless) == "weather__weather was approved by alice"
    dangerous = await tasks.decide("shared-id", "dup#2")
    assert await answer_to(tasks, "shared-id", dangerous) == (
        "refused: alice may not decide call 'dup#2' (weather__big); it is decided by "
        "(assignees or admins) and (carol)"
    )
    status = await tasks.status("shared-id")
    assert status["subState"] == AWAITING  # the dangerous call still waits for its own
    assert "decision" not in status["approvals"][1]
    assert mcp.served("big") == []

    await tasks.decide("shared-id", "dup#2", "reject", sender="carol", reason="too big")
    await tasks.wait("shared-id", PARKED, turn=2, within=60)
    assert [c.arguments for c in mcp.served("weather")] == [{"city": "Oslo"}]
    assert mcp.served("big") == []
    last = (await model_server.control.requests())[-1]
    answered = [i["call_id"] for i in inputs(last) if i.get("type") == "function_call_output"]
    assert answered == ["dup", "dup"]  # the provider is answered with the ids it gave
    assert tool_outputs(last) == [
        "Sunny in Oslo.",
        "Not run: weather__big was rejected by carol: too big.",
    ]


async def test_a_decision_for_a_park_that_is_over_is_refused_and_not_applied_to_a_new_call(
    tasks: Tasks,
    model_server: ModelServer,
    operator: Operator,
    kubectl: Kubectl,
    mcp: McpServerThread,
) -> None:
    """Alice approves c1 (Oslo); while the next turn runs, carol approves c1 of that park too;
    the turn asks for a new c1 (Paris). Carol's decision names the park that is over: it is
    refused saying who decided it there and which park is open, and Paris waits for a
    decision of its own."""
    operator()
    declare(kubectl, "weather", mcp.url, approval={})
    wait_ready(kubectl, "weather")
    await model_server.control.script(
        [
            calls(weather("Oslo", "c1")),
            calls(weather("Paris", "c1"), delay_seconds=2, when="Sunny in Oslo."),
            text("Done."),
        ]
    )
    first = await park(tasks, "reused")
    old_park = first["approvals"][0].get("park", "")

    await tasks.decide("reused", "c1")

    async def next_turn() -> int | NotYet:
        turn = int((await tasks.status("reused")).get("turn", 0))
        return turn if turn >= 2 else NotYet(turn)

    await eventually_async(next_turn, within=60, what="the turn after the park to start")
    late = await tasks.decide("reused", "c1", sender="carol", park=old_park)

    second = await tasks.wait("reused", PARKED, sub_state=AWAITING, turn=2, within=60)
    (waiting,) = second["approvals"]
    new_park = waiting.get("park", "")
    told = await answer_to(tasks, "reused", late)
    assert told.startswith("refused: call 'c1' was already approved by alice at ")
    assert new_park != old_park
    assert told.endswith(
        f" in park {old_park!r}, which is over; the open park is {new_park!r} (waiting: c1)"
    )
    status = await tasks.status("reused")
    assert status["subState"] == AWAITING
    assert "decision" not in status["approvals"][0]
    assert [c.arguments for c in mcp.served("weather")] == [{"city": "Oslo"}]  # no Paris


async def test_a_decision_before_its_call_exists_or_naming_no_park_is_refused_never_kept(
    tasks: Tasks,
    model_server: ModelServer,
    operator: Operator,
    kubectl: Kubectl,
    mcp: McpServerThread,
) -> None:
    """Decisions sent before the call they name exists (while nothing waits; while the turn
    that will park it runs, naming its turn) are refused, not kept: when the call parks it
    still waits. One naming no park is refused saying which park is open."""
    operator()
    declare(kubectl, "weather", mcp.url, approval={})
    wait_ready(kubectl, "weather")
    await model_server.control.script(
        [calls(weather("Oslo", "early"), delay_seconds=2), text("Done.")]
    )
    await tasks.create("early", toolServers=["weather"], participants=PEOPLE)
    await tasks.wait("early", PARKED)

    nothing_waits = await tasks.decide("early", "early", park="1")
    assert await answer_to(tasks, "early", nothing_waits) == (
        "refused: no call 'early' waits for a decision on this task (none waits)"
    )
    await tasks.send("early", "Weather in Oslo?")

    async def turn_started() -> int | NotYet:
        turn = int((await tasks.status("early")).get("turn", 0))
        return turn if turn >= 1 else NotYet(turn)

    await eventually_async(turn_started, within=60, what="the turn to start")
    guessed = await tasks.decide("early", "early", park="1")
    status = await tasks.wait("early", PARKED, sub_state=AWAITING, turn=1, within=60)
    open_park = status["approvals"][0]["park"]
    assert open_park.startswith("1-")
    refused = (
        "refused: the decision on call 'early' {said}, and the open park is "
        f"{open_park!r} (waiting: early): a decision answers only the park it names; read the "
        "calls of the open park and decide them naming it"
    )
    assert await answer_to(tasks, "early", guessed) == refused.format(said="names park '1'")

    unnamed = await tasks.decide("early", "early", park=None)
    assert await answer_to(tasks, "early", unnamed) == refused.format(said="names no park")
    assert "decision" not in (await tasks.status("early"))["approvals"][0]
    assert mcp.served("weather") == []


async def test_a_decision_after_the_calls_deadline_is_refused_as_late(
    tasks: Tasks,
    model_server: ModelServer,
    operator: Operator,
    kubectl: Kubectl,
    mcp: McpServerThread,
) -> None:
    """The operator is away when the call's deadline passes; an approval written after it
    is refused as late when the operator takes it, and the timeout decides the call."""
    running = operator()
    declare(kubectl, "weather", mcp.url, approval={"timeoutSeconds": 3})
    wait_ready(kubectl, "weather")
    await model_server.control.script([calls(weather("Oslo", "slowpoke")), text("No answer.")])
    status = await park(tasks, "late")
    expires_at = status["approvals"][0]["expiresAt"]
    await asyncio.to_thread(running.stop)

    deadline = parse(expires_at)
    assert deadline is not None

    def passed() -> bool:
        return now() > deadline

    await eventually_async(passed, within=30, what="the call's deadline to pass")
    tardy = await tasks.decide("late", "slowpoke")
    operator(identity="operator-b")

    assert await answer_to(tasks, "late", tardy) == (
        f"refused: the decision on call 'slowpoke' (weather__weather) is late: its deadline "
        f"was {expires_at}, and its timeout decides it (reject)"
    )
    await tasks.wait("late", PARKED, turn=2, within=60)
    assert mcp.served("weather") == []
    (timed_out,) = tool_outputs((await model_server.control.requests())[-1])
    assert timed_out.startswith("Not run: weather__weather was rejected: no one decided in time")
