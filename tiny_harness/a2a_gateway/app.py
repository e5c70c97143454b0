"""The gateway as one ASGI app, and the server that runs it.

:func:`build_app` puts together the SDK's routes (agent card, JSON-RPC, HTTP+JSON with SSE)
over :class:`~tiny_harness.a2a_gateway.handler.GatewayRequestHandler`, and in front of them, in
this order: the request's trace span, metrics, the body size limit, authentication, the
participant requirement, the rate limit, and the status of a refusal for what a request would
store. Nothing after the limits runs for a refused request, and the public paths are never
authenticated (so they cost no TokenReview). While it runs, the app follows what is stored in
its namespace for the quotas (:mod:`.tally`).
The web UI's files (:mod:`.web`) are served beside them at ``/ui/``, public like the card.

:func:`serve_gateway` runs it with uvicorn until cancelled; ``tiny-harness gateway`` calls it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Final

import uvicorn
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from kubernetes_asyncio import client
from starlette.applications import Starlette
from starlette.authentication import AuthenticationBackend
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from tiny_harness.a2a_gateway.api_pool import finish_when_cancelled
from tiny_harness.a2a_gateway.call_context import GatewayCallContextBuilder
from tiny_harness.a2a_gateway.card import (
    JSONRPC_PATH,
    REST_PREFIX,
    SCHEMA_PATH,
    build_agent_card,
    registered_commands,
)
from tiny_harness.a2a_gateway.event_ids import EventIds
from tiny_harness.a2a_gateway.handler import GatewayRequestHandler
from tiny_harness.a2a_gateway.identity import Authenticate, RequireParticipant, identity_backend
from tiny_harness.a2a_gateway.limits import (
    BodySizeLimit,
    ParticipantRateLimit,
    QueryNumbers,
    RefusalStatus,
)
from tiny_harness.a2a_gateway.metrics import GatewayMetrics, MetricsMiddleware
from tiny_harness.a2a_gateway.namespace_feed import NamespaceFeed
from tiny_harness.a2a_gateway.store import KubeTaskStore
from tiny_harness.a2a_gateway.stream import TaskStreams
from tiny_harness.a2a_gateway.stream_limits import StreamLimits
from tiny_harness.a2a_gateway.tally import QuotaTally
from tiny_harness.a2a_gateway.tracing import TracingMiddleware
from tiny_harness.a2a_gateway.waiting import Waits
from tiny_harness.a2a_gateway.web import WHOAMI_PATH, is_ui_path, ui_routes
from tiny_harness.core.command_spec import CommandSpec
from tiny_harness.core.reach import DEFAULT_MAX_SUB_TASK_DEPTH
from tiny_harness.core.schemas import generated_files
from tiny_harness.core.settings import GatewaySettings, Settings
from tiny_harness.kube.client import connect
from tiny_harness.kube.watching import watch_client

log = logging.getLogger(__name__)

HEALTH_PATH: Final = "/healthz"
#: The gateway's connections to the API server for short requests (reads, writes).
API_CONNECTIONS: Final = 32
METRICS_PATH: Final = "/metrics"
_SCHEMAS: Final = {f"{SCHEMA_PATH}/{name}": text for name, text in generated_files().items()}


class _PublicPaths(frozenset[str]):
    """These paths, and everything under the web UI's."""

    def __contains__(self, path: object) -> bool:
        return super().__contains__(path) or (isinstance(path, str) and is_ui_path(path))


#: Paths anyone may read without naming themselves; they are not counted as A2A requests.
PUBLIC_PATHS: Final = _PublicPaths(
    {AGENT_CARD_WELL_KNOWN_PATH, HEALTH_PATH, METRICS_PATH, *_SCHEMAS}
)


class _Anonymous(_PublicPaths):
    """The public paths but the UI's sign-in check, which says who the caller is."""

    def __contains__(self, path: object) -> bool:
        return path != WHOAMI_PATH and super().__contains__(path)


