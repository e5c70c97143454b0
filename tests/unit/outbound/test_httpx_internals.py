"""The one reach into the HTTP stacks' internals still holds for the versions installed: on
both stacks, a transport's connections go through the backend put under it, and a stack that
keeps its pool elsewhere is refused with an error naming the versions to look at."""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import version
from typing import Any

import httpcore
import httpcore2
import httpx
import httpx2
import pytest

from tiny_harness.outbound.httpx_internals import (
    HTTPX,
    HTTPX2,
    HttpInternalsChangedError,
    Stack,
    put_network_backend,
)

#: An address no test reaches (TEST-NET-2): only the backend under the transport sees it.
NOWHERE = "198.51.100.7"


class RecordingBackend:
    """A network backend that records where it was asked to connect, and connects nowhere."""

    def __init__(self, refusal: type[Exception]) -> None:
        self.refusal = refusal
        self.asked: list[tuple[str, int]] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> Any:
        self.asked.append((host, port))
        raise self.refusal(f"{host}:{port} is not for tests")

    async def sleep(self, seconds: float) -> None:
        return None


def versions(stack: Stack) -> str:
    return f"{stack.client} {version(stack.client)} with {stack.core} {version(stack.core)}"


async def test_an_httpx_transport_opens_its_connections_through_the_backend_put_under_it() -> None:
    backend = RecordingBackend(httpcore.ConnectError)
    transport = httpx.AsyncHTTPTransport()
    put_network_backend(transport, backend, HTTPX)

    async with httpx.AsyncClient(transport=transport, trust_env=False) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://{NOWHERE}:8080/card")

    assert backend.asked == [(NOWHERE, 8080)], (
        f"{versions(HTTPX)} no longer opens connections through the pool's network backend: "
        "tiny_harness/outbound/httpx_internals.py must follow it"
    )


async def test_an_httpx2_transport_opens_its_connections_through_the_backend_put_under_it() -> None:
    backend = RecordingBackend(httpcore2.ConnectError)
    transport = httpx2.AsyncHTTPTransport()
    put_network_backend(transport, backend, HTTPX2)

    async with httpx2.AsyncClient(transport=transport, trust_env=False) as client:
        with pytest.raises(httpx2.ConnectError):
            await client.get(f"http://{NOWHERE}:8080/tools")

    assert backend.asked == [(NOWHERE, 8080)], (
        f"{versions(HTTPX2)} no longer opens connections through the pool's network backend: "
        "tiny_harness/outbound/httpx_internals.py must follow it"
    )


class PoolElsewhere:
    """A transport as a later version might build it: its pool under another name."""

    def __init__(self) -> None:
        self._connection_pool = httpcore.AsyncConnectionPool()


class BackendElsewhere:
    """A transport whose pool keeps its backend under another name."""

    def __init__(self) -> None:
        self._pool = httpcore.AsyncConnectionPool()
        del self._pool._network_backend


@pytest.mark.parametrize("moved", [PoolElsewhere, BackendElsewhere])
def test_a_stack_whose_internals_moved_is_refused_naming_its_versions(moved: type) -> None:
    with pytest.raises(HttpInternalsChangedError) as refused:
        put_network_backend(moved(), RecordingBackend(httpcore.ConnectError), HTTPX)

    message = str(refused.value)
    assert f"httpx {version('httpx')}" in message
    assert f"httpcore {version('httpcore')}" in message
    assert "tiny_harness/outbound/httpx_internals.py" in message
