"""The channel manager's calls as client spans: OpenTelemetry's httpx transport, wrapped
around the client's own transport when tracing is on.

No header is captured whatever OTEL_INSTRUMENTATION_HTTP_CAPTURE_* says: the channel
manager's key travels in one (`user-api-key`).
"""

from __future__ import annotations

import httpx

from . import spans


def traced(transport: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
    """`transport`, its requests traced when tracing is on (as it is when off)."""
    if not spans.enabled():
        return transport
    from opentelemetry.instrumentation.httpx import AsyncOpenTelemetryTransport

    wrapped = AsyncOpenTelemetryTransport(transport, tracer_provider=spans.provider())
    # The instrumentation reads these from the environment; ours are fixed: none.
    wrapped._captured_request_headers = []
    wrapped._captured_response_headers = []
    return wrapped