#: Paths whose credentials are never read: whatever Authorization header a request there
#: carries, it costs no TokenReview and is never refused for it.
ANONYMOUS_PATHS: Final = _Anonymous(PUBLIC_PATHS)


async def _schema(request: Request) -> Response:
    return Response(_SCHEMAS[request.url.path], media_type="application/schema+json")


async def _health(request: Request) -> Response:
    return PlainTextResponse("ok")


def build_app(
    settings: GatewaySettings,
    api: client.ApiClient,
    *,
    commands: Sequence[CommandSpec] = (),
    metrics: GatewayMetrics | None = None,
    identity: AuthenticationBackend | None = None,
    max_sub_task_depth: int = DEFAULT_MAX_SUB_TASK_DEPTH,
) -> Starlette:
    """The gateway for ``settings`` over the API ``api`` reaches, advertising ``commands``.

    ``api`` is the caller's and stays open; the app opens (and closes, at shutdown) a second
    client of the same identity for its watches, and follows the namespace's tasks and
    messages (:mod:`.namespace_feed`: the reads, the streams and the quotas) from start-up (the
    lifespan) to shutdown. A sub-task it creates for a participant is held to
    ``max_sub_task_depth`` (the operator's setting: one bound for every way a sub-task is made).
    """
    metrics = metrics or GatewayMetrics()
    watches = watch_client(api)
    card = build_agent_card(settings.url, commands)
    feed = NamespaceFeed(
        settings.namespace, QuotaTally(settings), queue_bound=settings.stream_queue_events
    )
    handler = GatewayRequestHandler(
        KubeTaskStore(
            api,
            settings.namespace,
            feed=feed,
            skipped=metrics.skipped,
            max_sub_task_depth=max_sub_task_depth,
        ),
        TaskStreams(feed, watches),
        metrics,
        waits=Waits(take=settings.send_take_seconds, idle=settings.send_idle_seconds),
        limits=StreamLimits.of(settings),
    )
    contexts = GatewayCallContextBuilder()
    routes: list[BaseRoute] = [
        *create_agent_card_routes(card),
        Route(HEALTH_PATH, _health, methods=["GET"]),
        Route(METRICS_PATH, metrics.endpoint, methods=["GET"]),
        *(Route(path, _schema, methods=["GET"]) for path in _SCHEMAS),
        *ui_routes(settings),
        # Protocol 0.3 too, through the SDK's own compatibility layer (JSON-RPC `message/send`
        # and friends on the same endpoint, HTTP+JSON under REST_PREFIX/v1/...), since many
        # deployed clients still speak it.
        *create_jsonrpc_routes(
            handler, JSONRPC_PATH, context_builder=contexts, enable_v0_3_compat=True
        ),
        *create_rest_routes(
            handler, context_builder=contexts, path_prefix=REST_PREFIX, enable_v0_3_compat=True
        ),
    ]
    middleware = [
        Middleware(TracingMiddleware, public_paths=PUBLIC_PATHS),
        Middleware(MetricsMiddleware, metrics=metrics, public_paths=PUBLIC_PATHS),
        Middleware(BodySizeLimit, max_bytes=settings.max_request_bytes, public_paths=PUBLIC_PATHS),
        Middleware(QueryNumbers, public_paths=PUBLIC_PATHS),
        Middleware(
            Authenticate,
            backend=identity or identity_backend(settings, api),
            public_paths=ANONYMOUS_PATHS,
        ),
        Middleware(
            RequireParticipant,
            mode=settings.participant_identity,
            public_paths=PUBLIC_PATHS,
            audiences=settings.token_audiences,
        ),
        Middleware(
            ParticipantRateLimit,
            per_minute=settings.rate_limit_per_minute,
            public_paths=PUBLIC_PATHS,
        ),
        Middleware(RefusalStatus, rest_prefix=REST_PREFIX),
        Middleware(EventIds),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        counting = asyncio.create_task(feed.run(watches), name="namespace-feed")
        counting.add_done_callback(_feed_ended)
        try:
            yield
        finally:
            counting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await counting
            await watches.close()

    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.card = card
    app.state.metrics = metrics
    return app


def _feed_ended(counting: asyncio.Task[None]) -> None:
    # It follows until cancelled (its watches never give up); anything else is a fault whose
    # reads and counts would go stale, so it is said loudly.
    if not counting.cancelled() and counting.exception() is not None:
        log.error("the namespace feed stopped: %r", counting.exception())


#: Allocations (less deallocations) of tracked objects between two young collections: Python's
#: default is 700, which a send's protobuf, pydantic and JSON objects pass several times over.
YOUNG_COLLECTION_OBJECTS: Final = 20_000


def collect_less() -> None:
    """Tell the cyclic garbage collector to leave alone what start-up made, and to run less.

    A send makes thousands of short-lived objects (protobuf messages, pydantic models, parsed
    JSON) that their reference counts free; at Python's default thresholds the collector still
    ran some 60 times a second under 50 concurrent sends, and each full collection walked every
    object the process has (the SDK, the client libraries, the index: some 150,000): a tenth
    of the gateway's CPU in ``bench_gateway.py``. What exists once the gateway is built
    lives as long as the process: frozen (:func:`gc.freeze`), it is never walked again, and a
    young collection every 20,000 allocations instead of 700 lets most objects die first.
    """
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_OBJECTS, older, oldest)


