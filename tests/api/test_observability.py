"""One structured log line per request, a request id on every answer, and /metrics."""

from __future__ import annotations

import json
import logging
import time
from datetime import date

import pytest
from pythonjsonlogger.json import JsonFormatter

from .harness import API, Harness


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_BUDGETS": "requests=3"}


async def test_each_request_leaves_one_line_without_its_key(api: Harness, caplog: pytest.LogCaptureFixture) -> None:
    prop, key = await api.keyed_property()
    caplog.set_level(logging.INFO, logger="connectapi.access")
    answers, took_ms = [], []
    for _ in range(4):
        sent = time.perf_counter()
        answers.append(await api.call("GET", f"{API}/property", key=key))
        took_ms.append((time.perf_counter() - sent) * 1000)
    assert [a.status for a in answers] == [200, 200, 200, 429]
    lines = [r for r in caplog.records if r.name == "connectapi.access"]
    assert len(lines) == 4
    ok, limited = lines[0].__dict__, lines[3].__dict__
    assert (ok["route"], ok["status"], ok["propertyId"]) == ("/api/v1/connect-api/v1/property", 200, prop["id"])
    assert ok["requestId"] == answers[0].headers["X-Request-Id"]
    # Each line's duration is in milliseconds, measured within the call the test timed (the
    # line rounds to 0.01 ms); any request through the app takes more than 0.005 ms.
    durations = [line.__dict__["durationMs"] for line in lines]
    assert all(0 < logged <= took + 0.005 for logged, took in zip(durations, took_ms, strict=True)), \
        (durations, took_ms)
    assert (limited["status"], limited["code"], limited["scope"]) == (429, "RATE_LIMITED", "requests")
    rendered = JsonFormatter("%(levelname)s %(name)s %(message)s").format(lines[3])
    assert json.loads(rendered)["scope"] == "requests"
    assert key not in caplog.text and key[:20] not in rendered


async def test_metrics_need_the_operator_token_and_count(api: Harness) -> None:
    refused = await api.call("GET", "/metrics")
    assert (refused.status, refused.code) == (401, "ADMIN_TOKEN_INVALID")
    prop, key = await api.keyed_property()
    written = await api.call("PUT", f"{API}/availability", key=key, body={"updates": [{
        "roomTypeId": prop["roomTypes"][0]["id"], "dateFrom": str(date(2026, 12, 1)), "dateTo": "2026-12-03",
        "available": 2}]})
    assert written.status == 202  # three cells, held back: pushes are paused in these tests
    for _ in range(3):
        await api.call("GET", f"{API}/property", key=key)
    response = await api.client.get("/metrics", headers={"Authorization": "Bearer test-operator-token"})
    assert response.status_code == 200 and response.content_type.startswith("text/plain")
    text = await response.get_data(as_text=True)
    assert 'connectapi_requests_total{method="GET",route="/api/v1/connect-api/v1/property",status="200"}' in text
    assert 'connectapi_rate_limited_total{scope="requests"}' in text
    assert 'connectapi_request_seconds_bucket{le="0.005",method="GET",route="/api/v1/connect-api/v1/property"}' in text
    assert 'connectapi_dirty_cells{resource="availability"} 3.0' in text
    assert "connectapi_webhook_backlog 0.0" in text and "connectapi_webhook_failures_total" in text
    assert "process_resident_memory_bytes " in text and 'python_gc_collections_total{generation="2"}' in text


async def test_a_client_chosen_method_never_becomes_a_label_or_a_long_line(
        api: Harness, caplog: pytest.LogCaptureFixture) -> None:
    """Three 3,000-character methods to /healthz (405) grew /metrics by 165 KB: every label
    comes from a fixed set, and nothing the client chose is copied whole into a line."""
    caplog.set_level(logging.INFO, logger="connectapi")
    odd = "X" * 3000

    async def metrics_text() -> str:
        response = await api.client.get("/metrics", headers={"Authorization": "Bearer test-operator-token"})
        return await response.get_data(as_text=True)

    for _ in range(3):
        answer = await api.call(odd, "/healthz")
        assert (answer.status, answer.code) == (405, "METHOD_NOT_ALLOWED")
        assert odd not in json.dumps(answer.body)
    # Every series the second scrape counts exists before the first (the registry is the
    # process's: whether an earlier test made them depends on the order tests run in).
    await api.call("GET", "/nowhere")
    await metrics_text()
    first = await metrics_text()
    for n in range(3):
        await api.call(odd + str(n), "/healthz")
        await api.call("GET", "/nowhere/" + "y" * 3000)
    second = await metrics_text()
    assert "XXXX" not in second and "yyyy" not in second
    assert 'connectapi_requests_total{method="other",route="unmatched",status="405"} 6.0' in second
    assert abs(len(second) - len(first)) < 2000  # new counts, not new series
    lines = [r for r in caplog.records if r.name == "connectapi.access"]
    assert lines and all(len(r.getMessage()) + len(str(r.__dict__.get("method"))) < 300 for r in lines)
    assert "XXXX" not in caplog.text and "yyyy" not in caplog.text
