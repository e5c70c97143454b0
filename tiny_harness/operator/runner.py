"""Run the operator in this process: kopf embedded in our own asyncio loop.

Embedding (rather than ``kopf run``) lets the CLI own start-up: settings are validated once,
the registry is ours, and signals end the process cleanly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection

import kopf

from tiny_harness.operator.handlers import build_registry
from tiny_harness.operator.settings import operator_settings

log = logging.getLogger(__name__)


async def run_operator(
    *,
    namespaces: Collection[str] = (),
    liveness_endpoint: str | None = None,
    stop_flag: asyncio.Event | None = None,
    ready_flag: asyncio.Event | None = None,
) -> None:
    """Run until stopped. No namespaces means the whole cluster."""
    await kopf.operator(
        registry=build_registry(),
        settings=operator_settings(),
        clusterwide=not namespaces,
        namespaces=tuple(namespaces),
        liveness_endpoint=liveness_endpoint,
        stop_flag=stop_flag,
        ready_flag=ready_flag,
        standalone=True,
    )
