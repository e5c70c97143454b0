"""The domain's spans and the trace context a resource carries (core/tracing.py), with the
SDK's in-memory exporter: a turn's model and tool calls are its children, a replayed step is
not a span (nothing was called), and a context survives the trip through annotations."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tiny_harness.core.compaction import FixedContextWindow
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.tools import ToolContext, ToolRegistry
from tiny_harness.core.tracing import (
    ANNOTATION_PREFIX,
    TracedAdapter,
    carrier,
    command_span,
    context_of,
    end_turn,
    parent_and_links,
    tracer,
    turn_span,
)
from tiny_harness.core.turn import TurnInput, dump_journal, load_journal

from .conftest import MemoryHost, ScriptedModel, calls, delegated, reply


def by_name(spans: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans.get_finished_spans()}


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def tools() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(
        "lookup",
        "Look a word up.",
        {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    )
    def lookup(args: dict[str, Any], ctx: ToolContext) -> str:
        return f"{args['word']}: a word"

    return registry


def loop_for(model: ScriptedModel) -> CoreLoop:
    return CoreLoop(TracedAdapter(model, "openai"), FixedContextWindow(200_000), tools())


def turn_input(journal: Any = ()) -> TurnInput:
    return TurnInput(task_id="t1", turn=3, task=delegated(), journal=journal)


def script() -> ScriptedModel:
    return ScriptedModel(
        calls(("lookup", {"word": "otter"}), ("lookup", {"nope": 1})), reply("Otters are words.")
    )


async def test_a_turns_model_and_tool_calls_are_children_of_its_span(
    spans: InMemorySpanExporter,
) -> None:
    host = MemoryHost()
    host.send("What is an otter?")
    with turn_span("t1", "team", 3, resumed=False) as span:
        outcome = await loop_for(script()).run_turn(host, turn_input())
        end_turn(span, outcome.kind.value)

    finished = spans.get_finished_spans()
    turn = next(s for s in finished if s.name == "turn")
    assert attrs(turn)["tiny_harness.turn"] == 3
    assert attrs(turn)["tiny_harness.turn.outcome"] == "completed"
    assert attrs(turn)["gen_ai.operation.name"] == "invoke_agent"
    children = [s for s in finished if s is not turn]
    assert [s.name for s in children] == [
        "chat fake-model",
        "execute_tool lookup",
        "execute_tool lookup",
        "chat fake-model",
    ]
    assert {s.parent.span_id for s in children if s.parent} == {turn.context.span_id}
    assert {s.context.trace_id for s in finished} == {turn.context.trace_id}
    good, bad = children[1], children[2]
    assert attrs(good)["gen_ai.tool.call.id"] == "call-0"
    assert attrs(good)["tiny_harness.tool.error"] is False
    # A call the invoker refused is answered to the model as an error: the span says so.
    assert attrs(bad)["tiny_harness.tool.error"] is True
    assert bad.status.status_code is StatusCode.ERROR


async def test_a_replayed_turn_makes_no_model_or_tool_span(spans: InMemorySpanExporter) -> None:
    host = MemoryHost()
    host.send("What is an otter?")
    await loop_for(script()).run_turn(host, turn_input())
    spans.clear()

    replayer = MemoryHost()
    journal = load_journal(dump_journal(host.journal))
    await loop_for(ScriptedModel()).run_turn(replayer, turn_input(journal))

    assert spans.get_finished_spans() == ()


def test_a_context_survives_the_trip_through_a_resources_annotations(
    spans: InMemorySpanExporter,
) -> None:
    assert carrier() == {}  # no span: nothing to carry, nothing written
    with tracer().start_as_current_span("send") as sender:
        annotations = carrier()
    assert set(annotations) >= {f"{ANNOTATION_PREFIX}traceparent"}

    with command_span("status", "t1", "alice", "m1", context_of(annotations)):
        pass
    span = by_name(spans)["command /status"]
    assert span.parent is not None
    assert span.parent.span_id == sender.get_span_context().span_id
    assert span.context.trace_id == sender.get_span_context().trace_id
    assert attrs(span)["tiny_harness.participant"] == "alice"


def test_a_hand_written_or_missing_context_is_no_parent() -> None:
    assert context_of(None) is None
    assert context_of({"other": "x"}) is None
    assert context_of({f"{ANNOTATION_PREFIX}traceparent": "not-a-traceparent"}) is None
    assert parent_and_links([{}, {"a": "b"}]) == (None, [])


def test_a_turn_taking_several_messages_continues_the_first_and_links_the_rest(
    spans: InMemorySpanExporter,
) -> None:
    senders = []
    annotations = []
    for name in ("first", "second", "third"):
        with tracer().start_as_current_span(name) as span:
            senders.append(span.get_span_context())
            annotations.append(carrier())

    parent, links = parent_and_links([{}, *annotations])
    with turn_span("t1", "team", 1, resumed=True, parent=parent, links=links):
        pass

    turn = by_name(spans)["turn"]
    assert turn.context.trace_id == senders[0].trace_id
    assert [link.context.span_id for link in turn.links] == [s.span_id for s in senders[1:]]
    assert attrs(turn)["tiny_harness.turn.resumed"] is True


def test_with_no_sdk_installed_the_api_records_nothing() -> None:
    # What a process without [tracing] runs: the API's no-op provider.
    noop = trace.NoOpTracerProvider().get_tracer("tiny_harness")
    with noop.start_as_current_span("turn") as span:
        assert not span.is_recording()
        assert carrier() == {}
