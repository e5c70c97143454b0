"""Tool servers as the operator keeps them: followed, discovered once per generation, offered
to each turn of the tasks that may use them.

**Following.** One watch per watched namespace (or one for the cluster) keeps every
``HarnessToolServer`` in memory. Tool servers are few and rarely change, and a task must see
its namespace's servers whatever shard it is in, so they are not part of the sharded kopf
instances (whose watches only see objects labelled with this replica's shards).

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
import datetime as dt
import logging
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from kubernetes_asyncio import client
from pydantic import ValidationError

from tiny_harness.core.destinations import DestinationSettings
from tiny_harness.core.secret_destinations import OriginError, origin_of
from tiny_harness.core.task import Condition, TaskSpec
from tiny_harness.core.tool_server import DiscoveredTool, ToolServerSpec, ToolServerStatus
from tiny_harness.core.tools import Tool
from tiny_harness.kube.client import KubeError, Obj
from tiny_harness.kube.secrets import SecretUnusableError
from tiny_harness.kube.toolservers import (
    follow_tool_servers,
    header_values,
    patch_tool_server_status,
)
from tiny_harness.kube.watching import FullListing, watch_client
from tiny_harness.operator.metrics import OperatorMetrics
from tiny_harness.operator.tool_offers import NO_OFFER, Available, Offer, compose_offer
from tiny_harness.toolservers.client import Endpoint, Listing, ToolServerError, list_tools
from tiny_harness.toolservers.offered import CallObserver, build_tools, select_tools

log = logging.getLogger(__name__)

Key = tuple[str, str]

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


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class _Offered:
    generation: int
    tools: tuple[Tool, ...]


class _NotReadyError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class _Server:
    """One HarnessToolServer as this replica knows it."""

    namespace: str
    name: str
    obj: Obj
    offered: _Offered | None = None
    failures: int = 0
    stale: bool = False
    discovering: asyncio.Task[None] | None = None
    #: The generation the last discovery was for: an event of the same generation (such as
    #: our own status write) starts none; a failed one is tried again by ``retry``.
    attempted: int | None = None
    retry: asyncio.TimerHandle | None = None
    #: When a failed call last asked for a new discovery (monotonic).
    suspected: float = float("-inf")
    #: When the last discovery started (monotonic).
    tried: float = float("-inf")

    @property
    def generation(self) -> int:
        return int(self.obj["metadata"].get("generation") or 0)

    @property
    def default(self) -> bool:
        return bool((self.obj.get("spec") or {}).get("default"))

    @property
    def status(self) -> ToolServerStatus:
        try:
            return ToolServerStatus.model_validate(self.obj.get("status") or {})
        except ValidationError:
            return ToolServerStatus()

    def current(self) -> _Offered | None:
        offered = self.offered
        return offered if offered is not None and offered.generation == self.generation else None


class ToolServers:
    """Every tool server this replica can offer, kept current by :meth:`run`."""

    def __init__(
        self,
        api: client.ApiClient,
        metrics: OperatorMetrics,
        *,
        namespaces: Collection[str] = (),
        taken: Iterable[str] = (),
        destinations: DestinationSettings | None = None,
    ) -> None:
        self.api = api
        self.metrics = metrics
        #: What every connection to a server is checked against.
        self.destinations = destinations or DestinationSettings()
        self.namespaces: tuple[str | None, ...] = tuple(namespaces) or (None,)
        #: Names the loop's own tools use; a server's tool may not shadow one.
        self.taken = frozenset(taken)
        self.servers: dict[Key, _Server] = {}
        self._listed: dict[str | None, asyncio.Event] = {
            ns: asyncio.Event() for ns in self.namespaces
        }
        self._waited: set[str] = set()

    # -- following -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Follow the tool servers until cancelled."""
        watcher = watch_client(self.api)
        try:
            await asyncio.gather(*(self._follow(watcher, ns) for ns in self.namespaces))
        finally:
            for server in self.servers.values():
                self._stop(server)
            await watcher.close()

    async def _follow(self, watcher: client.ApiClient, namespace: str | None) -> None:
        delay = 0.5
        while True:
            try:
                async for change in follow_tool_servers(watcher, namespace):
                    delay = 0.5
                    if isinstance(change, FullListing):
                        self._relisted(namespace, change.objects)
                        self._listed[namespace].set()
                    elif change.type == "DELETED":
                        self._gone(_key(change.object))
                    else:
                        self._seen(change.object)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the API away, or refusing: follow again, never give up
                log.warning("tool servers in %s: watch failed (%s)", namespace or "all", exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)

    def _relisted(self, namespace: str | None, objects: Sequence[Obj]) -> None:
        keys = {_key(o) for o in objects}
        for key in [k for k in self.servers if namespace in (None, k[0]) and k not in keys]:
            self._gone(key)
        for obj in objects:
            self._seen(obj)

    def _seen(self, obj: Obj) -> None:
        key = _key(obj)
        server = self.servers.get(key)
        if server is None:
            server = self.servers[key] = _Server(*key, obj=obj)
        else:
            server.obj = obj
        if server.attempted != server.generation:
            self._discover_soon(server)

    def _gone(self, key: Key) -> None:
        server = self.servers.pop(key, None)
        if server is not None:
            self._stop(server)

    def _stop(self, server: _Server) -> None:
        if server.retry is not None:
            server.retry.cancel()
        if server.discovering is not None:
            server.discovering.cancel()

    # -- discovery -----------------------------------------------------------------------------

    def _discover_soon(self, server: _Server) -> None:
        if server.discovering is not None and not server.discovering.done():
            return  # when it ends, a newer generation that arrived meanwhile gets its own
        if server.retry is not None:
            server.retry.cancel()
            server.retry = None
        server.discovering = asyncio.create_task(
            self._discover(server), name=f"discover {server.namespace}/{server.name}"
        )

    async def _discover(self, server: _Server) -> None:
        label = f"{server.namespace}/{server.name}"
        if server.attempted != server.generation:
            server.failures = 0  # a new spec starts its retries afresh
        generation = server.attempted = server.generation
        server.tried = time.monotonic()
        try:
            outcome = await self._find_tools(server)
        except asyncio.CancelledError:
            raise
        except _NotReadyError as exc:
            server.offered = None
            server.failures += 1
            self.metrics.tool_server_discoveries.labels(server=label, outcome=exc.reason).inc()
            log.info("tool server %s not ready: %s: %s", label, exc.reason, exc.message)
            message = f"{exc.message} ({self._retry_later(server)})"
            await self._write_ready(server, generation, "False", exc.reason, message, None)
        except Exception:
            log.exception("tool server %s: discovery failed", label)
            server.offered = None
            server.failures += 1
            self._retry_later(server)
        else:
            server.failures = 0
            self.metrics.tool_server_discoveries.labels(server=label, outcome=outcome).inc()
        finally:
            if server.generation != generation and self.servers.get(_at(server)) is server:
                server.discovering = None
                self._discover_soon(server)  # the spec changed meanwhile: now, not at a retry

    def _retry_later(self, server: _Server) -> str:
        """Schedule the next background discovery of a server that failed one, unless it has
        had its share; what the status says of it."""
        attempt = f"attempt {server.failures} of {DISCOVERY_ATTEMPTS}"
        if server.failures >= DISCOVERY_ATTEMPTS:
            return (
                f"{attempt}; tried again when a task that names it starts a turn, or when its "
                "spec changes"
            )
        delay = min(2.0 ** (server.failures - 1), RETRY_CAP)
        server.retry = asyncio.get_running_loop().call_later(delay, self._discover_soon, server)
        return f"{attempt}; trying again in {delay:.0f}s"

    def _ask_again(self, server: _Server) -> None:
        """A turn wants a server whose background retries have stopped: one more discovery,
        at most every :data:`ASK_AGAIN_AFTER` seconds (this turn goes on without it)."""
        idle = server.retry is None and (server.discovering is None or server.discovering.done())
        if (
            idle
            and server.failures >= DISCOVERY_ATTEMPTS
            and time.monotonic() - server.tried >= ASK_AGAIN_AFTER
        ):
            self._discover_soon(server)

    async def _find_tools(self, server: _Server) -> str:
        """Offer the server's tools for its generation; how they were found (listed or
        adopted). Raises :class:`_NotReadyError` saying why the server cannot be offered."""
        generation = server.generation
        try:
            spec = ToolServerSpec.model_validate(server.obj.get("spec") or {})
        except ValidationError as exc:
            raise _NotReadyError("InvalidSpec", f"the spec is not valid: {exc}") from None
        try:
            origin = origin_of(spec.url)
        except OriginError as exc:
            raise _NotReadyError("InvalidSpec", f"spec.url: {exc}") from None
        try:
            headers = await header_values(
                self.api, server.namespace, server.name, spec.headers, origin=origin
            )
        except SecretUnusableError as exc:
            raise _NotReadyError(exc.reason, str(exc)) from None
        except KubeError as exc:
            raise _NotReadyError("SecretUnreadable", str(exc)) from None
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
                raise _NotReadyError(_REASONS[exc.outcome], str(exc)) from None
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
        """Write the discovery's outcome, unless the status already says it."""
        old = server.status
        was = old.ready()
        tools = found[0] if found is not None else ()
        if (
            was is not None
            and (was.status, was.reason, was.message) == (ready, reason, message)
            and old.observed_generation == generation
            and old.tools == tools
        ):
            return
        changed = was is None or was.status != ready
        condition = Condition(
            type="Ready",
            status=ready,
            reason=reason,
            message=message[:32768],
            last_transition_time=_now() if changed or was is None else was.last_transition_time,
            observed_generation=generation,
        )
        status: dict[str, Any] = {
            "tools": [t.model_dump(mode="json", by_alias=True) for t in tools],
            "toolCount": len(tools),
            "conditions": [condition.model_dump(mode="json", by_alias=True, exclude_none=True)],
            "observedGeneration": generation,
        }
        if found is not None and found[1] is not None:
            status["server"] = found[1].server_info
            status["discoveryTime"] = _now()
        try:
            written = await patch_tool_server_status(
                self.api, server.namespace, server.name, status
            )
        except Exception as exc:  # gone, or the API away: the next event or retry writes it
            log.info(
                "tool server %s/%s: status not written (%s)", server.namespace, server.name, exc
            )
            return
        server.obj = written

    def _observer(self, server: _Server) -> CallObserver:
        label = f"{server.namespace}/{server.name}"

        def observe(_: str, outcome: str, seconds: float) -> None:
            self.metrics.tool_server_calls.labels(server=label, outcome=outcome).inc()
            self.metrics.tool_server_call_seconds.labels(server=label).observe(seconds)
            if (
                outcome in _SUSPECT
                and self.servers.get(_at(server)) is server
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
            ready = server.status.ready()
            why = f"{ready.reason}: {ready.message}" if ready else "not discovered yet"
            found[name] = Available(current.tools if current else None, why)
        return compose_offer(namespace, names, found, self.taken)

    async def _settled(self, server: _Server) -> _Offered | None:
        """The server's tools for its generation, waiting for a discovery in flight (after a
        restart, the first one), at most its timeout."""
        task = server.discovering
        if server.current() is None and task is not None and not task.done():
            with contextlib.suppress(Exception):
                spec = server.obj.get("spec") or {}
                timeout = float(spec.get("timeoutSeconds") or 30) + 5
                async with asyncio.timeout(timeout):
                    await asyncio.shield(task)
        return server.current()


def _at(server: _Server) -> Key:
    return server.namespace, server.name


def _key(obj: Obj) -> Key:
    meta = obj["metadata"]
    return str(meta.get("namespace") or ""), str(meta["name"])
