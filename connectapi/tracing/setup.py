"""Exporting traces, from the OpenTelemetry SDK's own environment variables.

Traces go over OTLP/HTTP when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
`OTEL_EXPORTER_OTLP_ENDPOINT` is set; the SDK reads the rest itself (`OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER[_ARG]`, `OTEL_BSP_*`,
`OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`, `…_TIMEOUT`, `…_COMPRESSION`, `…_CERTIFICATE`).
`OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turns it off whatever is set.
Each process of `serve --workers N` exports its own spans (the batch processor's thread is
its own), and flushes them as it stops.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from . import spans

log = logging.getLogger("connectapi.tracing")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
DEFAULT_SERVICE_NAME = "connectapi"
# What sending what is left may take as the process stops: a collector that is away must
# not hold a stop (its spans are lost, the stop is not). The SDK's own bound does not hold:
# its processor waits up to 30 s for an export retrying with backoff.
FLUSH_AT_STOP_SECONDS = 5.0
SUPPORTED_PROTOCOL = "http/protobuf"


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


@contextmanager
def exporting(version: str, exporter: object | None = None) -> Iterator[bool]:
    """Spans exported for the block when the environment asks for it (True), else none
    (False, and nothing of the SDK is set up). `exporter`: a test's own in place of OTLP."""
    if exporter is None and not wanted():
        yield False
        return
    # Imported here: with tracing off the SDK and the exporter are never loaded.
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

    # Ours first, then the environment's: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
    resource = Resource.create({"service.name": DEFAULT_SERVICE_NAME, "service.version": version}).merge(
        OTELResourceDetector().detect())
    provider = TracerProvider(resource=resource)  # the sampler from OTEL_TRACES_SAMPLER
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        exporter = OTLPSpanExporter()
    assert isinstance(exporter, SpanExporter)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    spans.enable(provider)
    log.info("exporting traces over OTLP/HTTP as service %s", resource.attributes.get("service.name"))
    protocol = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or SUPPORTED_PROTOCOL)
    if protocol.strip() != SUPPORTED_PROTOCOL:
        log.warning("OTEL_EXPORTER_OTLP_PROTOCOL is %r: traces are sent as %s all the same", protocol[:40],
                    SUPPORTED_PROTOCOL)
    try:
        yield True
    finally:
        spans.disable()
        stop_within(provider, exporter, FLUSH_AT_STOP_SECONDS)


def stop_within(provider: object, exporter: object, seconds: float) -> None:
    """The provider flushed and shut down, in at most about `seconds`: past them the
    exporter is shut down too, which ends its retries, and what it held is lost."""
    stopping = threading.Thread(target=provider.shutdown, name="traces-shutdown", daemon=True)  # type: ignore[attr-defined]
    stopping.start()
    stopping.join(seconds)
    if stopping.is_alive():
        log.warning("the trace collector did not take the last spans within %.0f s: they are dropped", seconds)
        exporter.shutdown()  # type: ignore[attr-defined]
        stopping.join(1.0)
