"""The guard: every connection a tool server's, an agent's or a card's client opens is checked
against the destination policy just before it is made.

The guard sits in the connection layer (a network backend, :class:`GuardedBackend`, one for both
stacks), not in front of the request: there the host has been resolved, by the guard itself,
and the address it checked is the one it connects to. A name that resolves to a refused address
is refused, whatever its first answer was, and TLS still verifies the certificate against the
URL's host (the connection layer sends the host name, not the address, as SNI). A refusal is a
:class:`DestinationRefusedError`, raised before any byte leaves the machine; it is a
``ConnectError`` of both HTTP stacks, so every caller already treats it as a connection that
could not be made, and the callers that classify failures name it (the address, the rule and
the setting to change).
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

import anyio
import httpcore
import httpcore2

from tiny_harness.core.destinations import DestinationSettings, Refusal
from tiny_harness.core.errors import HarnessError

T = TypeVar("T")
S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)

#: Resolves a host name to the addresses a connection may go to (``getaddrinfo``).
Resolver = Callable[[str, int], Awaitable[list[str]]]


class DestinationRefusedError(HarnessError, httpcore.ConnectError, httpcore2.ConnectError):
    """The destination policy refuses the address a connection would go to."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class _UnresolvedError(httpcore.ConnectError, httpcore2.ConnectError):
    """A name that does not resolve: a connection that could not be made."""


class _ResolveTimeoutError(httpcore.ConnectTimeout, httpcore2.ConnectTimeout):
    """A name whose resolution took longer than the connect timeout."""


async def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (an address resolves to itself), in the resolver's
    order, without repeats."""
    found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def refusal_in(exc: BaseException | None) -> DestinationRefusedError | None:
    """The refusal behind ``exc``, however many layers wrapped it (the HTTP stack maps it to
    its own ConnectError, an SDK to its own error, a task group to an exception group)."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc] if exc is not None else []
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, DestinationRefusedError):
            return current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


class Guard:
    """The one check: which addresses a connection to ``host:port`` may be made to."""

    def __init__(self, policy: DestinationSettings, resolver: Resolver = resolve) -> None:
        self.policy = policy
        self.resolver = resolver

    async def addresses(self, host: str, port: int, within: float | None = None) -> list[str]:
        """The addresses to connect to, in order; :class:`DestinationRefusedError` when the
        name, or any address it resolves to, is refused."""
        refusal = self.policy.refuse_name(host)
        if refusal is not None:
            raise DestinationRefusedError(refusal)
        if self.policy.trusts(host):
            return [host]  # listed by name: its DNS is trusted, the stack resolves it
        try:
            with anyio.fail_after(within):
                found = await self.resolver(host, port)
        except TimeoutError:
            raise _ResolveTimeoutError(f"{host} was not resolved within {within}s") from None
        except OSError as exc:
            raise _UnresolvedError(f"{host} could not be resolved ({exc})") from None
        if not found:
            raise _UnresolvedError(f"{host} resolves to no address")
        for address in found:
            refusal = self.policy.refuse_address(address, host)
            if refusal is not None:
                raise DestinationRefusedError(refusal)
        return found

    async def connect(
        self, host: str, port: int, within: float | None, open_: Callable[[str], Awaitable[T]]
    ) -> T:
        """``open_`` one of the addresses ``host`` may be reached at: the first that answers
        (``within``: the connect timeout, which bounds the lookup too)."""
        failure: Exception | None = None
        for address in await self.addresses(host, port, within):
            try:
                return await open_(address)
            except Exception as exc:  # that address did not answer: the next one
                failure = exc
        assert failure is not None
        raise failure


class NetworkBackend(Protocol[S_co]):
    """A connection layer's network backend, by the shape the connection pools call it with:
    ``httpcore``'s and ``httpcore2``'s ``AsyncNetworkBackend`` alike, ``S_co`` their stream."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> S_co: ...

    async def sleep(self, seconds: float) -> None: ...


class GuardedBackend(Generic[S]):
    """A network backend under the guard: ``inner`` opens the connections, to the addresses
    the guard allows. One class for both HTTP stacks, since their connection layers share one
    interface (``S``: the stream type of the stack whose backend ``inner`` is); it is put under
    a transport's connections by :func:`~tiny_harness.outbound.httpx_internals.put_network_backend`.
    """

    def __init__(self, guard: Guard, inner: NetworkBackend[S]) -> None:
        self.guard = guard
        self.inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> S:
        def open_(address: str) -> Awaitable[S]:
            return self.inner.connect_tcp(address, port, timeout, local_address, socket_options)

        return await self.guard.connect(host, port, timeout, open_)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> S:
        raise _UnresolvedError("the guarded clients connect over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)
