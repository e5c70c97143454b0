"""The gateway's Prometheus metrics: requests by A2A method and outcome, open streams, latency.

A request's method and outcome are known in two places: the request handler knows the A2A
method and whether it succeeded (and which A2A error it raised), and the limits in front of it
know when they refused a request before any handler ran. Both write them into the request's
ASGI state (:func:`note`), and :class:`MetricsMiddleware` counts the request once, when it
ends. Latency is the time to the response's first byte: for a stream, its first event.
"""

from __future__ import annotations

import time
from collections.abc import MutableMapping
from typing import Any, Final

from a2a.utils.errors import A2A_ERROR_REASONS, A2AError
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

METHOD_KEY: Final = "a2a_method"
OUTCOME_KEY: Final = "a2a_outcome"

_LATENCY_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip


class GatewayMetrics:
    """The metrics of one gateway, in a registry of its own (so tests can build several)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.requests = Counter(
            "tiny_harness_gateway_requests",
            "A2A requests by method and outcome (ok, or the A2A error reason, or the refusal).",
            ["method", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "tiny_harness_gateway_request_seconds",
            "Time to the first byte of the response (for a stream: its first event).",
            ["method"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.open_streams = Gauge(
            "tiny_harness_gateway_open_streams",
            "SSE streams (SendStreamingMessage, SubscribeToTask) open now.",
            ["method"],
            registry=self.registry,
        )
        self.unreadable = Counter(
            "tiny_harness_gateway_unreadable_objects",
            "Stored objects a read left out because they cannot be parsed, by kind "
            "(HarnessMessage, HarnessTurn); every read that meets one counts it.",
            ["kind"],
            registry=self.registry,
        )

    def skipped(self, kind: str) -> None:
        """A read skipped an object of ``kind`` it cannot parse (kube/unreadable.py)."""
        self.unreadable.labels(kind).inc()

    async def endpoint(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


def outcome_of(error: BaseException | None) -> str:
    """``ok``, or the A2A error reason in lower case (``task_not_found``, ...)."""
    if error is None:
        return "ok"
    if isinstance(error, A2AError):
        return A2A_ERROR_REASONS.get(type(error), "a2a_error").lower()
    return "internal_error"


def note(state: MutableMapping[str, Any] | None, **values: str) -> None:
    """Record the request's ``a2a_method`` and/or ``a2a_outcome`` in its ASGI state."""
    if state is not None:
        state.update(values)


class MetricsMiddleware:
    """Counts every request to an A2A endpoint once, by method and outcome, and its latency."""

    def __init__(self, app: ASGIApp, metrics: GatewayMetrics, public_paths: frozenset[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        started = time.perf_counter()
        status = 500
        first_byte: float | None = None

        async def timed_send(message: Message) -> None:
            nonlocal status, first_byte
            if message["type"] == "http.response.start":
                status = int(message["status"])
                first_byte = time.perf_counter()
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            method = str(state.get(METHOD_KEY) or "unknown")
            outcome = str(state.get(OUTCOME_KEY) or _refusal(status))
            self.metrics.requests.labels(method, outcome).inc()
            elapsed = (first_byte or time.perf_counter()) - started
            self.metrics.latency.labels(method).observe(elapsed)


def _refusal(status: int) -> str:
    # No handler ran: the SDK's dispatcher refused the request (malformed JSON-RPC, an
    # unknown method, bad params) or it never reached a route.
    if status == 404:
        return "not_found"
    return "invalid_request" if status < 500 else "internal_error"
