"""The SSE event id of each stream event: the version it was cut from, to resume from.

Every event a stream sends (the task, then its status updates) carries the task's version in
the task extension (``version``, :func:`.rendering.version_of`). Clients that speak SSE see it
as the event's ``id:`` field too, so a browser's ``EventSource`` and any SSE client resend it as
``Last-Event-ID`` when they reconnect, which :meth:`~.handler.GatewayRequestHandler.
on_subscribe_to_task` reads to send what was missed.

The SDK writes the SSE events itself and has no hook for their ids, so the handler notes each
version as it yields the event (:func:`note`), and :class:`EventIds` (ASGI middleware) puts the
next noted version on the next ``data:`` event of the response. The rule that makes it exact:
the SDK writes one SSE event per item the handler yields, in order, and nothing between them
but comments (keep-alive pings), which carry no data and take no id. Each id is checked
against the event it goes on (the version appears in the event's JSON): an event whose text
does not carry its noted version gets no id, rather than a wrong one.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import MutableMapping
from typing import Any, Final

from a2a.utils.errors import InvalidParamsError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tiny_harness.core.reason_codes import ReasonCode, coded

log = logging.getLogger(__name__)

#: The versions noted for the response's events, in the request state.
VERSIONS_KEY: Final = "stream_versions"
#: The ``Last-Event-ID`` header a resuming client sent, in the request state.
LAST_EVENT_ID_KEY: Final = "last_event_id"


def note(state: MutableMapping[str, Any] | None, version: int | None) -> None:
    """The next event the handler yields was cut from ``version`` (None: it has none)."""
    if state is None:
        return
    versions = state.get(VERSIONS_KEY)
    if not isinstance(versions, deque):
        versions = state[VERSIONS_KEY] = deque()
    versions.append(version)


def last_event_id(state: MutableMapping[str, Any] | None) -> int | None:
    """The version a resuming client last read (its ``Last-Event-ID``), or None when it sent
    none; one that is not a version this gateway gave is refused, naming the header."""
    raw = (state or {}).get(LAST_EVENT_ID_KEY)
    if raw is None or not str(raw).strip():
        return None
    text = str(raw).strip()
    if not text.isdigit() or len(text) > 20:
        raise coded(
            InvalidParamsError,
            ReasonCode.INVALID_PARAMS,
            f"Last-Event-ID: {text[:40]!r} is not an event id of this gateway; send the id of "
            "the last event read (a number), or no header to start afresh",
        )
    return int(text)


class EventIds:
    """ASGI middleware: an ``id:`` line on each SSE ``data:`` event, from the noted versions."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: MutableMapping[str, Any] = scope.setdefault("state", {})
        streaming = False

        async def with_ids(message: Message) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                streaming = headers.get(b"content-type", b"").startswith(b"text/event-stream")
            elif streaming and message["type"] == "http.response.body":
                body = message.get("body") or b""
                if body.startswith(b"data:") or b"\ndata:" in body[:64]:
                    message = {**message, "body": _with_id(state, body)}
            await send(message)

        await self.app(scope, receive, with_ids)


def _with_id(state: MutableMapping[str, Any], body: bytes) -> bytes:
    versions = state.get(VERSIONS_KEY)
    if not isinstance(versions, deque) or not versions:
        return body
    version = versions.popleft()
    if version is None:
        return body
    text = str(version).encode()
    if b'"version":"' + text + b'"' not in body and b'"version": "' + text + b'"' not in body:
        log.warning("an SSE event does not carry its noted version %s; sent without an id", text)
        return body
    return b"id: " + text + b"\r\n" + body
