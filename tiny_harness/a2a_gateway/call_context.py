"""What the handler knows of the HTTP request behind an A2A call, beyond what the SDK parsed.

The SDK hands the handler a parsed request and a call context. The gateway also needs the
request's ASGI state (where the handler notes the A2A method and outcome for the metrics, and
each event's version for its SSE id), the ``Last-Event-ID`` a resuming client sent, and a
parameter as the client sent it before the SDK's lenient parse (:func:`requested`): the context
builder puts them in the call context, and these functions read them back.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any, Final

from a2a.server.context import ServerCallContext
from a2a.server.routes.common import DefaultServerCallContextBuilder
from starlette.requests import Request

from tiny_harness.a2a_gateway.event_ids import LAST_EVENT_ID_KEY
from tiny_harness.a2a_gateway.limits import RAW_BODY_KEY

#: The ASGI request state, as the call context carries it to the handler (for metrics).
REQUEST_STATE: Final = "tiny_harness.request_state"
#: The request's query parameters, as the client sent them, in the request state.
QUERY_KEY: Final = "query"


class GatewayCallContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, plus the request's ASGI state so the handler can report the A2A
    method and outcome to the metrics middleware."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        state = request.scope.setdefault("state", {})
        state[QUERY_KEY] = request.query_params
        state[LAST_EVENT_ID_KEY] = request.headers.get("last-event-id")
        context.state[REQUEST_STATE] = state
        return context


def request_state(context: ServerCallContext) -> MutableMapping[str, Any] | None:
    """The request's ASGI state (None: the handler was called without the builder)."""
    state = context.state.get(REQUEST_STATE)
    return state if isinstance(state, MutableMapping) else None


def requested(context: ServerCallContext, name: str) -> object | None:
    """A request parameter as the client sent it, before the SDK's lenient parse: from the
    query (HTTP+JSON) or the JSON-RPC ``params``. None when it was not sent."""
    state = request_state(context)
    if state is None:
        return None
    query = state.get(QUERY_KEY)
    if query is not None and name in query:
        return str(query[name])
    body = state.get(RAW_BODY_KEY)
    if not body:
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    params = document.get("params") if isinstance(document, dict) else None
    return params.get(name) if isinstance(params, dict) else None
