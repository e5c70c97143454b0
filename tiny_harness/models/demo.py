"""The demo model: what answers when no model is configured, so a first run works.

``tiny-harness up`` (and the TUI's embedded cluster) start it when the settings name no model
and no ``OPENAI_API_KEY`` is set. It speaks OpenAI's Chat Completions on 127.0.0.1, so the
operator reaches it through the same SDK and adapter as a real model, and it answers every turn
by saying it is a demo and what to configure instead. It is part of the product, not of the
tests (those script a richer server: ``tiny_harness/testing/model_server.py``).
"""

from __future__ import annotations

import itertools
import socket
import time
from typing import Any, Final

from aiohttp import web

MODEL: Final = "demo"
#: The key the operator's OpenAI client sends (the demo ignores it; the SDK wants one).
KEY_ENV: Final = "TINY_HARNESS_DEMO_KEY"


def reply_to(body: dict[str, Any]) -> str:
    """The demo's answer to a Chat Completions request: it names itself and the fix."""
    said = ""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            said = message["content"].strip()
            break
    heard = f' I read: "{said[:200]}".' if said else ""
    return (
        f"Done. (This is the demo model: no model is configured.{heard} To get real "
        "answers, set OPENAI_API_KEY, or name a model under [openai] or [anthropic] in "
        "the configuration file.)"
    )


class DemoModel:
    """The demo model's server; ``async with`` it, or :meth:`start` and :meth:`stop`."""

    def __init__(self) -> None:
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``/v1``) to give the operator."""
        return f"http://127.0.0.1:{self._port}/v1"

    def settings(self) -> dict[str, str]:
        """The ``[openai]`` settings that point the operator at this server."""
        return {"model": MODEL, "api": "chat", "base_url": self.base_url, "api_key_env": KEY_ENV}

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        # Bound here, so the port that port 0 got is known.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._port = int(sock.getsockname()[1])
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> DemoModel:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def _complete(self, request: web.Request) -> web.Response:
        body = await request.json()
        text = reply_to(body)
        return web.json_response(
            {
                "id": f"chatcmpl-demo-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": MODEL,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "logprobs": None,
                        "message": {"role": "assistant", "content": text},
                    }
                ],
                "usage": {
                    "prompt_tokens": len(str(body.get("messages"))) // 4,
                    "completion_tokens": len(text) // 4,
                    "total_tokens": len(str(body.get("messages"))) // 4 + len(text) // 4,
                },
            }
        )
