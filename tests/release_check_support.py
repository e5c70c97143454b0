"""A gateway's agent card and an operator's metrics, served on loopback, for the tests of the
chart's ``helm test`` check (``tiny_harness.cli.release_check``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tiny_harness.cli.release_check import AGENT_CARD, OPERATOR_METRIC


@contextmanager
def serving(
    card: dict[str, object] | None = None, metrics: str | None = None
) -> Iterator[tuple[str, str]]:
    """The base URLs of a gateway serving ``card`` (by default one advertising its own URL)
    and of an operator serving ``metrics``; a None card is a gateway that answers 503."""
    gateway = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    gateway_url = f"http://127.0.0.1:{gateway.server_address[1]}"
    answers = {
        AGENT_CARD: json.dumps(card if card is not None else {"name": "tiny-harness",
                                                               "url": gateway_url}),
        "/metrics": metrics if metrics is not None else f"# TYPE {OPERATOR_METRIC} counter\n",
    }  # fmt: skip

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = answers.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write((body or "").encode())

        def log_message(self, format: str, *args: object) -> None:
            pass

    gateway.RequestHandlerClass = Handler
    operator = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (gateway, operator)]
    for thread in threads:
        thread.start()
    try:
        yield gateway_url, f"http://127.0.0.1:{operator.server_address[1]}"
    finally:
        for server in (gateway, operator):
            server.shutdown()
            server.server_close()
