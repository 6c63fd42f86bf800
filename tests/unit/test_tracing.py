"""Traces (connectapi/tracing): off costs nothing and makes no span; on, spans nest where the
work does, an ask to an actor is served under the asker's span, an actor made inside a
request is not that request's, tasks side by side keep their own traces, a kept
traceparent reads back, log lines name their span, and the front shows the middleware
the route's template and no header of the caller's."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import trio
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from werkzeug.routing import Map, Rule

from connectapi.engine import Actor, Ask, open_supervisor
from connectapi.tracing import spans
from connectapi.tracing.asgi import UNMATCHED, TracedApp, route_of
from connectapi.tracing.http_client import TracedTransport, trace_calls
from connectapi.tracing.log_fields import TraceFields
from connectapi.tracing.setup import exporting, stop_within, wanted


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    with exporting("test", exporter=exporter):
        yield exporter


def finished(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    provider = spans.provider()
    assert provider is not None
    provider.force_flush()  # type: ignore[attr-defined]
    return list(exporter.get_finished_spans())


def by_name(found: list[ReadableSpan], name: str) -> ReadableSpan:
    named = [s for s in found if s.name == name]
    assert len(named) == 1, [s.name for s in found]
    return named[0]


def test_off_nothing_is_made_or_carried() -> None:
    assert not spans.enabled()
    with spans.span("anything") as opened:
        assert not opened.is_recording()
        assert spans.carried() is None and spans.traceparent() is None and spans.trace_id() is None
    spans.note({"a": 1})  # no span, no error
    spans.event("nothing")


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
])
def test_exporting_is_wanted_only_with_an_endpoint_and_not_disabled(environ: dict[str, str], expected: bool) -> None:
    assert wanted(environ) is expected


def test_off_the_block_runs_with_no_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    with exporting("test") as on:
        assert on is False and spans.provider() is None


def test_a_kept_traceparent_reads_back_and_a_bad_one_is_none(exported: InMemorySpanExporter) -> None:
    with spans.span("written"):
        kept = spans.traceparent()
        here = spans.carried()
    assert kept is not None and here is not None
    back = spans.from_traceparent(kept)
    assert back is not None and (back.trace_id, back.span_id) == (here.trace_id, here.span_id)
    assert spans.trace_id_of(kept) == f"{here.trace_id:032x}"
    for bad in (None, "", "00-xyz", "00-" + "0" * 32 + "-" + "0" * 16 + "-01", "00-" + "g" * 32 + "-" + "1" * 16
                + "-01"):
        assert spans.from_traceparent(bad) is None


def test_work_handed_over_joins_its_parent_or_links_to_several(exported: InMemorySpanExporter) -> None:
    with spans.span("request one"):
        one = spans.carried()
    with spans.span("request two"):
        two = spans.carried()
    assert one is not None and two is not None
    with spans.span("push of one", parent=one):
        pass
    with spans.span("push of both", links=[one, two]):
        pass
    found = finished(exported)
    joined = by_name(found, "push of one")
    assert joined.context.trace_id == one.trace_id and joined.parent is not None
    assert joined.parent.span_id == one.span_id
    linked = by_name(found, "push of both")
    assert linked.parent is None and linked.context.trace_id not in (one.trace_id, two.trace_id)
    assert {(link.context.trace_id, link.context.span_id) for link in linked.links} == {
        (one.trace_id, one.span_id), (two.trace_id, two.span_id)}


@dataclass(frozen=True)
class Apply(Ask[str]):
    what: str


class Writer(Actor[Apply]):
    async def handle(self, message: Apply) -> str:
        with spans.span(f"statement {message.what}"):
            await trio.sleep(0.01)
        return message.what


async def test_an_ask_is_served_under_the_askers_span_and_asks_side_by_side_keep_their_traces(
        exported: InMemorySpanExporter, autojump_clock: object) -> None:
    async with open_supervisor() as root:
        writers = []
        with spans.span("request that made the writer"):
            # Made inside a request, as a property's writer is by its first request.
            writers.append(await root.spawn("writer", Writer))
        mailbox = writers[0]

        async def request(what: str) -> None:
            with spans.span(f"request {what}"):
                assert await mailbox.ask(Apply(what), 5) == what

        async with trio.open_nursery() as nursery:
            for what in "abcdef":
                nursery.start_soon(request, what)
        # A tell (no asker waiting) is served in no span, and not in the maker's either.
        await mailbox.tell(Apply("told"))
        assert await mailbox.ask(Apply("after"), 5) == "after"
    found = finished(exported)
    for what in "abcdef":
        asked = by_name(found, f"request {what}")
        served = next(
            s for s in found if s.name == "Writer Apply" and s.parent is not None
            and s.parent.span_id == asked.context.span_id)
        statement = by_name(found, f"statement {what}")
        assert served.context.trace_id == asked.context.trace_id
        assert statement.parent is not None and statement.parent.span_id == served.context.span_id
    maker = by_name(found, "request that made the writer")
    told = by_name(found, "statement told")
    assert told.parent is None and told.context.trace_id != maker.context.trace_id
    after = by_name(found, "statement after")
    assert after.parent is None  # asked from outside any span: nothing to serve it under


def test_a_log_line_inside_a_span_names_it(exported: InMemorySpanExporter) -> None:
    fields = TraceFields()
    outside = logging.LogRecord("t", logging.INFO, __file__, 1, "outside", None, None)
    assert fields.filter(outside) and not hasattr(outside, "trace_id")
    with spans.span("logging"):
        here = spans.carried()
        inside = logging.LogRecord("t", logging.INFO, __file__, 1, "inside", None, None)
        assert fields.filter(inside)
    assert here is not None
    assert getattr(inside, "trace_id") == f"{here.trace_id:032x}"
    assert getattr(inside, "span_id") == f"{here.span_id:016x}"


ROUTES = Map([Rule("/console/setup/<token>", endpoint="setup", methods=["GET"]),
              Rule("/api/v1/properties/<int:property_id>/rates", endpoint="rates", methods=["PUT"])])


def test_the_route_is_named_by_its_template_never_by_the_path_sent() -> None:
    assert route_of(ROUTES, "GET", "/console/setup/s3cr3t-token") == "/console/setup/<token>"
    assert route_of(ROUTES, "PUT", "/api/v1/properties/7/rates") == "/api/v1/properties/<int:property_id>/rates"
    assert route_of(ROUTES, "GET", "/api/v1/properties/7/rates") == UNMATCHED  # 405
    assert route_of(ROUTES, "GET", "/nowhere/s3cr3t") == UNMATCHED


async def test_the_middleware_is_shown_the_template_and_no_header_of_the_callers(
        exported: InMemorySpanExporter) -> None:
    seen = []

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, object]) -> None:
        pass

    scope = {"type": "http", "method": "GET", "path": "/console/setup/s3cr3t-token",
             "raw_path": b"/console/setup/s3cr3t-token", "query_string": b"next=s3cr3t-query", "scheme": "http",
             "http_version": "1.1", "server": ("127.0.0.1", 8080), "client": ("127.0.0.1", 5000),
             "headers": [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer cak_live_s3cr3t"),
                         (b"cookie", b"session=s3cr3t")]}
    await TracedApp(app, ROUTES)(scope, receive, send)
    assert seen == [scope]  # the app gets the request as sent
    (server,) = finished(exported)
    assert server.name == "GET /console/setup/<token>"
    assert server.attributes is not None and server.attributes["http.route"] == "/console/setup/<token>"
    assert "s3cr3t" not in repr(dict(server.attributes))
    assert not {"client.address", "net.peer.ip", "http.client_ip"} & set(server.attributes)


def test_off_the_sdk_the_exporter_and_the_middleware_are_never_imported() -> None:
    script = ("import sys, connectapi.service, connectapi.http.app, connectapi.channel.client\n"
              "from connectapi.tracing.setup import exporting\n"
              "with exporting('x') as on: assert on is False\n"
              "loaded = sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter',"
              " 'opentelemetry.instrumentation')))\n"
              "print(loaded)")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    ran = subprocess.run([sys.executable, "-c", script], env=environ, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"


def test_a_collector_that_is_away_holds_a_stop_for_the_bound_only() -> None:
    """An exporter retrying with backoff (1, 2, 4 s) against a refusing port: the SDK's
    shutdown waited up to 30 s; the stop gives up at its bound and drops what is left."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    with socket.socket() as sock:  # a port that refuses: bound, then closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    for n in range(1500):
        tracer.start_span(f"span {n}").end()
    started = time.monotonic()
    stop_within(provider, exporter, 0.5)
    assert time.monotonic() - started < 4.0  # the bound and the exporter's stop; not its backoff's 7 s or more


