"""The two limits every A2A request passes before the SDK sees it, body size and rate, and the
status of a refusal for what a request would store.

Both are ASGI middleware in front of the SDK's routes, so a refused request has read nothing
from and written nothing to the cluster:

- :class:`BodySizeLimit` reads the body (up to ``gateway.max_request_bytes``) before the
  request goes on, and answers 413 past the limit, whatever ``Content-Length`` claims, and 400
  to a body nested deeper than :data:`REQUEST_DEPTH` (``core/json_bounds.py``), which the SDK's
  JSON decoder would otherwise recurse into until it fails.
- :class:`ParticipantRateLimit` keeps a token bucket per participant (``rate_limit_per_minute``
  requests, refilled evenly over a minute) and answers 429 with ``Retry-After`` when it is
  empty. The buckets are this replica's: behind a Service with N replicas a participant can
  reach N times the limit, unless the Service pins clients to one replica (session affinity).

The buckets are :class:`TokenBuckets`, the one rate mechanism of the gateway: token review
keeps another table of them, of refused tokens per client address (``identity.py``).

What a request would store is decided later, by the store (a message too large, a quota:
``quotas.py``), and answered as an A2A error; :class:`RefusalStatus` gives that answer the HTTP
status it deserves (413, 429) over HTTP+JSON, as these limits' own answers have.
"""

from __future__ import annotations

import ipaddress
import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from starlette.datastructures import QueryParams
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tiny_harness.a2a_gateway.metrics import OUTCOME_KEY, note
from tiny_harness.core.json_bounds import MAX_DEPTH, depth_of
from tiny_harness.core.reason_codes import ReasonCode, error_info

_MAX_BUCKETS: Final = 10_000
#: Where the request's body, as read here, is kept in the ASGI request state: the SDK parses
#: bodies leniently (unknown values become defaults), so a check that must see what the
#: client actually sent reads it from here.
RAW_BODY_KEY: Final = "raw_body"
#: Where the request handler notes the HTTP status a refusal for what the request would store
#: deserves (413, 429), which the SDK's error mapping cannot give it (:class:`RefusalStatus`).
STATUS_KEY: Final = "refusal_status"
#: The deepest a request body may nest: free-form data's own bound (a data part, the metadata)
#: and the levels of the request around it (JSON-RPC's params, the message, its parts).
REQUEST_DEPTH: Final = MAX_DEPTH + 8


def refusal(
    code: int, status: str, message: str, reason: ReasonCode, **headers: str
) -> JSONResponse:
    """The gateway's own refusal, in the shape every one of them has: an A2A HTTP+JSON error
    body (``google.rpc.Status``), its ``details`` an ``ErrorInfo`` carrying the code."""
    error = {"code": code, "status": status, "message": message, "details": [error_info(reason)]}
    return JSONResponse({"error": error}, status_code=code, headers=headers or None)


def retry_after(wait: float) -> int:
    """Whole seconds for ``Retry-After``: never 0, which would invite a retry at once."""
    return max(1, math.ceil(wait))


class TokenBuckets:
    """A token bucket per key: ``per_minute`` takes, refilled evenly over a minute.

    At most ``max_keys`` buckets are kept, the least recently taken from forgotten first, so
    the table's memory is bounded whoever calls. Forgetting a bucket refills it; a bucket
    untouched for a minute is full anyway, so only a caller spreading over more than
    ``max_keys`` keys a minute gains from it.
    """

    def __init__(
        self,
        per_minute: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = _MAX_BUCKETS,
    ) -> None:
        self.per_minute = per_minute
        self._capacity = float(per_minute)
        self._per_second = per_minute / 60.0
        self._clock = clock
        self._max_keys = max_keys
        # key -> (tokens left, when counted); oldest take first.
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def _tokens(self, key: str, now: float) -> float:
        tokens, then = self._buckets.get(key, (self._capacity, now))
        return min(self._capacity, tokens + (now - then) * self._per_second)

    def _wait(self, tokens: float) -> float:
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self._per_second

    def wait(self, key: str) -> float:
        """Seconds until ``key`` may take one (0: now); takes nothing."""
        return self._wait(self._tokens(key, self._clock()))

    def take(self, key: str) -> float:
        """Take one from ``key``'s bucket: 0 when there was one, else the seconds to wait
        (and nothing is taken)."""
        now = self._clock()
        tokens = self._tokens(key, now)
        if tokens < 1.0:
            return self._wait(tokens)
        self._buckets[key] = (tokens - 1.0, now)
        self._buckets.move_to_end(key)
        while len(self._buckets) > self._max_keys:
            self._buckets.popitem(last=False)
        return 0.0

    def give_back(self, key: str) -> None:
        """Return one :meth:`take` took, for a take that turned out not to count."""
        if key in self._buckets:
            now = self._clock()
            self._buckets[key] = (min(self._capacity, self._tokens(key, now) + 1.0), now)


