"""A scripted model server: the real OpenAI and Anthropic SDKs talk to it in tests and benches.

It binds to 127.0.0.1 (or the ``host`` given: the local node's bridge address, where pods reach
it) on a free port and answers the three wire formats the adapters use, all
non-streaming:

- ``POST /v1/responses`` (OpenAI Responses; point the SDK at :attr:`openai_base_url`),
- ``POST /v1/chat/completions`` (OpenAI Chat Completions; same base URL),
- ``POST /v1/messages`` (Anthropic Messages; point the SDK at :attr:`anthropic_base_url`).

Each model request takes the next turn of a script, whichever endpoint it hits: a text reply
(:class:`TextTurn`), tool calls (:class:`ToolCallsTurn`) or an HTTP error (:class:`ErrorTurn`),
each optionally after a delay. **When the script is exhausted the server answers with a plain
text reply,** :data:`DEFAULT_REPLY_TEXT`, rather than failing, so a test that scripts only the
turns it cares about still runs to the end. Every request is recorded (path, headers without
credentials, parsed JSON body, raw body bytes) so tests can assert on what the SDKs sent.

In-process use::

    async with ScriptedModelServer() as server:
        server.script([ToolCallsTurn(calls=[ScriptedToolCall(name="ls")]), TextTurn(text="ok")])
        client = AsyncOpenAI(base_url=server.openai_base_url, api_key="test")
        ...
        assert server.requests[0].body["model"] == "gpt-test"

From another process (the operator runs as a subprocess in integration tests), start
``python -m tiny_harness.testing.model_server --port 0 --script FILE.json``: it prints its base
URL on the first line of stdout. Drive it over HTTP with :class:`ModelServerControl`, which
uses ``POST /_script`` (append turns), ``GET /_requests`` (the recorded requests) and
``POST /_reset`` (forget both).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import aiohttp
from aiohttp import web
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

#: What the server answers once its script has run out.
DEFAULT_REPLY_TEXT: Final = "Done."

#: Header names never recorded: tests must not be able to leak a key through an assertion.
CREDENTIAL_HEADERS: Final = frozenset(
    {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"}
)

LOOPBACK: Final = "127.0.0.1"

Flavor = Literal["responses", "chat", "messages"]


class _Turn(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    delay_seconds: float = Field(default=0.0, ge=0, description="Wait this long, then answer.")
    when: str | None = Field(
        default=None,
        description="Answer only a request whose body contains this text; until one comes, "
        "later turns answer the others. For tests where two tasks call at once and the order "
        "of their calls is not the test's to choose.",
    )


class TextTurn(_Turn):
    """Answer with text and no tool calls. Token counts default to rough estimates."""

    type: Literal["text"] = "text"
    text: str
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cached_input_tokens: int = Field(
        default=0, ge=0, description="Of the input tokens, those to report as cached."
    )


class ScriptedToolCall(BaseModel):
    """One tool call to answer with; ``arguments`` as an object or as raw JSON text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = Field(default=None, description="Generated when unset.")


class ToolCallsTurn(_Turn):
    """Answer with one or more tool calls, optionally with some text before them."""

    type: Literal["tool_calls"] = "tool_calls"
    calls: tuple[ScriptedToolCall, ...] = Field(min_length=1)
    text: str = ""
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cached_input_tokens: int = Field(
        default=0, ge=0, description="Of the input tokens, those to report as cached."
    )


class ErrorTurn(_Turn):
    """Answer with an HTTP error in the provider's error shape (429 and 5xx get retried).

    ``context_too_long`` answers with each provider's own 400 for a conversation longer than
    the model's window (the endpoint hit decides which), so a test of that path does not have
    to know which adapter it drives.
    """

    type: Literal["error"] = "error"
    status: int = Field(ge=400, le=599)
    message: str = "scripted failure"
    retry_after_seconds: float | None = Field(default=None, ge=0)
    code: str | None = Field(
        default=None, description="OpenAI's `error.code`; Anthropic errors have none."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra response headers, set last (e.g. an HTTP-date `retry-after`).",
    )
    context_too_long: bool = Field(
        default=False,
        description="The provider's real context-overflow error; status must be 400, and "
        "message and code are replaced.",
    )

    @model_validator(mode="after")
    def _context_too_long_is_a_400(self) -> ErrorTurn:
        if self.context_too_long and self.status != 400:
            raise ValueError("context_too_long is a 400 at every provider; set status to 400")
        return self


Turn = Annotated[TextTurn | ToolCallsTurn | ErrorTurn, Field(discriminator="type")]
_TURNS: TypeAdapter[list[TextTurn | ToolCallsTurn | ErrorTurn]] = TypeAdapter(list[Turn])