async def test_a_channel_call_is_a_client_span_that_says_no_header_and_no_error_text(
        exported: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/broken":
            raise httpx.LocalProtocolError("Illegal header value b'SECRETKEY123\\n'")
        return httpx.Response(429 if request.url.path == "/busy" else 200)

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # httpx mounts a proxy for it: traced too
    http = httpx.AsyncClient(base_url="https://cm.example", headers={"user-api-key": "SECRETKEY123"})
    trace_calls(http)
    assert isinstance(http._transport, TracedTransport)
    assert http._mounts and all(isinstance(t, TracedTransport) for t in http._mounts.values() if t is not None)
    http._mounts = {}
    http._transport = TracedTransport(httpx.MockTransport(answer))
    with spans.span("push"):
        assert (await http.get("/api/v1/ari?filter[date]=2026-12-01")).status_code == 200
        assert (await http.post("/busy")).status_code == 429
        with pytest.raises(httpx.LocalProtocolError):
            await http.get("/broken")
    assert all("traceparent" in r.headers and "tracestate" not in r.headers for r in seen)
    found = finished(exported)
    calls = [s for s in found if s.kind.name == "CLIENT"]
    assert [(s.name, s.attributes and s.attributes.get("url.path")) for s in calls] == [
        ("GET", "/api/v1/ari"), ("POST", "/busy"), ("GET", "/broken")]
    push = by_name(found, "push")
    assert all(s.parent is not None and s.parent.span_id == push.context.span_id for s in calls)
    assert calls[0].attributes is not None and calls[0].attributes["http.response.status_code"] == 200
    assert calls[1].status.description == "429"
    assert calls[2].status.description == "LocalProtocolError"
    for span in found:
        assert "SECRETKEY" not in repr((span.attributes, span.events, span.status.description))
        assert not span.events