def address_key(host: str | None) -> str:
    """The key of a client address in a per-address table: the address itself for IPv4, its
    /64 for IPv6 (one host is usually given a whole /64, so a key per address would let it
    spread over 2^64 of them), ``unknown`` when the server was told none."""
    if not host:
        return "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host  # a Unix socket's path, or a name a test transport made up
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class BodySizeLimit:
    """Refuse (413) a request whose body is larger than ``max_bytes``, and (400) one nested
    deeper than :data:`REQUEST_DEPTH`, before anything decodes it."""

    def __init__(self, app: ASGIApp, max_bytes: int, public_paths: frozenset[str]) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.public_paths = public_paths

    def _too_large(self, size: str) -> JSONResponse:
        return refusal(
            413,
            "PAYLOAD_TOO_LARGE",
            f"the request body is {size}; this gateway accepts at most {self.max_bytes} bytes "
            "(gateway.max_request_bytes). Send less text per message, or split it",
            ReasonCode.BODY_TOO_LARGE,
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

        depth = depth_of(body.decode("utf-8", errors="replace"), REQUEST_DEPTH)
        if depth > REQUEST_DEPTH:
            note(state, **{OUTCOME_KEY: "invalid"})
            refused = refusal(
                400,
                "INVALID_ARGUMENT",
                f"the request body is nested more than {REQUEST_DEPTH} levels deep, and a "
                f"message's data and metadata may nest at most {MAX_DEPTH} levels: flatten "
                "them, or send the data as text",
                ReasonCode.BODY_TOO_DEEP,
            )
            await refused(scope, receive, send)
            return
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
        self.public_paths = public_paths
        self.buckets = TokenBuckets(per_minute, clock=clock)

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
        wait = self.buckets.take(user.display_name)
        if wait:
            note(scope.setdefault("state", {}), **{OUTCOME_KEY: "rate_limited"})
            seconds = retry_after(wait)
            response = refusal(
                429,
                "RESOURCE_EXHAUSTED",
                f"rate limit exceeded: at most {self.buckets.per_minute} requests per minute per "
                f"participant (gateway.rate_limit_per_minute); retry in {seconds}s",
                ReasonCode.RATE_LIMITED,
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
                    refused = refusal(
                        400,
                        "INVALID_ARGUMENT",
                        f"{name}: {value!r} is not a whole number",
                        ReasonCode.INVALID_PARAMS,
                    )
                    await refused(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class RefusalStatus:
    """Answer an HTTP+JSON request refused for what it would store (a message too large, a
    quota) with the status the refusal deserves: 413 or 429, as the handler noted it.

    The SDK maps each A2A error type to one status (400 for the two these are), and A2A has no
    error for "too much stored"; a client or proxy that reads only the status must still tell
    "change the request" (413) and "try again later" (429) from "malformed" (400). So this sets
    the noted status on the SDK's error response, in its status line and its body's ``code``
    (with ``RESOURCE_EXHAUSTED`` for a 429, as the rate limit says); the body is otherwise the
    SDK's, so an A2A client still reads the typed error from its reason. JSON-RPC answers are
    left alone (200): a JSON-RPC error travels in a 200, and the SDK's JSON-RPC client reads
    one only from a 2xx, so any other status would lose the typed error.
    """

    def __init__(self, app: ASGIApp, rest_prefix: str) -> None:
        self.app = app
        self.rest_prefix = rest_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.rest_prefix):
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        held: Message | None = None
        body = bytearray()

        async def refusing(message: Message) -> None:
            nonlocal held
            noted = str(state.get(STATUS_KEY) or "")
            if message["type"] == "http.response.start" and noted and message["status"] >= 400:
                held = message  # sent once the body is read, with the status it deserves
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            status = int(noted)
            rewritten = _with_code(bytes(body), status)
            headers = [(k, v) for k, v in held["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(rewritten)).encode()))
            await send({**held, "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": rewritten, "more_body": False})

        await self.app(scope, receive, refusing)


def _with_code(body: bytes, status: int) -> bytes:
    """The SDK's error body with ``status`` as its code; a body of another shape as it is."""
    try:
        document = json.loads(body)
    except ValueError:
        return body
    error = document.get("error") if isinstance(document, dict) else None
    if not isinstance(error, dict):
        return body
    error["code"] = status
    if status == 429:
        error["status"] = "RESOURCE_EXHAUSTED"
    return json.dumps(document).encode()
