"""A test OpenTelemetry collector: takes OTLP/HTTP trace exports (protobuf, as the SDK's
exporter sends them, gzip or not), decodes them with the OTLP protos and keeps each span
as a plain record the tests can read."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                       ExportTraceServiceResponse)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


@dataclass(frozen=True)
class Received:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: str
    attributes: dict[str, Any]
    links: tuple[tuple[str, str], ...]  # (trace id, span id)
    resource: dict[str, Any]
    events: tuple[tuple[str, dict[str, Any]], ...] = field(default=())
    status: tuple[int, str] = (0, "")  # (code, message)

    def text(self) -> str:
        """Everything the span says, as one string: to look for what it must not say."""
        return repr((self.name, self.attributes, self.events, self.status, self.resource))


def _value(found: AnyValue) -> Any:
    which = found.WhichOneof("value")
    if which == "array_value":
        return [_value(v) for v in found.array_value.values]
    return getattr(found, which) if which else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {p.key: _value(p.value) for p in pairs}


class Collector(ThreadingHTTPServer):
    def __init__(self) -> None:
        self.spans: list[Received] = []
        self.requests = 0
        self._lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(Received(
                        span.name, span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(),
                        KINDS[span.kind], _attributes(span.attributes),
                        tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links), resource,
                        tuple((event.name, _attributes(event.attributes)) for event in span.events),
                        (span.status.code, span.status.message)))
        with self._lock:
            self.requests += 1
            self.spans.extend(found)

    def named(self, name: str) -> list[Received]:
        with self._lock:
            return [s for s in self.spans if s.name == name]

    def wait_for(self, found: Callable[[], Any], timeout: float = 30) -> Any:
        """`found()` once it is truthy (the service exports every fraction of a second)."""
        deadline = time.monotonic() + timeout
        while True:
            answer = found()
            if answer:
                return answer
            if time.monotonic() > deadline:
                names = sorted({s.name for s in self.spans})
                raise AssertionError(f"not exported within {timeout} s; spans seen: {names}")
            time.sleep(0.1)


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        self.server.take(body)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass
