"""A listener for tests: an HTTP server on 127.0.0.1 that counts the connections it accepts
and records every request's method, path and headers.

It stands where an attacker would like the operator to call (a re-aimed tool server, the
endpoint a card names elsewhere), so a test can say that a Secret's value never arrived, or
that nothing connected at all. It answers the JSON ``pages`` it is given (path: body) and 404
to anything else, on a thread of its own.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Seen:
    """One request the listener received."""

    method: str
    path: str
    headers: dict[str, str]


class Listener:
    """Serve on 127.0.0.1 (a free port) while used as a context manager."""

    def __init__(self, pages: dict[str, Any] | None = None) -> None:
        self.pages = dict(pages or {})
        self.requests: list[Seen] = []
        self.connections = 0
        self._lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.listener = self
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``: the origin a Secret would have to name."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def received(self, value: str) -> bool:
        """Whether any request carried ``value`` in any of its headers."""
        with self._lock:
            return any(value in v for seen in self.requests for v in seen.headers.values())

    def _record(self, seen: Seen) -> None:
        with self._lock:
            self.requests.append(seen)

    def _connected(self) -> None:
        with self._lock:
            self.connections += 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    listener: Listener

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.listener._connected()
        return True


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        listener = self.server.listener
        listener._record(Seen(self.command, self.path, dict(self.headers.items())))
        page = listener.pages.get(self.path)
        body = json.dumps(page if page is not None else {"error": "nothing here"}).encode()
        self.send_response(200 if page is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass
