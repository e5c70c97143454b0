"""A minimal HTTPS client for the admin's own bootstrap calls to a local API server.

The launcher needs just three things before any Kubernetes client is configured: wait for
``/readyz``, server-side apply the CRDs, and wait for them to be established. The standard
library does that with the admin's client certificate, so the launcher depends on no client
library and starts fast.
"""

from __future__ import annotations

import http.client
import json
import ssl
from dataclasses import dataclass
from typing import Any

from tiny_harness.devcluster.certs import Pki


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class AdminHttp:
    """Authenticated requests to ``https://<host>:<port>`` as the cluster admin."""

    def __init__(self, port: int, pki: Pki, host: str = "127.0.0.1") -> None:
        self._port = port
        self._host = host
        self._context = ssl.create_default_context(cafile=str(pki.ca_cert))
        self._context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        timeout: float = 10.0,
    ) -> Response:
        conn = http.client.HTTPSConnection(
            self._host, self._port, context=self._context, timeout=timeout
        )
        try:
            headers = {"Accept": "application/json"}
            if body is not None:
                headers["Content-Type"] = content_type
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return Response(resp.status, resp.read())
        finally:
            conn.close()
