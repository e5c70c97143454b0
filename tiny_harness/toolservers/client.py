"""Talking to one MCP server: list its tools, call one, within a time limit, never stuck.

Each operation opens its own session (streamable HTTP, the SDK's ``ClientSession`` on a
:class:`~tiny_harness.toolservers.keyed.KeyedDispatcher`), negotiates, does its one request and
closes. A session per call keeps nothing that a restarted server, a restarted operator or a
second replica could find stale; the price is a handshake per call, small beside a model call.

Whatever goes wrong is a :class:`ToolServerError` whose ``outcome`` says what kind of wrong
(``timeout``, ``unreachable``, ``refused``, ``invalid``) and whose message says it in words a
model or a person can act on. The whole operation, connection and handshake included, is
bounded by the endpoint's timeout, and nothing here retries: a retried tool call could run a
side effect twice, and the model can decide to call again.

Header values come from Secrets: :class:`Endpoint` keeps them out of its ``repr``, and no
message here includes them. The HTTP client is the guarded one (:mod:`tiny_harness.outbound`):
each connection is checked against the destination policy, and each Secret header goes only
to an origin its Secret names; a refused destination is the outcome ``blocked``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import anyio
import httpx2
import mcp_types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from tiny_harness.core.destinations import DestinationSettings
from tiny_harness.core.errors import HarnessError
from tiny_harness.core.secret_destinations import BoundHeader
from tiny_harness.outbound.clients import tool_server_client
from tiny_harness.outbound.guard import refusal_in
from tiny_harness.toolservers.keyed import KeyedDispatcher, request_id

#: Who we say we are to the server.
CLIENT_INFO: Final = mcp_types.Implementation(name="tiny-harness", version="0.1.0")
#: The most pages of ``tools/list`` followed: a server that pages forever is not waited on.
MAX_LIST_PAGES: Final = 20

Outcome = Literal["timeout", "unreachable", "refused", "invalid", "blocked"]


@dataclass(frozen=True)
class Endpoint:
    """One MCP server as the client needs it. ``headers`` hold Secret values (never shown),
    each with the origins its Secret lets it go to; ``destinations`` is the policy every
    connection is checked against."""

    server: str
    url: str
    headers: tuple[BoundHeader, ...] = field(default=(), repr=False)
    timeout: float = 30.0
    destinations: DestinationSettings = field(default_factory=DestinationSettings)


class ToolServerError(HarnessError):
    """The server could not be asked, or did not answer as MCP says it must."""

    def __init__(self, outcome: Outcome, message: str) -> None:
        super().__init__(message)
        self.outcome: Outcome = outcome


@dataclass(frozen=True)
class Listing:
    """What discovery found: the server's own name for itself and its tools."""

    server_info: str | None
    tools: tuple[mcp_types.Tool, ...]


async def list_tools(endpoint: Endpoint) -> Listing:
    """Every tool the server offers (``tools/list``, all pages)."""
    async with _guarded(endpoint, "listing its tools"), _session(endpoint) as session:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        info = session.server_info
        named = f"{info.name} {info.version}".strip() if info is not None else None
        return Listing(server_info=named or None, tools=tuple(tools))


async def call_tool(
    endpoint: Endpoint, name: str, arguments: Mapping[str, Any], *, key: str
) -> mcp_types.CallToolResult:
    """Call tool ``name`` once, as JSON-RPC request ``key`` (the journal's idempotency key)."""
    async with _guarded(endpoint, f"calling {name!r}"), _session(endpoint) as session:
        with request_id(key):
            return await session.call_tool(name, dict(arguments))


@asynccontextmanager
async def _session(endpoint: Endpoint) -> AsyncIterator[ClientSession]:
    http_client = tool_server_client(
        endpoint.destinations, bound=endpoint.headers, timeout=endpoint.timeout
    )
    async with (
        http_client as http,
        streamable_http_client(endpoint.url, http_client=http) as (read, write),
        ClientSession(dispatcher=KeyedDispatcher(read, write), client_info=CLIENT_INFO) as session,
    ):
        await _negotiate(session)
        yield session


async def _negotiate(session: ClientSession) -> None:
    """The current protocol when the server speaks it (``server/discover``), else the
    initialize handshake every earlier server knows: the SDK's own order, in its public API."""
    try:
        await session.discover()
    except MCPError:
        await session.initialize()


@asynccontextmanager
async def _guarded(endpoint: Endpoint, doing: str) -> AsyncIterator[None]:
    """Bound the block by the endpoint's timeout, and turn every failure in it into a
    :class:`ToolServerError` saying what happened."""
    where = f"tool server {endpoint.server!r}"
    try:
        with anyio.fail_after(endpoint.timeout):
            yield
    except ToolServerError:
        raise
    except TimeoutError:
        raise ToolServerError(
            "timeout", f"{where} did not finish {doing} within {endpoint.timeout:g}s"
        ) from None
    except Exception as exc:
        refused = refusal_in(exc)
        if refused is not None:
            raise ToolServerError("blocked", f"{where} was not called: {refused}") from None
        raise _translate(_leaf(exc), where, doing) from None


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside the exception groups anyio's task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _translate(exc: BaseException, where: str, doing: str) -> ToolServerError:
    if isinstance(exc, TimeoutError):
        return ToolServerError("timeout", f"{where} did not answer while {doing}")
    if isinstance(exc, MCPError):
        code = exc.error.code
        if code == mcp_types.CONNECTION_CLOSED:
            return ToolServerError("unreachable", f"{where} closed the connection while {doing}")
        return ToolServerError(
            "refused", f"{where} refused {doing}: {exc.error.message} (error {code})"
        )
    if isinstance(exc, httpx2.HTTPStatusError):
        status = exc.response.status_code
        return ToolServerError("refused", f"{where} answered HTTP {status} while {doing}")
    if isinstance(exc, (httpx2.TransportError, OSError)):
        return ToolServerError(
            "unreachable", f"{where} could not be reached while {doing} ({type(exc).__name__})"
        )
    if isinstance(exc, (ValidationError, ValueError)):
        return ToolServerError(
            "invalid", f"{where} answered something that is not a valid MCP reply while {doing}"
        )
    return ToolServerError(
        "invalid", f"{where} failed while {doing}: {type(exc).__name__}: {str(exc)[:300]}"
    )
