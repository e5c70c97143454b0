"""Each A2A request is a server span that continues the caller's trace and is current while
the handler writes (so a message it writes carries it), named for the A2A method."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tiny_harness.a2a_gateway.metrics import METHOD_KEY, OUTCOME_KEY
from tiny_harness.a2a_gateway.tracing import TracingMiddleware
from tiny_harness.core.tracing import carrier

CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"


async def send(request: Request) -> Response:
    request.scope.setdefault("state", {}).update({METHOD_KEY: "SendMessage", OUTCOME_KEY: "ok"})
    return JSONResponse(carrier())  # what a message written here would carry


async def stream(request: Request) -> Response:
    request.scope.setdefault("state", {})[METHOD_KEY] = "SendStreamingMessage"

    async def events() -> AsyncIterator[str]:
        for _ in range(3):
            yield f"data: {json.dumps(carrier())}\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


async def broken(request: Request) -> Response:
    request.scope.setdefault("state", {}).update(
        {METHOD_KEY: "GetTask", OUTCOME_KEY: "internal_error"}
    )
    return Response(status_code=500)


def client() -> httpx.AsyncClient:
    app = Starlette(
        routes=[
            Route("/", send, methods=["POST"]),
            Route("/stream", stream, methods=["POST"]),
            Route("/broken", broken, methods=["POST"]),
            Route("/healthz", send, methods=["GET"]),
        ],
        middleware=[Middleware(TracingMiddleware, public_paths=frozenset({"/healthz"}))],
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw")


async def test_a_request_continues_the_callers_trace_and_is_current_for_the_write(
    spans: InMemorySpanExporter,
) -> None:
    async with client() as http:
        response = await http.post(
            "/", headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
        )

    [span] = spans.get_finished_spans()
    assert span.name == "A2A SendMessage"
    assert span.kind is SpanKind.SERVER
    assert format(span.context.trace_id, "032x") == CALLER_TRACE
    assert span.parent is not None
    assert format(span.parent.span_id, "016x") == CALLER_SPAN
    written = response.json()["tiny-harness.dev/traceparent"]
    assert written == f"00-{CALLER_TRACE}-{format(span.context.span_id, '016x')}-01"
    assert dict(span.attributes or {})["a2a.outcome"] == "ok"


async def test_a_stream_is_one_span_current_for_every_event(
    spans: InMemorySpanExporter,
) -> None:
    async with client() as http:
        response = await http.post("/stream")
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line]

    [span] = spans.get_finished_spans()
    assert span.name == "A2A SendStreamingMessage"
    assert span.parent is None  # no trace context sent: a new trace starts here
    own = f"00-{format(span.context.trace_id, '032x')}-{format(span.context.span_id, '016x')}"
    # (the flags after the ids say sampled, and that this trace id is random)
    assert [e["tiny-harness.dev/traceparent"].rsplit("-", 1)[0] for e in events] == [own] * 3


async def test_a_server_error_is_an_error_span_and_public_paths_are_not_traced(
    spans: InMemorySpanExporter,
) -> None:
    async with client() as http:
        await http.post("/broken")
        await http.get("/healthz")

    [span] = spans.get_finished_spans()
    assert span.name == "A2A GetTask"
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["http.response.status_code"] == 500
