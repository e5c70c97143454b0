"""A model call is a ``chat {model}`` span with the GenAI attributes, over each real SDK
adapter against the scripted server; a retry is an event on it; a failure names its reason."""

from __future__ import annotations

import pytest
from adapter_kit import KINDS, Kind, MakeAdapter, provider_of
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tiny_harness.core.llm import ChatMessage, LLMRequest
from tiny_harness.core.tracing import TracedAdapter
from tiny_harness.models import ModelCallError
from tiny_harness.testing.model_script import ErrorTurn, TextTurn
from tiny_harness.testing.model_server import ScriptedModelServer

HI = LLMRequest(messages=(ChatMessage(role="user", content="hi"),))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_model_call_is_a_client_span_with_the_genai_attributes(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter, spans: InMemorySpanExporter
) -> None:
    adapter = TracedAdapter(await make_adapter(kind), provider_of(kind))
    server.script([TextTurn(text="hello", input_tokens=120, output_tokens=7)])

    await adapter.complete(
        HI.model_copy(update={"reasoning_effort": "low", "max_output_tokens": 256})
    )

    [span] = spans.get_finished_spans()
    assert span.name == "chat model-default"
    assert span.kind is SpanKind.CLIENT
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == provider_of(kind)
    assert attributes["gen_ai.request.model"] == "model-default"
    assert attributes["gen_ai.request.max_tokens"] == 256
    assert attributes["tiny_harness.llm.reasoning_effort"] == "low"
    assert attributes["gen_ai.response.model"]
    assert attributes["gen_ai.usage.output_tokens"] == 7
    # Anthropic counts cache reads and writes beside the input; here nothing was cached.
    assert attributes["gen_ai.usage.input_tokens"] == 120
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert span.status.status_code is StatusCode.UNSET


async def test_each_retry_is_an_event_on_the_span_of_the_call(
    server: ScriptedModelServer, make_adapter: MakeAdapter, spans: InMemorySpanExporter
) -> None:
    adapter = TracedAdapter(await make_adapter("chat", max_retries=3), "openai")
    server.script([ErrorTurn(status=503, message="overloaded")] * 2 + [TextTurn(text="back")])

    await adapter.complete(HI)

    [span] = spans.get_finished_spans()
    retries = [e for e in span.events if e.name == "retry"]
    assert [dict(e.attributes or {})["tiny_harness.retry.attempt"] for e in retries] == [1, 2]
    assert dict(retries[0].attributes or {})["tiny_harness.retry.reason"] == (
        "HTTP 503: overloaded"
    )


async def test_a_failed_call_is_an_error_span_naming_the_reason(
    server: ScriptedModelServer, make_adapter: MakeAdapter, spans: InMemorySpanExporter
) -> None:
    adapter = TracedAdapter(await make_adapter("responses", max_retries=0), "openai")
    server.script([ErrorTurn(status=401, message="bad key")])

    with pytest.raises(ModelCallError):
        await adapter.complete(HI)

    [span] = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "ModelUnauthorized"
    assert [e.name for e in span.events] == ["exception"]
