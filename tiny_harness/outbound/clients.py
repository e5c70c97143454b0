"""The clients the operator calls tool servers, agents and cards with: guarded connections,
and Secret headers attached per request.

A Secret header is never a client-wide header. A request hook (which both HTTP stacks run for
every request, each redirect's included, just before it is sent) sets each
:class:`~tiny_harness.core.secret_destinations.BoundHeader` whose Secret names the origin of
that request's URL, and removes any other: a card that sends the client elsewhere, or a
redirect, never carries the credential where its Secret does not say it may go. Proxies from
the environment are not used (a proxy would be the address checked, not the destination).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any, Protocol

import httpcore
import httpcore2
import httpx
import httpx2

from tiny_harness.core.destinations import DestinationSettings
from tiny_harness.core.secret_destinations import BoundHeader, OriginError, attach_bound, origin_of
from tiny_harness.outbound.guard import Guard, GuardedBackend
from tiny_harness.outbound.httpx_internals import HTTPX, HTTPX2, put_network_backend

log = logging.getLogger(__name__)


class _Request(Protocol):
    @property
    def url(self) -> object: ...

    @property
    def headers(self) -> MutableMapping[str, str]: ...


def bound_headers_hook(bound: Iterable[BoundHeader]) -> Callable[[Any], Awaitable[None]]:
    """The request hook that attaches ``bound`` headers only where their Secrets allow."""
    headers = tuple(bound)

    async def attach(request: _Request) -> None:
        url = str(request.url)
        for withheld in attach_bound(request.headers, headers, url):
            try:
                where = origin_of(url)
            except OriginError:
                where = "a URL that is not http(s)"
            log.warning(
                "header %s (from Secret %s) was not sent to %s: the Secret names only %s",
                withheld.name,
                withheld.secret,
                where,
                ", ".join(sorted(withheld.origins)),
            )

    return attach


def agent_client(
    policy: DestinationSettings,
    *,
    headers: Mapping[str, str],
    bound: Iterable[BoundHeader],
    timeout: httpx.Timeout,
) -> httpx.AsyncClient:
    """A client for an agent and its card (the ``a2a`` SDK's ``httpx``): ``headers`` (plain
    values from the spec) on every request, ``bound`` only where their Secrets allow."""
    transport = httpx.AsyncHTTPTransport()
    backend = GuardedBackend(Guard(policy), httpcore.AnyIOBackend())
    put_network_backend(transport, backend, HTTPX)
    return httpx.AsyncClient(
        headers=dict(headers),
        timeout=timeout,
        transport=transport,
        trust_env=False,
        follow_redirects=False,
        event_hooks={"request": [bound_headers_hook(bound)]},
    )


def tool_server_client(
    policy: DestinationSettings, *, bound: Iterable[BoundHeader], timeout: float
) -> httpx2.AsyncClient:
    """A client for an MCP server (the ``mcp`` SDK's ``httpx2``), ``bound`` headers only
    where their Secrets allow."""
    transport = httpx2.AsyncHTTPTransport()
    backend = GuardedBackend(Guard(policy), httpcore2.AnyIOBackend())
    put_network_backend(transport, backend, HTTPX2)
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(timeout),
        transport=transport,
        trust_env=False,
        follow_redirects=False,
        event_hooks={"request": [bound_headers_hook(bound)]},
    )
