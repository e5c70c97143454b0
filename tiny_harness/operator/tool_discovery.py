"""Tool servers as the operator keeps them: followed, discovered once per generation, offered
to each turn of the tasks that may use them.

**Following.** Tool servers are declared endpoints, as agents are: followed, tried with
bounded attempts and their status written by :mod:`tiny_harness.operator.endpoints`, whose
rules hold here. What follows is what discovering one means. A new spec while a discovery is
in flight takes its place; a failed call's request for a new discovery waits for the one in
flight.

**Discovery**, per server and generation: read the header Secrets (each used only when its
annotation lets this server send to the origin of its ``spec.url``), list the tools
(``tools/list``), apply the allow-list, and write what was found into the server's status with
a ``Ready`` condition. A replica that finds the status already describing this generation as
ready (another replica's discovery, or its own before a restart) takes the tools from it
without listing them again; it still reads the Secrets, which are never in the status. A
failed discovery is ``Ready=False`` with the reason, and is tried again with backoff (1 s
doubling), :data:`DISCOVERY_ATTEMPTS` times; then a turn that wants the server asks for one
(rate-limited), and a change of its spec does at once; a call that finds the server
unreachable, refusing or answering garbage asks for a new discovery (which reads the Secrets
again), so a server that went away stops being offered and a rotated Secret is picked up.
Every connection goes through the destination policy (``[operator.destinations]``,
:mod:`tiny_harness.outbound`): a refused address is ``Ready=False`` with reason
``DestinationRefused``, its message naming the address, the rule and the setting to change.

**Offering.** At the start of each turn :meth:`ToolServers.offer` picks the servers the task
names (``spec.toolServers``) and those marked ``default`` in its namespace. A ready server's
tools join the turn (:class:`~tiny_harness.core.tools.TurnTools`); one that does not exist or
is not ready is left out, the model is told which and why, and the task's
``ToolServersReady`` condition says the same to people (written with the turn's first status
write, so it costs no write of its own). What to offer, given what is known, is decided in
:mod:`tiny_harness.operator.tool_offers`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from kubernetes_asyncio import client
from pydantic import ValidationError

from tiny_harness.core.approval import ToolServerApproval
from tiny_harness.core.backoff import Backoff
from tiny_harness.core.clock import rfc3339
from tiny_harness.core.destinations import DestinationSettings
from tiny_harness.core.secret_destinations import OriginError, origin_of
from tiny_harness.core.task import TaskSpec
from tiny_harness.core.tool_server import (
    SECRET_ANNOTATION,
    DiscoveredTool,
    ToolServerSpec,
    ToolServerStatus,
)
from tiny_harness.core.tools import Tool
from tiny_harness.kube.client import Obj
from tiny_harness.kube.names import TOOL_SERVER_PLURAL
from tiny_harness.operator.endpoints import (
    Declared,
    Endpoints,
    Key,
    NotReadyError,
    ready_condition,
    secret_headers,
)
from tiny_harness.operator.metrics import OperatorMetrics
from tiny_harness.operator.tool_offers import NO_OFFER, Available, Offer, compose_offer

if TYPE_CHECKING:  # the MCP SDK is imported when a server is first discovered (_find_tools)
    from tiny_harness.toolservers.client import Listing
    from tiny_harness.toolservers.offered import CallObserver

log = logging.getLogger(__name__)

#: The longest wait between two discoveries of a server that is not ready.
RETRY_CAP: Final = 300.0
#: Discoveries of a server that is not ready before the background retries stop (1 s doubling:
#: about four minutes). Then a turn of a task that names it asks for one, at most every
#: :data:`ASK_AGAIN_AFTER` seconds, and a change of its spec does at once: nothing retries
#: for ever unattended.
DISCOVERY_ATTEMPTS: Final = 8
ASK_AGAIN_AFTER: Final = 60.0
#: A call's failure asks for a new discovery at most this often per server.
REDISCOVER_AFTER: Final = 10.0
#: How long a turn waits for the first listing of its namespace's servers (after a restart).
FIRST_LISTING_WAIT: Final = 10.0
#: Outcomes of a call that make the server's tools (or its headers: a rotated Secret) suspect.
_SUSPECT: Final = frozenset({"unreachable", "refused", "invalid"})
#: Ready=False reasons by the kind of failure discovery met.
_REASONS: Final = {
    "timeout": "Timeout",
    "unreachable": "Unreachable",
    "refused": "Refused",
    "invalid": "InvalidResponse",
    "blocked": "DestinationRefused",
}


@dataclass(frozen=True)
class _Offered:
    generation: int
    tools: tuple[Tool, ...]


@dataclass(eq=False)
class _Server(Declared):
    """One HarnessToolServer as this replica knows it."""

    offered: _Offered | None = None
    #: A call found the server failing: the next discovery lists its tools again rather than
    #: adopting them from the status.
    stale: bool = False
    #: When a failed call last asked for a new discovery (monotonic).
    suspected: float = float("-inf")

    @property
    def discovering(self) -> asyncio.Task[None] | None:
        return self.running

    @property
    def default(self) -> bool:
        return bool((self.obj.get("spec") or {}).get("default"))

    @property
    def status(self) -> ToolServerStatus:
        return _read_status(self.obj)

    def current(self) -> _Offered | None:
        offered = self.offered
        return offered if offered is not None and offered.generation == self.generation else None


def _approval_of(obj: Obj) -> ToolServerApproval | None:
    """The server's approval policy. A spec the schema should have refused gates every tool
    with the defaults rather than none: an approval asked for is never silently dropped."""
    raw = (obj.get("spec") or {}).get("approval")
    if raw is None:
        return None
    try:
        return ToolServerApproval.model_validate(raw)
    except ValidationError:
        log.warning(
            "tool server %s: spec.approval is invalid; every call needs approval",
            obj["metadata"].get("name"),
        )
        return ToolServerApproval()


def _read_status(obj: Obj) -> ToolServerStatus:
    try:
        return ToolServerStatus.model_validate(obj.get("status") or {})
    except ValidationError:
        return ToolServerStatus()


class ToolServers(Endpoints[_Server, ToolServerStatus]):
    """Every tool server this replica can offer, kept current by :meth:`run`."""

    plural = TOOL_SERVER_PLURAL
    max_attempts = DISCOVERY_ATTEMPTS
    gave_up = "tried again when a task that names it starts a turn, or when its spec changes"
    times = frozenset({"discovery_time"})

    def __init__(
        self,
        api: client.ApiClient,
        metrics: OperatorMetrics,
        *,
        namespaces: Collection[str] = (),
        taken: Iterable[str] = (),
        destinations: DestinationSettings | None = None,
    ) -> None:
        super().__init__(api, namespaces)
        self.metrics = metrics
        #: What every connection to a server is checked against.
        self.destinations = destinations or DestinationSettings()
        #: Names the loop's own tools use; a server's tool may not shadow one.
        self.taken = frozenset(taken)
        self._waited: set[str] = set()

    @property
    def servers(self) -> dict[Key, _Server]:
        return self.entries

    # -- the kind (operator/endpoints.py) ------------------------------------------------------

    def declared(self, namespace: str, name: str, obj: Obj) -> _Server:
        return _Server(namespace, name, obj)

    def parse_status(self, obj: Obj) -> ToolServerStatus:
        return _read_status(obj)

    def backoff(self) -> Backoff:
        return Backoff(first=1.0, cap=RETRY_CAP, jitter=0.0)

    async def resolve(self, entry: _Server) -> None:
        label = f"{entry.namespace}/{entry.name}"
        try:
            outcome = await self._find_tools(entry)
        except Exception:
            entry.offered = None
            raise
        self.metrics.tool_server_discoveries.labels(server=label, outcome=outcome).inc()

    async def not_ready(self, entry: _Server, error: NotReadyError, message: str) -> None:
        label = f"{entry.namespace}/{entry.name}"
        self.metrics.tool_server_discoveries.labels(server=label, outcome=error.reason).inc()
        log.info("tool server %s not ready: %s: %s", label, error.reason, error.message)
        await self._write_ready(entry, entry.generation, "False", error.reason, message, None)

    # -- discovery -----------------------------------------------------------------------------

    def _discover_soon(self, server: _Server) -> None:
        """Discover the server now, unless a discovery is already in flight."""
        if not server.resolving:
            self.resolve_now(server)

    def _ask_again(self, server: _Server) -> None:
        """A turn wants a server whose background retries have stopped: one more discovery,
        at most every :data:`ASK_AGAIN_AFTER` seconds (this turn goes on without it)."""
        if (
            server.retry is None
            and not server.resolving
            and server.failures >= DISCOVERY_ATTEMPTS
            and time.monotonic() - server.tried >= ASK_AGAIN_AFTER
        ):
            self.resolve_now(server)

    async def _find_tools(self, server: _Server) -> str:
        """Offer the server's tools for its generation; how they were found (listed or
        adopted). Raises :class:`NotReadyError` saying why the server cannot be offered.

        The MCP client is imported here, not with the module: its SDK's models take longer to
        import than the rest of the operator, and an operator in a namespace that declares no
        tool server never needs them (each test's operator starts in about half the time)."""
        from tiny_harness.toolservers.client import Endpoint, ToolServerError, list_tools
        from tiny_harness.toolservers.offered import build_tools, select_tools

        generation = server.generation
        try:
            spec = ToolServerSpec.model_validate(server.obj.get("spec") or {})
        except ValidationError as exc:
            raise NotReadyError("InvalidSpec", f"the spec is not valid: {exc}") from None
        try:
            origin = origin_of(spec.url)
        except OriginError as exc:
            raise NotReadyError("InvalidSpec", f"spec.url: {exc}") from None
        headers = await secret_headers(
            self.api,
            server.namespace,
            ((h.name, h.value_from.secret_key_ref) for h in spec.headers),
            user="tool server",
            name=server.name,
            annotation=SECRET_ANNOTATION,
            destination=origin,
            where="the origin of spec.url",
            refusals_last=False,
        )
        endpoint = Endpoint(
            server=server.name,
            url=spec.url,
            headers=headers,
            timeout=spec.timeout_seconds,
            destinations=self.destinations,
        )
        status = server.status
        ready = status.ready()
        if (
            not server.stale
            and status.observed_generation == generation
            and ready is not None
            and ready.status == "True"
        ):
            discovered, how = status.tools, "adopted"
        else:
            try:
                listing = await list_tools(endpoint)
            except ToolServerError as exc:
                raise NotReadyError(_REASONS[exc.outcome], str(exc)) from None
            discovered, problems = select_tools(server.name, listing.tools, spec.tools)
            message = f"{len(discovered)} tool(s) offered"
            if problems:
                message += "; left out: " + "; ".join(problems)
            await self._write_ready(
                server, generation, "True", "Discovered", message, (discovered, listing)
            )
            how = "listed"
        server.offered = _Offered(
            generation,
            build_tools(
                endpoint,
                discovered,
                max_result_bytes=spec.max_result_bytes,
                observe=self._observer(server),
            ),
        )
        server.stale = False
        return how

    async def _write_ready(
        self,
        server: _Server,
        generation: int,
        ready: Literal["True", "False"],
        reason: str,
        message: str,
        found: tuple[tuple[DiscoveredTool, ...], Listing | None] | None,
    ) -> None:
        """Write the discovery's outcome (operator/endpoints.py: unless the status already
        says it): what was found for ``generation``, and the Ready condition."""
        tools, listing = found if found is not None else ((), None)
        await self.write_status(
            server,
            ToolServerStatus(
                tools=tools,
                tool_count=len(tools),
                conditions=(ready_condition(ready, reason, message, generation),),
                observed_generation=generation,
                server=listing.server_info if listing is not None else None,
                discovery_time=rfc3339(digits=0) if listing is not None else None,
            ),
        )

    def _observer(self, server: _Server) -> CallObserver:
        label = f"{server.namespace}/{server.name}"

        def observe(_: str, outcome: str, seconds: float) -> None:
            self.metrics.tool_server_calls.labels(server=label, outcome=outcome).inc()
            self.metrics.tool_server_call_seconds.labels(server=label).observe(seconds)
            if (
                outcome in _SUSPECT
                and self.servers.get(server.key) is server
                and time.monotonic() - server.suspected >= REDISCOVER_AFTER
            ):
                server.suspected = time.monotonic()
                server.stale = True
                self._discover_soon(server)

        return observe

    # -- offering ------------------------------------------------------------------------------

    async def offer(self, namespace: str, spec: TaskSpec) -> Offer:
        """The tools this turn of a task in ``namespace`` gets, and its condition."""
        listed = self._listed.get(namespace) or self._listed.get(None)
        if listed is None:
            return NO_OFFER  # not a namespace this operator follows
        if not listed.is_set() and namespace not in self._waited:
            # Just started: the namespace's defaults are not known yet. Waited for once: with
            # the API away (or no CRD), later turns go on without tool servers at once.
            self._waited.add(namespace)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FIRST_LISTING_WAIT):
                    await listed.wait()
        defaults = sorted(
            s.name for s in self.servers.values() if s.namespace == namespace and s.default
        )
        names = [*spec.tool_servers, *(n for n in defaults if n not in spec.tool_servers)]
        found: dict[str, Available] = {}
        for name in names:
            server = self.servers.get((namespace, name))
            if server is None:
                continue
            self._ask_again(server)
            current = await self._settled(server)
            status = server.status
            ready = status.ready()
            why = f"{ready.reason}: {ready.message}" if ready else "not discovered yet"
            found[name] = Available(
                current.tools if current else None,
                why,
                names=tuple((t.name, t.exposed_as) for t in status.tools),
                approval=_approval_of(server.obj),
            )
        return compose_offer(namespace, names, found, self.taken)

    async def _settled(self, server: _Server) -> _Offered | None:
        """The server's tools for its generation, waiting for a discovery in flight (after a
        restart, the first one; or the one a newer spec started in its place), at most its
        timeout. Waiting never cancels the discovery, nor fails with it."""
        spec = server.obj.get("spec") or {}
        timeout = float(spec.get("timeoutSeconds") or 30) + 5
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while server.current() is None and server.running is not None:
                    if server.running.done() or self.servers.get(server.key) is not server:
                        break
                    await asyncio.wait({server.running})
        return server.current()
