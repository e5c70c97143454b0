"""The gateway's short requests (``a2a_gateway/api_pool.py``): a request whose caller is
cancelled still ends, and its connection is used again, against a real HTTP server and the real
Kubernetes client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client

from tiny_harness.a2a_gateway.api_pool import finish_when_cancelled

PATH = "/api/v1/namespaces"


class Server:
    """Answers ``PATH`` with an empty list; with ``?slow=1`` only once released. Counts the
    connections its requests came on."""

    def __init__(self) -> None:
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.connections: set[object] = set()
        self.answered = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.connections.add(request.transport)
        if request.query.get("slow"):
            self.arrived.set()
            await self.release.wait()
        self.answered += 1
        return web.json_response({"kind": "List", "items": []})


@pytest.fixture
async def server() -> AsyncIterator[tuple[Server, str]]:
    served = Server()
    app = web.Application()
    app.router.add_get(PATH, served.handle)
    async with TestServer(app, host="127.0.0.1") as test_server:
        yield served, str(test_server.make_url("")).rstrip("/")


async def get(api: client.ApiClient, *, slow: bool = False) -> object:
    return await api.call_api(
        PATH,
        "GET",
        query_params=[("slow", "1")] if slow else [],
        response_types_map={200: "object"},
        _return_http_data_only=True,
    )


async def test_a_request_whose_caller_is_cancelled_ends_and_its_connection_is_used_again(
    server: tuple[Server, str],
) -> None:
    served, url = server
    api = client.ApiClient(client.Configuration(host=url))
    finishing = finish_when_cancelled(api)
    try:
        call = asyncio.ensure_future(get(api, slow=True))
        await served.arrived.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call  # the caller is cancelled at once, its answer not yet come
        assert served.answered == 0
        served.release.set()
        await finishing.settled()
        assert served.answered == 1
        await get(api)
        assert len(served.connections) == 1
    finally:
        await api.close()


async def test_without_it_a_cancelled_request_costs_its_connection(
    server: tuple[Server, str],
) -> None:
    # What the module is for: aiohttp closes the connection of a request cancelled while its
    # answer was awaited, and the next request opens another.
    served, url = server
    api = client.ApiClient(client.Configuration(host=url))
    try:
        call = asyncio.ensure_future(get(api, slow=True))
        await served.arrived.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        served.release.set()
        await get(api)
        assert len(served.connections) == 2
    finally:
        await api.close()
