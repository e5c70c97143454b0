"""The one place that reaches past the HTTP stacks' public API: putting a network backend
under a transport's connections.

The guard must sit where connections are opened (:mod:`tiny_harness.outbound.guard` says why),
which in both stacks is the connection pool's network backend. ``httpcore``'s pool takes one
publicly (``AsyncConnectionPool(network_backend=...)``), but ``httpx``'s transport builds its
pool itself and takes none. Writing a transport of our own over a pool we build would reach no
less far: it would copy the transport's request and response translation and its mapping of
connection errors to ``httpx``'s (a private table), which the callers classify failures by. So
the transport stays ``httpx``'s own, and one function sets the backend of the pool it built
(``transport._pool._network_backend``). When an upgrade moves either attribute,
:func:`put_network_backend` refuses with :class:`HttpInternalsChangedError`, naming the
versions, rather than leave a client unguarded; ``tests/unit/outbound/test_httpx_internals.py``
fails with that error, and checks that a connection really goes through the backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

import httpcore
import httpcore2

from tiny_harness.core.errors import HarnessError


@dataclass(frozen=True)
class Stack:
    """One HTTP stack: the client library, and the connection layer its transport builds on."""

    client: str
    core: str
    pool: type

    def versions(self) -> str:
        """``httpx 0.28.1 with httpcore 1.0.9``: the versions installed, for an error."""
        return f"{_installed(self.client)} with {_installed(self.core)}"


#: The ``a2a`` SDK's stack (agents and their cards).
HTTPX = Stack("httpx", "httpcore", httpcore.AsyncConnectionPool)
#: The ``mcp`` SDK's stack (tool servers).
HTTPX2 = Stack("httpx2", "httpcore2", httpcore2.AsyncConnectionPool)


class HttpInternalsChangedError(HarnessError, RuntimeError):
    """The stack installed no longer keeps its connection pool where this module looks: its
    connections cannot be guarded, so no client is made."""

    def __init__(self, stack: Stack, what: str) -> None:
        super().__init__(
            f"{stack.versions()}: {what}, so the destination guard cannot be put under its "
            "connections. tiny_harness/outbound/httpx_internals.py must follow this version "
            f"(or pin the {stack.client} and {stack.core} versions it was written for)"
        )
        self.stack = stack


def put_network_backend(transport: object, backend: object, stack: Stack) -> None:
    """Make ``transport`` (``stack``'s ``AsyncHTTPTransport``, made without a proxy) open
    every connection through ``backend``; :class:`HttpInternalsChangedError` when the stack's
    internals are not where they were."""
    pool = getattr(transport, "_pool", None)
    if not isinstance(pool, stack.pool):
        raise HttpInternalsChangedError(
            stack, f"its transport keeps no {stack.core}.AsyncConnectionPool in `_pool`"
        )
    if not hasattr(pool, "_network_backend"):
        raise HttpInternalsChangedError(
            stack, "its connection pool keeps no network backend in `_network_backend`"
        )
    setattr(pool, "_network_backend", backend)  # noqa: B010 (a private attribute, named once)


def _installed(name: str) -> str:
    try:
        return f"{name} {version(name)}"
    except PackageNotFoundError:
        return f"{name} (version unknown)"
