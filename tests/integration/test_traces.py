"""One trace from an A2A send to its reply, across the gateway and operator processes, which
share nothing but the API server: the trace context rides in the ``HarnessMessage``'s
annotations. The processes export over OTLP/HTTP (the SDK's real exporter, configured by the
standard variables) to a collector in the test."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.integration.gateway_support import Replicas, Users, task_id_of
from tiny_harness.testing.otlp_collector import Collector, ReceivedSpan

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


@pytest.fixture
def collector() -> Iterator[Collector]:
    received = Collector()
    yield received
    received.close()


def one(spans: list[ReceivedSpan], what: str) -> ReceivedSpan:
    assert len(spans) == 1, f"expected one {what}, got {spans}"
    return spans[0]


async def test_a_send_and_a_command_are_each_one_trace_from_request_to_reply(
    gateway: Replicas,
    users: Users,
    operator: Operator,
    model_server: ModelServer,
    collector: Collector,
) -> None:
    spawn = {"name": "spawn_subtask", "arguments": {"goal": "Count to three."}}
    # The first call spawns; every later one (the parent's, the child's) gets the default reply.
    await model_server.control.script([{"type": "tool_calls", "calls": [spawn]}])
    operator(env=collector.env())
    alice = await users(gateway(env=collector.env()).url, "alice")

    task_id = task_id_of(await asyncio.wait_for(alice.send("Count, please."), 30))
    await asyncio.wait_for(alice.send("/status", task_id=task_id), 30)

    def first_turn() -> ReceivedSpan | None:
        turns = [s for s in collector.named("turn") if s.attributes["tiny_harness.task"] == task_id]
        return min(turns, key=lambda s: s.attributes["tiny_harness.turn"], default=None)

    turn = await eventually_async(first_turn, within=20, what="the first turn's span")
    sends = await eventually_async(
        lambda: (
            collector.named("A2A SendStreamingMessage")[1:]
            and collector.named("A2A SendStreamingMessage")
        ),
        within=20,
        what="both sends' spans",
    )
    send = one([s for s in sends if collector.descends(turn, s)], "send the turn continues")
    assert (send.service, turn.service) == ("tiny-harness-gateway", "tiny-harness-operator")
    assert send.trace_id == turn.trace_id

    # The model and tool calls of the turn are its children, with the GenAI attributes.
    children = [s for s in collector.spans if s.parent_id == turn.span_id]
    chats = [s for s in children if s.name == "chat scripted-model"]
    assert len(chats) >= 2
    assert chats[0].attributes["gen_ai.request.model"] == "scripted-model"
    assert chats[0].attributes["gen_ai.provider.name"] == "openai"
    assert chats[0].attributes["gen_ai.usage.input_tokens"] > 0
    spawned = one([s for s in children if s.name == "execute_tool spawn_subtask"], "spawn span")

    # The child's brief carried the spawn's context: the child's turn is in the same trace.
    child_turn = await eventually_async(
        lambda: [s for s in collector.named("turn") if s.parent_id == spawned.span_id],
        within=20,
        what="the child's turn, continuing the spawn",
    )
    assert child_turn[0].trace_id == send.trace_id
    assert child_turn[0].attributes["tiny_harness.task"] != task_id

    # The command over A2A: the second send's trace, through the command's span.
    command = await eventually_async(
        lambda: collector.named("command /status"), within=20, what="the command's span"
    )
    # One span: the command ran once (not again after the turn it came in during).
    status_send = one([s for s in sends if collector.descends(one(command, "command"), s)], "send")
    assert status_send.trace_id != send.trace_id
    assert command[0].attributes["tiny_harness.participant"] == "alice"
