"""Run the operator in this process: kopf embedded in our own asyncio loop.

Embedding (rather than ``kopf run``) lets the CLI own start-up: settings are validated once,
the model adapter is built before any task is touched (a missing key fails here, with the
variable named), the registry is ours, and signals end the process cleanly.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import signal
from collections.abc import Callable, Collection
from pathlib import Path

from tiny_harness.core.commands.hooks import completion_override
from tiny_harness.core.commands.setup import build_command_registry
from tiny_harness.core.errors import ConfigError
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.loop_config import LoopConfig
from tiny_harness.core.settings import Settings
from tiny_harness.core.tools import Tool, ToolRegistry
from tiny_harness.core.tracing import TracedAdapter
from tiny_harness.kube.client import connect, read_object
from tiny_harness.models.config import catalog_for, parse_provider_settings
from tiny_harness.models.factory import build_adapter
from tiny_harness.operator import kopf_decoding
from tiny_harness.operator.agents import AgentDirectory
from tiny_harness.operator.cache import Cache
from tiny_harness.operator.handlers import build_registry
from tiny_harness.operator.kopf_shards import Watches
from tiny_harness.operator.labeller import Labeller
from tiny_harness.operator.liveness import liveness
from tiny_harness.operator.metrics import MeteredAdapter, OperatorMetrics, metered_tools
from tiny_harness.operator.priming import prime
from tiny_harness.operator.remote import Remotes
from tiny_harness.operator.runtime import Runtime
from tiny_harness.operator.shard_leases import ShardManager
from tiny_harness.operator.tool_discovery import ToolServers

log = logging.getLogger(__name__)

#: Connections to the API server for the operator's own reads and writes (kopf's watches have
#: their own). A status PATCH takes a few milliseconds, so eight carry well over a thousand
#: writes a second; the client's default of 100 only holds idle TLS buffers after a burst.
API_CONNECTIONS = 8


def load_tools(paths: Collection[str]) -> ToolRegistry:
    """Tools from ``module:attribute`` import paths (each a list of tools or a registry)."""
    tools = ToolRegistry()
    for path in paths:
        module_name, _, attr = path.partition(":")
        try:
            value = getattr(importlib.import_module(module_name), attr or "TOOLS")
        except (ImportError, AttributeError) as exc:
            raise ConfigError("operator.tools", f"cannot load {path!r}: {exc}") from None
        for tool in value:
            if not isinstance(tool, Tool):
                raise ConfigError("operator.tools", f"{path!r} holds {tool!r}, not a Tool")
            tools.include(tool)
    return tools


async def run_operator(
    settings: Settings,
    *,
    kubeconfig: Path | None = None,
    namespaces: Collection[str] = (),
    liveness_endpoint: str | None = None,
    stop_flag: asyncio.Event | None = None,
    ready_flag: asyncio.Event | None = None,
    on_signal: Callable[[signal.Signals], None] | None = None,
) -> None:
    """Run until stopped (``stop_flag``, cancellation, or SIGINT/SIGTERM, which call
    ``on_signal`` when given). No namespaces (here or in settings) means the whole cluster."""
    provider = parse_provider_settings(settings.provider, settings.provider_section)
    adapter = build_adapter(provider)
    catalog = catalog_for(provider)
    metrics = OperatorMetrics()
    if settings.operator.metrics_bind:
        metrics.serve(settings.operator.metrics_bind)
        log.info("metrics on http://%s/metrics", settings.operator.metrics_bind)
    commands = build_command_registry(
        catalog, plugin_dirs=[Path(p) for p in settings.operator.plugin_dirs]
    )
    for line in commands.report.lines():
        log.info("plugins: %s", line)
    loop = CoreLoop(
        MeteredAdapter(TracedAdapter(adapter, settings.provider), metrics),
        catalog,
        metered_tools(load_tools(settings.operator.tools), metrics),
        config=LoopConfig(max_model_calls=settings.operator.max_model_calls),
        completion_override=completion_override(commands.hooks),
    )
    api = await connect(kubeconfig, max_connections=API_CONNECTIONS)
    # kopf's own listings and watch lines, decoded with the bound ours are (kube/client.py).
    kopf_decoding.bound()
    cache = Cache(
        budget=settings.operator.cache_bytes,
        fetch=functools.partial(read_object, api),
        skipped=metrics.skipped,
    )
    metrics.watch_cache(cache)
    runtime = Runtime(api, loop, catalog, settings.operator, metrics, cache, commands=commands)
    watched = tuple(namespaces) or settings.operator.namespaces
    log.info("operator %s starting (namespaces: %s)", runtime.identity, ", ".join(watched) or "all")
    watches = Watches(
        api,
        lambda feed: build_registry(runtime, feed),
        lambda feed, label: prime(api, cache, feed, namespaces=watched, label_selector=label),
        cache.adopt,
        runtime.unwatched,
        namespaces=watched,
        sharded=bool(settings.operator.shards),
        on_signal=on_signal,
        pausing=runtime.slots,
    )
    background: list[asyncio.Task[None]] = []
    destinations = settings.operator.destinations
    directory = AgentDirectory(api, watched, destinations=destinations)
    runtime.remotes = Remotes(directory)
    background.append(asyncio.create_task(directory.run(), name="agents"))
    runtime.tool_servers = ToolServers(
        api, metrics, namespaces=watched, taken=loop.registry.names, destinations=destinations
    )
    background.append(asyncio.create_task(runtime.tool_servers.run(), name="tool servers"))
    if settings.operator.shards:
        runtime.shards = ShardManager(
            api,
            identity=runtime.identity,
            shards=settings.operator.shards,
            shard_set=settings.operator.shard_set,
            namespace=settings.operator.shard_namespace,
            lease_seconds=settings.operator.lease_seconds,
            on_acquired=runtime.shard_acquired,
            on_missed=runtime.poke_all,
            on_counted=runtime.shards_counted,
            on_dealt=watches.want,
        )
        runtime.labeller = Labeller(
            api,
            namespaces=watched,
            shards=settings.operator.shards,
            holds=runtime.shards.holds,
        )
        background.append(asyncio.create_task(runtime.shards.run(), name="shards"))
        background.append(asyncio.create_task(runtime.labeller.run(), name="labeller"))
        log.info(
            "operator %s: %d shards, Leases %s-* in namespace %s",
            runtime.identity,
            settings.operator.shards,
            settings.operator.shard_set,
            settings.operator.shard_namespace,
        )
    started = ready_flag or asyncio.Event()
    try:
        async with liveness(liveness_endpoint, started):
            await watches.run(ready_flag=started, stop_flag=stop_flag)
    except BaseException as exc:
        log.warning("operator %s stopping: %s", runtime.identity, type(exc).__name__)
        raise
    else:
        log.info("operator %s stopping", runtime.identity)
    finally:
        await runtime.shutdown()
        for task in background:
            task.cancel()  # the shard manager releases the shards it holds, for the others
        await asyncio.gather(*background, return_exceptions=True)
        await adapter.aclose()
        await api.close()
