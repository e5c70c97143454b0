"""``python -m tiny_harness.a2a_gateway --config FILE [--kubeconfig FILE]``: the gateway as a
process of its own, with the options ``tiny-harness gateway`` takes. Tests start replicas this
way; people use ``tiny-harness gateway``.

Exit codes: 0 stopped by a signal, 2 bad configuration.

The process runs on uvloop's event loop where it is installed (a dependency, but for Windows):
the gateway alone runs in it, and uvloop's sockets and TLS take less of a send's time than
asyncio's own (docs/design/gateway.md, Benchmark).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from tiny_harness.a2a_gateway.app import serve_gateway
from tiny_harness.core.errors import ConfigError
from tiny_harness.core.literal import log_handler
from tiny_harness.core.settings import Settings
from tiny_harness.telemetry import tracing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tiny_harness.a2a_gateway")
    parser.add_argument("--config", type=Path, help="settings file (TOML; [gateway] section)")
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig (default: $KUBECONFIG)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, handlers=[log_handler(logging.StreamHandler())])
    try:
        settings = Settings.load(args.config)
    except ConfigError as exc:
        print(f"tiny-harness gateway: configuration error: {exc}", file=sys.stderr)
        return 2

    async def run() -> None:
        task = asyncio.ensure_future(serve_gateway(settings, args.kubeconfig))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    with (
        tracing(settings.tracing, "tiny-harness-gateway"),
        asyncio.Runner(loop_factory=event_loop_factory()) as runner,
    ):
        runner.run(run())
    return 0


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop, where it is installed; None: asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


if __name__ == "__main__":
    sys.exit(main())
