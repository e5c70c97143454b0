"""The journal's idempotency key as the JSON-RPC id of a ``tools/call``.

A tool call's journal entry id (``ToolContext.call_id``, such as ``t1/turn-3/tool-0-call_ab``)
is fixed by the call's place in the turn, so a turn resumed after a crash calls again under the
same id. Sending it as the request's id lets an MCP server that keeps the ids it served answer
a repeat without running the tool twice (the crash fell between its answer and our journal
write); a turn resumed after the write never calls at all, since replay reads the journal.

The SDK's ``ClientSession.call_tool`` mints ids itself, but its dispatcher honours a caller's
id (``CallOptions["request_id"]``), and ``ClientSession`` takes the dispatcher it runs on
(``dispatcher=``). So :class:`KeyedDispatcher` is the SDK's own ``JSONRPCDispatcher`` that
puts the key of the call in progress (:func:`request_id`, a context variable, so concurrent
calls on other tasks keep theirs) into the options of ``tools/call`` and nothing else: the
session's typed layer (negotiation, headers, result validation) is untouched.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from mcp.shared.dispatcher import CallOptions
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_types import RequestId

#: The method whose request carries the key.
CALL_METHOD: Final = "tools/call"

_KEY: contextvars.ContextVar[str | None] = contextvars.ContextVar("tool_call_key", default=None)


@contextmanager
def request_id(key: str) -> Iterator[None]:
    """Within this block, a ``tools/call`` sent from this task goes out with id ``key``."""
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


def keyed_options(method: str, opts: CallOptions | None) -> CallOptions | None:
    """The options a request goes out with: the key in progress as its id, for a tool call."""
    key = _KEY.get()
    if method != CALL_METHOD or key is None:
        return opts
    keyed: CallOptions = {**(opts or {})}
    keyed["request_id"] = key
    return keyed


class KeyedDispatcher(JSONRPCDispatcher[Any]):
    """The SDK's JSON-RPC dispatcher, sending each tool call under its journal key."""

    async def send_raw_request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        opts: CallOptions | None = None,
        *,
        _related_request_id: RequestId | None = None,
    ) -> dict[str, Any]:
        return await super().send_raw_request(
            method,
            params,
            keyed_options(method, opts),
            _related_request_id=_related_request_id,
        )
