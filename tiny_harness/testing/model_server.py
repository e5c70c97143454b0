"""A scripted model server: the real OpenAI and Anthropic SDKs talk to it in tests and benches.

It binds to 127.0.0.1 (or the ``host`` given: the local node's bridge address, where pods reach
it) on a free port and answers the three wire formats the adapters use, all non-streaming,
each as its provider would (:mod:`tiny_harness.testing.model_wire`):

- ``POST /v1/responses`` (OpenAI Responses; point the SDK at :attr:`openai_base_url`),
- ``POST /v1/chat/completions`` (OpenAI Chat Completions; same base URL),
- ``POST /v1/messages`` (Anthropic Messages; point the SDK at :attr:`anthropic_base_url`).

Each model request takes the next turn of a script (:mod:`tiny_harness.testing.model_script`),
whichever endpoint it hits: a text reply (:class:`TextTurn`), tool calls (:class:`ToolCallsTurn`)
or an HTTP error (:class:`ErrorTurn`), each optionally after a delay. **When the script is
exhausted the server answers with a plain text reply,** :data:`DEFAULT_REPLY_TEXT`, rather than
failing, so a test that scripts only the turns it cares about still runs to the end. Every
request is recorded (path, headers without credentials, parsed JSON body, raw body bytes) so
tests can assert on what the SDKs sent.

In-process use::

    async with ScriptedModelServer() as server:
        server.script([ToolCallsTurn(calls=[ScriptedToolCall(name="ls")]), TextTurn(text="ok")])
        client = AsyncOpenAI(base_url=server.openai_base_url, api_key="test")
        ...
        assert server.requests[0].body["model"] == "gpt-test"

From another process (the operator runs as a subprocess in integration tests), start
``python -m tiny_harness.testing.model_server --port 0 --script FILE.json``: it prints its base
URL on the first line of stdout. Drive it over HTTP with
:class:`~tiny_harness.testing.model_script.ModelServerControl`, which
uses ``POST /_script`` (append turns), ``GET /_requests`` (the recorded requests) and
``POST /_reset`` (forget both).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
import socket
import sys
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from aiohttp import web
from pydantic import ValidationError

from tiny_harness.testing.model_script import (
    DEFAULT_REPLY_TEXT,
    ErrorTurn,
    RecordedRequest,
    TextTurn,
    ToolCallsTurn,
    Turn,
    parse_turns,
)
from tiny_harness.testing.model_wire import Flavor, WireCall, error_response, reply_body

#: Header names never recorded: tests must not be able to leak a key through an assertion.
CREDENTIAL_HEADERS: Final = frozenset(
    {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"}
)

LOOPBACK: Final = "127.0.0.1"


class ScriptedModelServer:
    """The server; use it as an async context manager, or call :meth:`start` and :meth:`stop`."""

    def __init__(self, turns: Iterable[Turn] = (), *, port: int = 0, host: str = LOOPBACK) -> None:
        self._turns: deque[TextTurn | ToolCallsTurn | ErrorTurn] = deque(turns)
        self._requests: list[RecordedRequest] = []
        self._port = port
        self._host = host
        self._runner: web.AppRunner | None = None
        self._ids = itertools.count(1)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/responses", self._on_responses)
        app.router.add_post("/v1/chat/completions", self._on_chat)
        app.router.add_post("/v1/messages", self._on_messages)
        app.router.add_post("/_script", self._on_script)
        app.router.add_get("/_requests", self._on_requests)
        app.router.add_post("/_reset", self._on_reset)
        # Binding the socket ourselves is the supported way to learn the port that port 0 got.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._port))
        self._port = sock.getsockname()[1]
        # A client that timed out must not keep a delayed handler alive (nor stall shutdown).
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ScriptedModelServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- what tests use ----------------------------------------------------------------------

    def _take(self, raw: bytes) -> TextTurn | ToolCallsTurn | ErrorTurn:
        """The first scripted turn this request may have (see
        :attr:`~tiny_harness.testing.model_script.ScriptedTurn.when`)."""
        text = raw.decode("utf-8", errors="replace")
        for i, turn in enumerate(self._turns):
            if turn.when is None or turn.when in text:
                del self._turns[i]
                return turn
        return TextTurn(text=DEFAULT_REPLY_TEXT)

    @property
    def base_url(self) -> str:
        """The server's root URL, ``http://127.0.0.1:<port>`` (or its host's)."""
        return f"http://{self._host}:{self._port}"

    @property
    def openai_base_url(self) -> str:
        """For ``AsyncOpenAI(base_url=...)``: the OpenAI SDK expects the ``/v1`` prefix in it."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """For ``AsyncAnthropic(base_url=...)``: the Anthropic SDK adds ``/v1`` itself."""
        return self.base_url

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every model request received so far, oldest first (control calls excluded)."""
        return list(self._requests)

    @property
    def remaining_turns(self) -> int:
        return len(self._turns)

    def script(self, turns: Iterable[Turn | Mapping[str, Any]]) -> None:
        """Append turns to the script; mappings are parsed as in a script file."""
        for turn in turns:
            self._turns.extend(parse_turns([turn]) if isinstance(turn, Mapping) else [turn])

    def reset(self) -> None:
        """Forget the remaining script and the recorded requests."""
        self._turns.clear()
        self._requests.clear()

    # -- model endpoints ---------------------------------------------------------------------

    async def _on_responses(self, request: web.Request) -> web.Response:
        return await self._answer(request, "responses")

    async def _on_chat(self, request: web.Request) -> web.Response:
        return await self._answer(request, "chat")

    async def _on_messages(self, request: web.Request) -> web.Response:
        return await self._answer(request, "messages")

    async def _answer(self, request: web.Request, flavor: Flavor) -> web.Response:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._requests.append(
            RecordedRequest(
                path=request.path,
                headers={
                    k.lower(): v
                    for k, v in request.headers.items()
                    if k.lower() not in CREDENTIAL_HEADERS
                },
                body=body,
                raw_body=raw,
            )
        )
        turn = self._take(raw)
        if turn.delay_seconds:
            await asyncio.sleep(turn.delay_seconds)
        if isinstance(turn, ErrorTurn):
            return error_response(flavor, turn)
        if not isinstance(body, dict):
            return error_response(flavor, ErrorTurn(status=400, message="body is not JSON"))
        model = str(body.get("model", "scripted-model"))
        calls = [
            WireCall(
                id=call.id or f"call_{next(self._ids)}",
                name=call.name,
                arguments=call.arguments
                if isinstance(call.arguments, str)
                else json.dumps(call.arguments),
            )
            for call in (turn.calls if isinstance(turn, ToolCallsTurn) else ())
        ]
        text = turn.text
        usage = (
            turn.input_tokens if turn.input_tokens is not None else max(1, len(raw) // 4),
            turn.output_tokens
            if turn.output_tokens is not None
            else max(1, (len(text) + sum(len(c.arguments) for c in calls)) // 4),
            turn.cached_input_tokens,
        )
        return web.json_response(reply_body(flavor, next(self._ids), model, text, calls, usage))

    # -- control endpoints -------------------------------------------------------------------

    async def _on_script(self, request: web.Request) -> web.Response:
        try:
            turns = parse_turns(await request.json())
        except (ValueError, ValidationError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        self._turns.extend(turns)
        return web.json_response({"queued": len(turns), "remaining": len(self._turns)})

    async def _on_requests(self, request: web.Request) -> web.Response:
        return web.json_response({"requests": [r.to_json() for r in self._requests]})

    async def _on_reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"reset": True})


async def _serve(
    port: int, turns: list[TextTurn | ToolCallsTurn | ErrorTurn], host: str = LOOPBACK
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with ScriptedModelServer(turns, port=port, host=host) as server:
        # The parent process reads this one line to learn where the server is.
        print(server.base_url, flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tiny_harness.testing.model_server",
        description="Serve scripted OpenAI/Anthropic model replies on 127.0.0.1; print the URL.",
    )
    parser.add_argument("--port", type=int, default=0, help="0 (the default) picks a free port")
    parser.add_argument(
        "--host",
        default=LOOPBACK,
        help="the address to bind (default 127.0.0.1; the local node's bridge address serves pods)",
    )
    parser.add_argument(
        "--script", type=Path, default=None, help="a JSON file: a list of turns or {'turns': [...]}"
    )
    args = parser.parse_args(argv)
    try:
        turns = parse_turns(json.loads(args.script.read_text())) if args.script else []
        asyncio.run(_serve(args.port, turns, args.host))
    except (OSError, ValueError, ValidationError) as exc:
        print(f"model_server: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
