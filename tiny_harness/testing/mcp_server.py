"""A small MCP server for tests and examples, built with the official ``mcp`` SDK.

It serves streamable HTTP on 127.0.0.1 (``/mcp``) with a few tools whose behaviour a test can
lean on, and records every ``tools/call`` it runs (the tool, the JSON-RPC request id, the
arguments), so a test can count how often a tool really ran and see the id it came with:

- ``weather(city)``: ``Sunny in <city>.``, instantly;
- ``slow(seconds)``: waits, then says so (for timeouts);
- ``big(size)``: ``size`` characters (for the result-size limit);
- ``broken()``: fails on the server's side (an MCP error result);
- ``chart(title)``: a line of text and a small PNG (:data:`CHART_PNG`), an image result.

In a test, :class:`McpServerThread` runs it on a thread of its own, so a test blocked in a
synchronous wait never stalls it. From a shell, ``python -m tiny_harness.testing.mcp_server
--port 8765`` serves it until interrupted (the example manifests point at it).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import threading
from dataclasses import dataclass
from typing import Any, Final

import uvicorn
from mcp.server.mcpserver import Context, Image, MCPServer

LOOPBACK: Final = "127.0.0.1"
#: The image ``chart`` returns: a PNG signature and a few bytes, enough to be told apart.
CHART_PNG: Final = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


@dataclass(frozen=True)
class ServedCall:
    """One ``tools/call`` the server ran."""

    tool: str
    request_id: str
    arguments: dict[str, Any]
    #: The Authorization header the call came with (tests check a Secret's value arrived).
    authorization: str | None = None


def _served(ctx: Context, tool: str, arguments: dict[str, Any]) -> ServedCall:
    headers = ctx.headers or {}
    return ServedCall(tool, ctx.request_id, arguments, headers.get("authorization"))


def build_server(calls: list[ServedCall]) -> MCPServer:
    """The server, appending each call it runs to ``calls``."""
    server = MCPServer("tiny-harness-test-tools", version="1.0")

    @server.tool(description="Today's weather in a city.")
    async def weather(city: str, ctx: Context) -> str:
        calls.append(_served(ctx, "weather", {"city": city}))
        return f"Sunny in {city}."

    @server.tool(description="Wait a number of seconds, then answer.")
    async def slow(seconds: float, ctx: Context) -> str:
        calls.append(_served(ctx, "slow", {"seconds": seconds}))
        await asyncio.sleep(seconds)
        return f"Waited {seconds:g}s."

    @server.tool(description="A text of the given size.")
    async def big(size: int, ctx: Context) -> str:
        calls.append(_served(ctx, "big", {"size": size}))
        return "x" * size

    @server.tool(description="A chart of the given title, as an image.", structured_output=False)
    async def chart(title: str, ctx: Context) -> list[object]:
        calls.append(_served(ctx, "chart", {"title": title}))
        return [f"The chart of {title}.", Image(data=CHART_PNG, format="png")]

    @server.tool(description="Always fails.")
    async def broken(ctx: Context) -> str:
        calls.append(_served(ctx, "broken", {}))
        raise RuntimeError("the broken tool broke")

    return server


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


class McpServerThread:
    """The test server on a thread of its own; ``url`` is its endpoint once started."""

    def __init__(self, port: int = 0) -> None:
        self.port = port or free_port()
        self.url = f"http://{LOOPBACK}:{self.port}/mcp"
        self.calls: list[ServedCall] = []
        app = build_server(self.calls).streamable_http_app()
        config = uvicorn.Config(app, host=LOOPBACK, port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="mcp-server", daemon=True)

    def start(self) -> McpServerThread:
        self._thread.start()
        for _ in range(200):
            if self._server.started:
                return self
            if not self._thread.is_alive():
                break
            threading.Event().wait(0.05)
        raise RuntimeError(f"the MCP test server did not start on {self.url}")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def served(self, tool: str) -> list[ServedCall]:
        return [c for c in list(self.calls) if c.tool == tool]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the MCP test tools on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    app = build_server([]).streamable_http_app()
    uvicorn.run(app, host=LOOPBACK, port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
