"""The two limits every A2A request passes before the SDK sees it: body size and rate.

Both are ASGI middleware in front of the SDK's routes, so a refused request has read nothing
from and written nothing to the cluster:

- :class:`BodySizeLimit` reads the body (up to ``gateway.max_request_bytes``) before the
  request goes on, and answers 413 past the limit, whatever ``Content-Length`` claims.
- :class:`ParticipantRateLimit` keeps a token bucket per participant (``rate_limit_per_minute``
  requests, refilled evenly over a minute) and answers 429 with ``Retry-After`` when it is
  empty. The buckets are this replica's: behind a Service with N replicas a participant can
  reach N times the limit, unless the Service pins clients to one replica (session affinity).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Final

from starlette.datastructures import QueryParams
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tiny_harness.a2a_gateway.metrics import OUTCOME_KEY, note

_MAX_BUCKETS: Final = 10_000
#: Where the request's body, as read here, is kept in the ASGI request state: the SDK parses
#: bodies leniently (unknown values become defaults), so a check that must see what the
#: client actually sent reads it from here.
RAW_BODY_KEY: Final = "raw_body"


def _refusal(code: int, status: str, message: str, **headers: str) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "status": status, "message": message}},
        status_code=code,
        headers=headers or None,
    )


class BodySizeLimit:
    """Refuse (413) a request whose body is larger than ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int, public_paths: frozenset[str]) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.public_paths = public_paths

    def _too_large(self, size: str) -> JSONResponse:
        return _refusal(
            413,
            "PAYLOAD_TOO_LARGE",
            f"the request body is {size}; this gateway accepts at most {self.max_bytes} bytes "
            "(gateway.max_request_bytes). Send less text per message, or split it",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        declared = dict(scope["headers"]).get(b"content-length", b"").decode() or None
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            note(state, **{OUTCOME_KEY: "too_large"})
            await self._too_large(f"{int(declared)} bytes")(scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                note(state, **{OUTCOME_KEY: "too_large"})
                await self._too_large(f"more than {self.max_bytes} bytes")(scope, receive, send)
                return
            more = bool(message.get("more_body", False))

        state[RAW_BODY_KEY] = bytes(body)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class ParticipantRateLimit:
    """Refuse (429) a participant's request past ``per_minute`` in a rolling minute.

    Runs after authentication: the bucket is the caller's participant id.
    """

    def __init__(
        self,
        app: ASGIApp,
        per_minute: int,
        public_paths: frozenset[str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.capacity = float(per_minute)
        self.per_second = per_minute / 60.0
        self.public_paths = public_paths
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, who: str) -> float:
        """Take one request from ``who``'s bucket: 0 when allowed, else seconds to wait."""
        now = self.clock()
        tokens, then = self._buckets.get(who, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - then) * self.per_second)
        if tokens < 1.0:
            self._buckets[who] = (tokens, now)
            return (1.0 - tokens) / self.per_second
        self._buckets[who] = (tokens - 1.0, now)
        if len(self._buckets) > _MAX_BUCKETS:
            self._forget_full(now)
        return 0.0

    def _forget_full(self, now: float) -> None:
        # A full bucket is the same as no bucket: drop those to bound memory.
        for who, (tokens, then) in list(self._buckets.items()):
            if tokens + (now - then) * self.per_second >= self.capacity:
                del self._buckets[who]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if (
            scope["type"] != "http"
            or scope["path"] in self.public_paths
            or user is None
            or not user.is_authenticated
        ):
            await self.app(scope, receive, send)
            return
        wait = self.take(user.display_name)
        if wait:
            note(scope.setdefault("state", {}), **{OUTCOME_KEY: "rate_limited"})
            seconds = max(1, math.ceil(wait))
            response = _refusal(
                429,
                "RESOURCE_EXHAUSTED",
                f"rate limit exceeded: at most {int(self.capacity)} requests per minute per "
                f"participant (gateway.rate_limit_per_minute); retry in {seconds}s",
                **{"Retry-After": str(seconds)},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


#: Query parameters that must be whole numbers (HTTP+JSON, 1.0 and 0.3).
_WHOLE_NUMBER_PARAMS: Final = ("historyLength", "pageSize", "history_length", "page_size")


class QueryNumbers:
    """Refuse (400) an HTTP+JSON request whose numeric query parameter is not a whole number,
    naming it. The SDK's 0.3 adapter turns such a value into an uncaught error (a 500); every
    malformed request must instead be a 4xx that says what to fix."""

    def __init__(self, app: ASGIApp, public_paths: frozenset[str]) -> None:
        self.app = app
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in self.public_paths:
            query = QueryParams(scope.get("query_string", b""))
            for name in _WHOLE_NUMBER_PARAMS:
                value = query.get(name)
                if value is not None and not value.lstrip("-").isdigit():
                    note(scope.setdefault("state", {}), **{OUTCOME_KEY: "invalid"})
                    refusal = _refusal(
                        400,
                        "INVALID_ARGUMENT",
                        f"{name}: {value!r} is not a whole number",
                    )
                    await refusal(scope, receive, send)
                    return
        await self.app(scope, receive, send)