def parse_turns(data: Any) -> list[TextTurn | ToolCallsTurn | ErrorTurn]:
    """Turns from JSON data: a list of turns, or ``{"turns": [...]}``."""
    if isinstance(data, Mapping):
        data = data.get("turns", [])
    return _TURNS.validate_python(data)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it. ``body`` is None when it was not JSON."""

    path: str
    headers: Mapping[str, str]
    body: Any
    raw_body: bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "headers": dict(self.headers),
            "body": self.body,
            "raw_body_base64": base64.b64encode(self.raw_body).decode("ascii"),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedRequest:
        return cls(
            path=data["path"],
            headers=dict(data["headers"]),
            body=data["body"],
            raw_body=base64.b64decode(data["raw_body_base64"]),
        )


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
        """The first scripted turn this request may have (see :attr:`_Turn.when`)."""
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
            return _error_response(flavor, turn)
        if not isinstance(body, dict):
            return _error_response(flavor, ErrorTurn(status=400, message="body is not JSON"))
        model = str(body.get("model", "scripted-model"))
        calls = [
            _Call(
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
        serial = next(self._ids)
        if flavor == "responses":
            payload = _responses_body(serial, model, text, calls, usage)
        elif flavor == "chat":
            payload = _chat_body(serial, model, text, calls, usage)
        else:
            payload = _messages_body(serial, model, text, calls, usage)
        return web.json_response(payload)

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


@dataclass(frozen=True)
class _Call:
    id: str
    name: str
    arguments: str


def _responses_body(
    serial: int, model: str, text: str, calls: list[_Call], usage: tuple[int, int, int]
) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if text or not calls:
        output.append(
            {
                "type": "message",
                "id": f"msg_{serial}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    output.extend(
        {
            "type": "function_call",
            "id": f"fc_{call.id}",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "status": "completed",
        }
        for call in calls
    )
    return {
        "id": f"resp_{serial}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": usage[2], "cache_write_tokens": 0},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage[0] + usage[1],
        },
    }


def _chat_body(
    serial: int, model: str, text: str, calls: list[_Call], usage: tuple[int, int, int]
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ]
    return {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls" if calls else "stop",
                "logprobs": None,
                "message": message,
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
            "prompt_tokens_details": {"cached_tokens": usage[2]},
        },
    }


def _messages_body(
    serial: int, model: str, text: str, calls: list[_Call], usage: tuple[int, int, int]
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text or not calls:
        content.append({"type": "text", "text": text})
    for call in calls:
        try:
            arguments = json.loads(call.arguments)
        except ValueError:
            arguments = {"raw_arguments": call.arguments}
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return {
        "id": f"msg_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        # Anthropic counts cache reads apart from input_tokens (the uncached part).
        "usage": {
            "input_tokens": max(usage[0] - usage[2], 0),
            "output_tokens": usage[1],
            "cache_read_input_tokens": usage[2],
        },
    }


_ANTHROPIC_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


#: Each provider's own words for a conversation longer than the model's context window.
CONTEXT_TOO_LONG_MESSAGES: Final[Mapping[Flavor, str]] = {
    "responses": "Your input exceeds the context window of this model. Please adjust your input "
    "and try again.",
    "chat": "This model's maximum context length is 128000 tokens. However, your messages "
    "resulted in 250000 tokens. Please reduce the length of the messages.",
    "messages": "prompt is too long: 250000 tokens > 200000 maximum",
}


def _error_response(flavor: Flavor, turn: ErrorTurn) -> web.Response:
    headers: dict[str, str] = {}
    if turn.retry_after_seconds is not None:
        headers["retry-after-ms"] = str(int(turn.retry_after_seconds * 1000))
        headers["retry-after"] = str(turn.retry_after_seconds)
    headers.update(turn.headers)
    if turn.context_too_long:
        return web.json_response(_context_too_long_body(flavor), status=400, headers=headers)
    if flavor == "messages":
        kind = _ANTHROPIC_ERROR_TYPES.get(turn.status, "api_error")
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": turn.message}}
    else:
        kind = "rate_limit_exceeded" if turn.status == 429 else "scripted_error"
        body = {"error": {"message": turn.message, "type": kind, "param": None, "code": turn.code}}
    return web.json_response(body, status=turn.status, headers=headers)


def _context_too_long_body(flavor: Flavor) -> dict[str, Any]:
    message = CONTEXT_TOO_LONG_MESSAGES[flavor]
    if flavor == "messages":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "input" if flavor == "responses" else "messages",
            "code": "context_length_exceeded",
        }
    }


class ModelServerControl:
    """Drives a server in another process over its control endpoints."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    async def script(self, turns: Iterable[Turn | Mapping[str, Any]]) -> None:
        payload = [t if isinstance(t, Mapping) else t.model_dump(mode="json") for t in turns]
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.base_url}/_script", json={"turns": payload}) as response,
        ):
            response.raise_for_status()

    async def requests(self) -> list[RecordedRequest]:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.base_url}/_requests") as response,
        ):
            response.raise_for_status()
            data = await response.json()
        return [RecordedRequest.from_json(item) for item in data["requests"]]

    async def reset(self) -> None:
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.base_url}/_reset") as response,
        ):
            response.raise_for_status()


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
