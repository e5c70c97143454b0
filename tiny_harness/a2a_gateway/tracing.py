"""A server span for every A2A request, continuing the caller's trace.

The span is current while the request runs, so the ``HarnessMessage`` a send writes carries its
context (:func:`tiny_harness.core.tracing.carrier`) and the operator's turn continues the same
trace: one trace shows a send from the request to the reply. The span is named for the A2A
method once the handler has said which it was (``A2A SendMessage``), and ends when the response
does: for a stream, when its last event is sent.

A trace context the client sends (W3C ``traceparent``) is the parent; a client that sends none
starts a new trace here. With tracing off the span is the API's no-op one.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import propagate
from opentelemetry.semconv.attributes import http_attributes, url_attributes
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tiny_harness.a2a_gateway.metrics import METHOD_KEY, OUTCOME_KEY
from tiny_harness.core.tracing import A2A_METHOD, A2A_OUTCOME, tracer


class TracingMiddleware:
    """Runs each A2A request inside a server span (the card, health and metrics paths are
    not traced)."""

    def __init__(self, app: ASGIApp, public_paths: frozenset[str]) -> None:
        self.app = app
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        state: dict[str, Any] = scope.setdefault("state", {})
        status = 500

        async def traced_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        with tracer().start_as_current_span(
            "A2A request",
            context=propagate.extract(headers),
            kind=SpanKind.SERVER,
            attributes={
                http_attributes.HTTP_REQUEST_METHOD: scope["method"],
                url_attributes.URL_PATH: scope["path"],
            },
        ) as span:
            try:
                await self.app(scope, receive, traced_send)
            finally:
                method = state.get(METHOD_KEY)
                if method:
                    span.update_name(f"A2A {method}")
                    span.set_attribute(A2A_METHOD, str(method))
                outcome = state.get(OUTCOME_KEY)
                if outcome:
                    span.set_attribute(A2A_OUTCOME, str(outcome))
                span.set_attribute(http_attributes.HTTP_RESPONSE_STATUS_CODE, status)
                if status >= 500 or outcome == "internal_error":
                    span.set_status(Status(StatusCode.ERROR))
