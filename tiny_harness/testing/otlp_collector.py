"""A trace collector for tests and benchmarks: an OTLP/HTTP endpoint on loopback that keeps
the spans the operator and gateway processes export, decoded with the OpenTelemetry protocol's
own messages. It runs on a thread of its own, so it keeps receiving while a test waits."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    links: tuple[str, ...]
    error: bool


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


class Collector:
    """``endpoint`` goes in ``OTEL_EXPORTER_OTLP_ENDPOINT``; :attr:`spans` fills as batches
    arrive."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                collector._receive(ExportTraceServiceRequest.FromString(body))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _receive(self, request: ExportTraceServiceRequest) -> None:
        received = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            service=str(resource.get("service.name")),
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            links=tuple(link.span_id.hex() for link in span.links),
                            error=span.status.code == span.status.STATUS_CODE_ERROR,
                        )
                    )
        with self._lock:
            self.spans.extend(received)

    def named(self, name: str) -> list[ReceivedSpan]:
        with self._lock:
            return [s for s in self.spans if s.name == name]

    def descends(self, span: ReceivedSpan, ancestor: ReceivedSpan) -> bool:
        """Is ``ancestor`` on the chain of parents of ``span`` (through spans received)?"""
        with self._lock:
            by_id = {s.span_id: s for s in self.spans}
        parent = span.parent_id
        while parent:
            if parent == ancestor.span_id:
                return True
            parent = by_id[parent].parent_id if parent in by_id else ""
        return False

    def env(self) -> dict[str, str]:
        """The environment that points a process here, exporting every 100 ms."""
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": self.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
