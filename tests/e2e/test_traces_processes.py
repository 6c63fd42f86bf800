"""Traces from a real `connectapi serve` to a test OTLP/HTTP collector: a rate written with
a test key, pushed to the test sandbox, and an OTA booking delivered to a test endpoint,
followed span by span; requests side by side keep their own traces; no key or secret in
any attribute; log lines name their trace."""

from __future__ import annotations

import json
import signal
import threading
from datetime import date, timedelta
from pathlib import Path

import httpx

from ..otlp_collector import Collector, Received
from .live import EVERY_SCOPE, LIFTED
from .test_ota_webhooks_processes import Receiver as WebhookReceiver
from .test_serve_process import Served, free_port

API = "/api/v1/connect-api/v1"


class Receiver(WebhookReceiver):
    """The OTA e2e test's receiver, up, at a URL carrying a token of the receiver's own."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return super().url + "?token=receiver-own-secret"


def _in_trace(collector: Collector, trace_id: str) -> list[Received]:
    return [s for s in collector.spans if s.trace_id == trace_id]


def test_a_rate_and_an_ota_booking_are_traced_from_the_request_to_the_channel_call(tmp_path: Path) -> None:
    collector, receiver = Collector(), Receiver()
    served = Served(tmp_path / "var", free_port(), {
        "CONNECTAPI_BUDGETS": LIFTED, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "connectapi-traced",
        # Asked for, and not given: no header of ours is captured, whatever this says.
        "OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_REQUEST": ".*",
        "OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_REQUEST": ".*"})
    secrets: list[str] = []
    try:
        served.wait_for("listening on")
        token = (tmp_path / "var" / "admin-token").read_text().strip()
        secrets.append(token)
        admin = httpx.Client(base_url=f"{served.url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"},
                             timeout=30)
        example = json.loads((Path(__file__).parents[2] / "docs" / "examples" / "property.json").read_text())
        prop = admin.post("/properties", json=example).json()["data"]
        key = admin.post(f"/properties/{prop['id']}/keys", json={"label": "traced", "scopes": EVERY_SCOPE,
                                                                 "mode": "test"}).json()["data"]["key"]
        secrets.append(key)
        endpoint = admin.post(f"/properties/{prop['id']}/webhooks",
                              json={"url": receiver.url, "mode": "test"}).json()["data"]
        secrets.append(endpoint["secret"])
        api = httpx.Client(base_url=served.url + API, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        catalog = api.get("/catalog").json()["data"]
        plan = catalog["ratePlans"][0]["id"]
        room = catalog["roomTypes"][0]["id"]
        night = date.today() + timedelta(days=7)

        # A rate: its request, the writer's apply and the write's statement in one trace,
        # its push under it with the batch, and the push's call to the (test) channel manager.
        written = api.put("/rates", json={"updates": [{"ratePlanId": plan, "dateFrom": night.isoformat(),
                                                       "dateTo": night.isoformat(), "rate": "135.00",
                                                       "currency": "EUR"}]})
        assert written.status_code == 202, written.text
        batch = written.json()["data"]["batchId"]
        assert api.get(f"/batches/{batch}", params={"wait": 20}).json()["data"]["status"] == "completed"
        push = collector.wait_for(lambda: [s for s in collector.named("push restrictions")
                                           if batch in s.attributes.get("connectapi.batch_ids", [])])[0]
        server = [s for s in _in_trace(collector, push.trace_id) if s.kind == "server"]
        assert [s.name for s in server] == [f"PUT {API}/rates"], server
        assert server[0].attributes["http.route"] == f"{API}/rates"
        assert isinstance(server[0].attributes["connectapi.property_id"], int)
        assert server[0].attributes["http.status_code"] == 202
        assert server[0].resource["service.name"] == "connectapi-traced"
        charged = [s for s in _in_trace(collector, push.trace_id) if s.name == "budgets charge"]
        assert charged and all(s.parent_id == server[0].span_id for s in charged)
        applied = [s for s in _in_trace(collector, push.trace_id) if s.name == "PropertyWriter ApplyWrite"]
        assert len(applied) == 1 and applied[0].parent_id == server[0].span_id
        assert applied[0].attributes["connectapi.batch_id"] == batch
        assert applied[0].attributes["connectapi.cells_accepted"] == 1
        statement = [s for s in _in_trace(collector, push.trace_id) if s.name == "record connectapi_write_cells"]
        assert len(statement) == 1 and statement[0].parent_id == applied[0].span_id
        assert push.parent_id == applied[0].span_id  # one batch: the push joins its request's trace
        assert push.attributes["channex.task_ids"], push.attributes
        call = collector.wait_for(lambda: [s for s in _in_trace(collector, push.trace_id)
                                           if s.kind == "client" and s.name == "POST"])
        served_push = [s for s in _in_trace(collector, push.trace_id) if s.name == "ChannelManagerActor Push"]
        assert len(served_push) == 1 and served_push[0].parent_id == push.span_id
        assert call[0].parent_id == served_push[0].span_id
        budget = [s for s in _in_trace(collector, push.trace_id) if s.name == "channel budget"]
        assert budget and budget[0].parent_id == served_push[0].span_id

        # Requests side by side: each server span in a trace of its own, each writer's span
        # under its own request.
        puts = []

        def put(offset: int) -> None:
            day = (night + timedelta(days=offset)).isoformat()
            puts.append(api.put("/rates", json={"updates": [{"ratePlanId": plan, "dateFrom": day, "dateTo": day,
                                                             "rate": f"{100 + offset}.00", "currency": "EUR"}]}))

        threads = [threading.Thread(target=put, args=(n,)) for n in range(1, 9)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        batch_of = {r.headers["X-Request-Id"]: r.json()["data"]["batchId"] for r in puts}
        batches = set(batch_of.values())
        assert len(batches) == 8
        applies = collector.wait_for(lambda: (found := [s for s in collector.named("PropertyWriter ApplyWrite")
                                                         if s.attributes.get("connectapi.batch_id") in batches])
                                     and len(found) == 8 and found)
        # A request's span ends once it is answered, after its writer's.
        servers = collector.wait_for(lambda: (found := {s.span_id: s for s in collector.spans if s.kind == "server"
                                                         and s.name == f"PUT {API}/rates"})
                                     and all(a.parent_id in found for a in applies) and found)
        assert len({a.trace_id for a in applies}) == 8
        for apply in applies:
            # Under its own request's span: the request that was answered with its batch.
            parent = servers[apply.parent_id]
            assert parent.trace_id == apply.trace_id
            assert batch_of[parent.attributes["connectapi.request_id"]] == apply.attributes["connectapi.batch_id"]
        # Their pushes: one batch's joins its trace; one carrying several is linked to each
        # of their writes (eight writes within the gathering window: at least one such).
        carrying = collector.wait_for(lambda: (found := [p for p in collector.named("push restrictions")
                                                         if set(p.attributes["connectapi.batch_ids"]) & batches])
                                      and set().union(*(p.attributes["connectapi.batch_ids"] for p in found))
                                      >= batches and found)
        apply_of = {a.attributes["connectapi.batch_id"]: a for a in applies}
        for pushed in carrying:
            carried = [apply_of[b] for b in pushed.attributes["connectapi.batch_ids"]]
            if len(carried) == 1:
                assert (pushed.trace_id, pushed.parent_id) == (carried[0].trace_id, carried[0].span_id)
            else:
                assert pushed.parent_id == "" and set(pushed.links) == {(a.trace_id, a.span_id) for a in carried}
        assert any(len(p.attributes["connectapi.batch_ids"]) > 1 for p in carrying)

        # An OTA booking: the intake's round applies the revision; its event's delivery to
        # the test endpoint is a client span linked to that apply, with its attempt and status.
        made = api.post("/test-helpers/ota-bookings", json={
            "roomTypeId": room, "ratePlanId": plan, "checkIn": night.isoformat(),
            "checkOut": (night + timedelta(days=1)).isoformat(), "guest": {"name": "Ana Silva"}})
        assert made.status_code in (200, 201), made.text
        delivery = collector.wait_for(lambda: [s for s in collector.named("webhook delivery")
                                               if s.attributes.get("connectapi.endpoint_id") == endpoint["id"]
                                               and s.attributes["connectapi.event_type"] ==
                                               "channel.booking.created"])[0]
        assert len(delivery.links) == 1
        assert delivery.kind == "client"
        assert delivery.attributes["connectapi.attempt"] == 1
        assert delivery.attributes["http.response.status_code"] == 204
        revision = [s for s in collector.named("PropertyWriter ApplyOtaRevision")
                    if (s.trace_id, s.span_id) == delivery.links[0]]
        assert len(revision) == 1, [(s.name, s.attributes) for s in collector.spans
                                    if (s.trace_id, s.span_id) == delivery.links[0]]
        assert revision[0].attributes["connectapi.revision_state"] == "applied"
        rounds = [s for s in _in_trace(collector, revision[0].trace_id) if s.name == "booking intake round"]
        assert len(rounds) == 1 and revision[0].parent_id == rounds[0].span_id
        # The console's delivery view shows the attempt's trace id to copy.
        page = admin.get(f"/webhooks/{endpoint['id']}/deliveries")
        assert page.status_code == 200, page.text
        delivered = [d for d in page.json()["data"] if d.get("traceId") == delivery.trace_id]
        assert delivered, page.json()["data"]
    finally:
        served.proc.send_signal(signal.SIGTERM)
        lines = served.read_until_blocked() if served.proc.poll() is None else []
        served.proc.wait(30)
        receiver.shutdown()
        collector.shutdown()
    # Nothing a span says (name, attributes, events, status, resource) holds a key, a token,
    # a secret, the receiver's query, or the guest's name; no header is recorded.
    for span in collector.spans:
        text = span.text()
        for secret in secrets + ["receiver-own-secret", "Ana Silva", "Silva"]:
            assert secret not in text, (span.name, secret[:6])
        assert not any("header" in name for name in span.attributes), span.attributes
        assert "client.address" not in span.attributes and "net.peer.ip" not in span.attributes
    # A log line written inside a request's span names that request's span.
    by_request = {s.attributes["connectapi.request_id"]: s for s in collector.spans if s.kind == "server"}
    # A log line written inside a span names its trace: each access line of the rates
    # written names its request's server span.
    logged = [json.loads(line) for line in lines if line.startswith("{")]
    access = [entry for entry in logged if entry.get("message") == "request" and entry.get("route") == f"{API}/rates"]
    assert len(access) >= 9, [entry.get("message") for entry in logged][:20]
    for entry in access:
        own = by_request[entry["requestId"]]
        assert (entry["trace_id"], entry["span_id"]) == (own.trace_id, own.span_id), entry
