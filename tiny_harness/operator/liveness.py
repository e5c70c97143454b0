"""The operator's liveness endpoint (``--liveness http://host:port/path``).

The operator serves it itself rather than through kopf's, because a sharded replica runs one
kopf instance after another (:mod:`tiny_harness.operator.kopf_shards`) and each would bind the
port anew. It answers 200 once the first kopf instance has started, and 503 before: as kopf's
own, which listens only from then on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from aiohttp import web

from tiny_harness.core.errors import ConfigError


@asynccontextmanager
async def liveness(endpoint: str | None, started: asyncio.Event) -> AsyncIterator[None]:
    """Serve ``endpoint`` (none: nothing) while the block runs."""
    if not endpoint:
        yield
        return
    url = urlsplit(endpoint)
    if url.scheme != "http" or not url.hostname or not url.port:
        raise ConfigError(
            "--liveness",
            f"{endpoint!r} is not http://<host>:<port>/<path>, e.g. http://0.0.0.0:8080/healthz",
        )

    async def health(_: web.Request) -> web.Response:
        if started.is_set():
            return web.json_response({})
        return web.json_response({"starting": True}, status=503)

    app = web.Application()
    app.router.add_get(url.path or "/", health)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, url.hostname, url.port).start()
        yield
    finally:
        await runner.cleanup()
