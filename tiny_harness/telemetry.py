"""Installing the OpenTelemetry SDK in a process, when tracing is configured.

The domain code only ever uses the API (:mod:`tiny_harness.core.tracing`); this is the one
place that decides whether spans go anywhere. Tracing is on when ``[tracing] otlp_endpoint`` is
set, or when the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``
variables are (the way the OpenTelemetry Operator and most charts inject a collector), and
``OTEL_SDK_DISABLED`` is not ``true``. Everything else the SDK reads from its own variables:
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_EXPORTER_OTLP_HEADERS`` (so a
collector's credentials come from a Secret, never from the settings file), ``OTEL_BSP_*``.

Spans leave in batches, on the SDK's own thread, over OTLP/HTTP: a slow or absent collector
costs the process a bounded queue (spans beyond it are dropped and counted by the SDK), never a
stalled turn.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

from tiny_harness.core.settings import TracingSettings

log = logging.getLogger(__name__)

TRACES_ENDPOINT_ENV: Final = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
ENDPOINT_ENV: Final = "OTEL_EXPORTER_OTLP_ENDPOINT"
DISABLED_ENV: Final = "OTEL_SDK_DISABLED"
SERVICE_ENV: Final = "OTEL_SERVICE_NAME"


def traces_endpoint(
    settings: TracingSettings, environ: Mapping[str, str] = os.environ
) -> str | None:
    """Where spans go, or None when tracing is off. The settings file wins over the
    environment; the signal-specific variable is used as it is, the generic one gets
    ``/v1/traces`` as the OTLP specification says."""
    if environ.get(DISABLED_ENV, "").strip().lower() == "true":
        return None
    if settings.otlp_endpoint:
        return f"{settings.otlp_endpoint.rstrip('/')}/v1/traces"
    if environ.get(TRACES_ENDPOINT_ENV):
        return environ[TRACES_ENDPOINT_ENV]
    if environ.get(ENDPOINT_ENV):
        return f"{environ[ENDPOINT_ENV].rstrip('/')}/v1/traces"
    return None


def _shown(url: str) -> str:
    """The endpoint for a log line, without any user or password in it."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _version() -> str:
    try:
        return version("tiny-harness")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "0"


def build_provider(
    settings: TracingSettings, service: str, environ: Mapping[str, str] = os.environ
) -> TracerProvider | None:
    """A provider exporting to the configured collector, or None when tracing is off."""
    endpoint = traces_endpoint(settings, environ)
    if endpoint is None:
        return None
    attributes = {SERVICE_VERSION: _version()}
    if not environ.get(SERVICE_ENV):
        attributes[SERVICE_NAME] = service
    provider = TracerProvider(
        resource=Resource.create(attributes),
        sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)),
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    log.info("tracing: spans go to %s (sample ratio %s)", _shown(endpoint), settings.sample_ratio)
    return provider


@contextlib.contextmanager
def tracing(settings: TracingSettings, service: str) -> Iterator[TracerProvider | None]:
    """Trace this process for the block, if tracing is configured; at the end, the spans
    still queued are sent (bounded by the exporter's timeout) before the process exits."""
    provider = build_provider(settings, service)
    if provider is None:
        yield None
        return
    trace.set_tracer_provider(provider)
    try:
        yield provider
    finally:
        provider.shutdown()
