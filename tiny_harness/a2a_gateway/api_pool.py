"""The gateway's short requests to the API server run to their end, even when their caller has
gone, so that their connection goes back to the pool instead of being closed.

A send's wait reads the task's turn records when the task stops for a participant, and its
client may have left by then (a client that only wanted the first event closes the stream).
The handler is cancelled with its client, and aiohttp closes a connection whose response it was
cancelled while waiting for: it cannot tell when the rest of it would come. In
``bench_gateway.py``'s run of 50 clients that closed some 90 connections in 10 s of sends, each
opened again with a TLS handshake, so the pool (``app.API_CONNECTIONS``) kept opening
connections though it never grew past its cap.

:func:`finish_when_cancelled` makes the client's requests that read their whole response (every
request but a watch's) run in a task of their own. The caller that is cancelled is cancelled at
once, as before; its request goes on until its answer has come (at most
:data:`FINISH_SECONDS`, then it is cancelled too), and the answer is dropped. The API server
does the request's work either way: it has it already.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

from kubernetes_asyncio import client

#: How long a request whose caller has gone may still take before it is cancelled (and its
#: connection closed): the API server answers a short request within its own request timeout.
FINISH_SECONDS: Final = 60.0


class Finishing:
    """The requests of one client that go on after their caller has gone."""

    def __init__(self) -> None:
        self.left: set[asyncio.Task[None]] = set()

    def keep(self, request: asyncio.Future[Any], bound: float) -> None:
        async def finish() -> None:
            # No one waits for its answer or its failure any more: both are dropped.
            with contextlib.suppress(Exception, asyncio.CancelledError):
                async with asyncio.timeout(bound):
                    await request

        rest_of_it = asyncio.ensure_future(finish())
        self.left.add(rest_of_it)
        rest_of_it.add_done_callback(self.left.discard)

    async def settled(self) -> None:
        """Until every request left to finish has finished (or been given up)."""
        while self.left:
            await asyncio.wait(set(self.left))


def finish_when_cancelled(api: client.ApiClient, *, bound: float = FINISH_SECONDS) -> Finishing:
    """Make ``api``'s requests that read their whole response finish when their caller is
    cancelled (see the module docstring); what is left to finish, from now on. Streams
    (``_preload_content=False``: watches) are left as they are: their reader closes them."""
    rest = api.rest_client
    request = rest.request
    finishing = Finishing()

    async def finished(*args: Any, _preload_content: bool = True, **kwargs: Any) -> Any:
        if not _preload_content:
            return await request(*args, _preload_content=False, **kwargs)
        pending = asyncio.ensure_future(request(*args, **kwargs))
        try:
            return await asyncio.shield(pending)
        except asyncio.CancelledError:
            if pending.done():
                # Its outcome is read, so it is never reported as an exception no one
                # retrieved.
                _ = pending.cancelled() or pending.exception()
            else:
                finishing.keep(pending, bound)
            raise

    rest.request = finished
    return finishing