class _HostedServer(uvicorn.Server):
    # The host process (the CLI) owns the signals and stops us by cancelling serve_gateway.
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_gateway(
    settings: Settings,
    kubeconfig: Path | None,
    *,
    commands: Sequence[CommandSpec] | None = None,
) -> None:
    """Serve the gateway on ``settings.gateway.bind`` until cancelled, then stop gracefully
    (open streams get a few seconds to end). The card advertises ``commands``, by default
    every command the operator registers with the same settings."""
    gateway = settings.gateway
    host, port = gateway.bind_address
    if commands is None:
        commands = registered_commands(settings)
    # Short requests only (reads of history, writes): the watches have a client of their own.
    # Each open connection keeps its TLS buffers (some 256 KiB), so the pool is capped: at
    # thousands of streams opening at once, an uncapped pool was a quarter of the memory.
    api = await connect(kubeconfig, max_connections=API_CONNECTIONS)
    # A request whose caller has gone (a client that closed its stream) still ends, so that
    # its connection is kept rather than closed and opened again with a TLS handshake.
    finish_when_cancelled(api)
    try:
        app = build_app(
            gateway,
            api,
            commands=commands,
            max_sub_task_depth=settings.operator.max_sub_task_depth,
        )
        server = _HostedServer(
            uvicorn.Config(
                app,
                host=host,
                port=port,
                log_level="warning",
                access_log=False,
                # uvicorn's records go to the process's own handler and its literal format
                # (core/literal.py), not to a handler of uvicorn's that would print an error
                # quoting a request's text as it is.
                log_config=None,
                lifespan="on",
                timeout_graceful_shutdown=3,
                # Longer than the idle timeout of the load balancers in front of a Service, so
                # the gateway never closes a kept-alive connection a client is about to reuse.
                timeout_keep_alive=75,
                # The peer is the client: X-Forwarded-For is not believed (uvicorn would from
                # loopback), since any caller could then pick the address that token review's
                # failure limit counts against.
                proxy_headers=False,
            )
        )
        log.info(
            "A2A gateway on %s:%d for namespace %s (card: %s%s, identity: %s)",
            host,
            port,
            gateway.namespace,
            gateway.url,
            AGENT_CARD_WELL_KNOWN_PATH,
            gateway.participant_identity,
        )
        collect_less()
        serving = asyncio.ensure_future(server.serve())
        try:
            await asyncio.shield(serving)
        except asyncio.CancelledError:
            server.should_exit = True
            await serving
            raise
    finally:
        await api.close()
