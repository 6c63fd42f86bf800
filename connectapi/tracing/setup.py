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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from . import spans

log = logging.getLogger("connectapi.tracing")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
DEFAULT_SERVICE_NAME = "connectapi"
# What the exporter may take to send what is left as the process stops: a collector that
# is away must not hold a stop (the spans are lost, the stop is not).
FLUSH_AT_STOP_MILLIS = 5000


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
    provider.add_span_processor(BatchSpanProcessor(exporter, export_timeout_millis=FLUSH_AT_STOP_MILLIS))
    spans.enable(provider)
    log.info("exporting traces over OTLP/HTTP as service %s", resource.attributes.get("service.name"))
    try:
        yield True
    finally:
        spans.disable()
        provider.shutdown()
