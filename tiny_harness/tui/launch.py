"""Starting the TUI: where it logs, the token it sends, and attaching to a gateway.

Nothing but the UI goes to the terminal: every log line (the embedded operator's and
gateway's included) goes to a file under the configuration home, created 0600.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any, Final

import httpx

from tiny_harness.core.errors import ConfigError
from tiny_harness.core.literal import log_handler
from tiny_harness.tui.app import HarnessApp
from tiny_harness.tui.session import Session

#: The longest the embedded gateway is waited for before the TUI gives up on it.
SERVING_TIMEOUT: Final = 120.0


def log_to(path: Path) -> None:
    """Send every log record to ``path`` (0600), and none to the terminal."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    os.close(fd)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(log_handler(logging.FileHandler(path, encoding="utf-8")))
    root.setLevel(logging.INFO)


def read_token(token_file: str | None) -> str | None:
    """The bearer token from ``[client] token_file`` (none configured: None)."""
    if not token_file:
        return None
    path = Path(token_file).expanduser()
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError("client.token_file", f"cannot read {path}: {exc.strerror}") from None
    if not token:
        raise ConfigError("client.token_file", f"{path} is empty")
    return token


async def until_serving(url: str, servers: asyncio.Future[Any]) -> None:
    """Wait until the gateway at ``url`` serves its agent card (or the servers stop)."""
    deadline = asyncio.get_running_loop().time() + SERVING_TIMEOUT
    async with httpx.AsyncClient(timeout=2.0) as http:
        while True:
            if servers.done():
                servers.result()  # raises what stopped them
                raise RuntimeError("the embedded operator and gateway stopped")
            try:
                response = await http.get(f"{url}/.well-known/agent-card.json")
                if response.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"the embedded gateway did not serve {url} in time")
            await asyncio.sleep(0.2)


async def attach(url: str, participant: str, token: str | None) -> None:
    """Run the TUI against the gateway at ``url`` until the user quits."""
    session = await Session.connect(url, participant=participant, token=token)
    try:
        await HarnessApp(session).run_async()
    finally:
        await session.close()
