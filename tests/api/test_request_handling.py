"""Strict request handling: body size, JSON, unknown fields and routes, and the 500 envelope."""

from __future__ import annotations

from .harness import API, Harness

MAX = 1_048_576


async def test_body_over_the_limit_is_413_before_it_is_read(api: Harness) -> None:
    _, key = await api.keyed_property()
    answer = await api.call("PUT", f"{API}/probe/ari", key=key, raw=b"x" * (MAX + 1),
                            headers={"Content-Type": "application/json"})
    assert (answer.status, answer.code) == (413, "PAYLOAD_TOO_LARGE")
    assert answer.body["statuscode"] == 413


async def test_body_at_the_limit_is_read(api: Harness) -> None:
    _, key = await api.keyed_property()
    entries = '{"a":1},' * 10
    body = ('{"updates":[' + entries.rstrip(",") + "]}").encode()
    body = body[:-1] + b" " * (MAX - len(body)) + b"}"
    assert len(body) == MAX
    answer = await api.call("PUT", f"{API}/probe/ari", key=key, raw=body, headers={"Content-Type": "application/json"})
    assert answer.status == 202 and answer.data == {"entries": 10}


async def test_body_that_is_not_json_is_validation(api: Harness) -> None:
    _, key = await api.keyed_property()
    for raw in (b"{not json", b"", b"[1,2]", b"\xff\xfe"):
        answer = await api.call("PUT", f"{API}/probe/ari", key=key, raw=raw)
        assert (answer.status, answer.code) == (400, "VALIDATION"), raw
        assert isinstance(answer.data["details"], list)
        assert answer.data["details"][0]["path"] == "$"


async def test_unknown_fields_are_validation_with_paths(api: Harness) -> None:
    _, key = await api.keyed_property()
    answer = await api.call("PUT", f"{API}/probe/ari", key=key, body={"updates": [], "extra": 1})
    assert (answer.status, answer.code) == (400, "VALIDATION")
    assert answer.data["details"] == [{"path": "extra", "message": "unknown field"}]
    answer = await api.call("PUT", f"{API}/probe/ari", key=key, body={"updates": [{"a": "1"}]})
    assert answer.data["details"][0]["path"] == "updates[0].a"


async def test_unknown_route_and_wrong_method_are_in_the_envelope(api: Harness) -> None:
    _, key = await api.keyed_property()
    missing = await api.call("GET", f"{API}/no-such-thing", key=key)
    assert (missing.status, missing.code) == (404, "NOT_FOUND")
    assert missing.body["statuscode"] == 404
    wrong = await api.call("DELETE", f"{API}/property", key=key)
    assert (wrong.status, wrong.code) == (405, "METHOD_NOT_ALLOWED")
    assert "GET" in wrong.headers["Allow"]
    outside = await api.call("GET", "/nothing-here")
    assert (outside.status, outside.code) == (404, "NOT_FOUND")


async def test_unexpected_exception_is_a_500_with_a_request_id_and_nothing_internal(api: Harness) -> None:
    _, key = await api.keyed_property()
    answer = await api.call("GET", f"{API}/probe/crash", key=key)
    assert (answer.status, answer.code) == (500, "INTERNAL")
    request_id = answer.data["details"]["requestId"]
    assert request_id == answer.headers["X-Request-Id"]
    text = str(answer.body)
    assert "hunter2" not in text and "RuntimeError" not in text and "Traceback" not in text


async def test_every_answer_has_a_request_id(api: Harness) -> None:
    a = await api.call("GET", f"{API}/property")
    b = await api.call("GET", "/healthz")
    assert a.headers["X-Request-Id"] != b.headers["X-Request-Id"]
