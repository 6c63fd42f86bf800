"""Every edge value in every place a client can put one: each leaf of each route's good
body, each query parameter, each path id, and repeated headers, on every Connect API
operation of the OpenAPI document. No answer may be a 5xx or leave the envelope, and the
property's writer must still serve afterwards.

Exhaustive over the table rather than sampled: the table is the classes of input a review
or a crash found (years 1 and 9999, integers past a bigint or past Python's 4,300-digit
limit, control characters and bidi overrides, deep nesting), and every one is tried
everywhere, so a new route or field is covered the day it is documented.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from werkzeug.datastructures import Headers

from connectapi.domain.json_value import json_list, json_object
from connectapi.http.public.openapi import openapi_document

from .harness import API, Answer, Harness

EVERY_SCOPE = ["ari:read", "ari:write", "bookings:read", "bookings:write", "bookings:payments"]
LIFTED = ",".join(f"{name}=1000000" for name in (
    "ip", "ip-auth", "requests", "writes", "property", "property-writes", "cells", "bookings", "property-bookings",
    "property-bookings-day", "global"))

EDGE_JSON: list[Any] = [
    "0001-01-01", "9999-12-31", "9999-12-01", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "",
    "a\r\nBcc: x@example.com", "\u2028", "\u202e\u2066", "\x85", "\x1b[31m", "x" * 5000, "\u0663", "1e400",
    "NaN", 0, -1, 2**31, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 1e308, 0.5, True, None, [], {},
    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
]
EDGE_TEXT = ["0001-01-01", "9999-12-31", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00", "",
             "1" * 5000, "0" * 5000, str(2**63), str(2**64), "-1", "0", "\u0663", "\u00b2", "%00", "\r\n",
             "\u202e", "1e2", " 1"]
BIG_NUMBER_TEXT = "7" * 5000  # as JSON text: past Python's int limit


def good_bodies(prop: dict[str, Any], booking_id: int, reference: str = "X") -> dict[tuple[str, str], Any]:
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    return {
        ("PUT", "/availability"): {"updates": [{"roomTypeId": room, "dateFrom": "2026-12-01", "dateTo": "2026-12-02",
                                                "available": 2}]},
        ("PUT", "/rates"): {"updates": [{"ratePlanId": plan, "dateFrom": "2026-12-01", "dateTo": "2026-12-02",
                                         "rate": 100, "currency": "EUR", "days": ["mo", "tu"]}]},
        ("PUT", "/restrictions"): {"updates": [{"ratePlanId": plan, "dateFrom": "2026-12-01",
                                                "dateTo": "2026-12-02", "minStay": 2, "stopSell": False}]},
        ("POST", "/bookings"): {
            "externalReference": "EDGE-1", "checkIn": "2026-12-10", "checkOut": "2026-12-12", "currency": "EUR",
            "guest": {"name": "Ana Silva", "phone": "+351 912 345 678", "email": "ana@example.com",
                      "notes": "quiet"},
            "rooms": [{"roomTypeId": room, "ratePlanId": plan, "adults": 1, "nightlyRate": "90.00"}],
            "payment": {"amount": "10.00", "method": "ONLINE", "reference": "psp-1"}, "notes": "late"},
        # Changed before it is cancelled (a cancelled booking no longer changes).
        ("PATCH", f"/bookings/{booking_id}"): {
            "checkIn": "2026-12-10", "checkOut": "2026-12-13",
            "guest": {"name": "Ana Silva", "email": "ana@example.com", "notes": "quiet"},
            "rooms": [{"roomTypeId": room, "ratePlanId": plan, "adults": 1, "nightlyRate": "90.00"}],
            "notes": "later"},
        ("POST", f"/bookings/{booking_id}/cancel"): {"reason": "changed plans"},
        # The test helpers', sent with a test key.
        ("POST", "/test-helpers/ota-bookings"): {
            "roomTypeId": room, "ratePlanId": plan, "checkIn": "2026-12-10", "checkOut": "2026-12-12",
            "guest": {"name": "Ana Lima", "email": "ana@example.com", "phone": "+351912345678"}, "channel": "Expedia",
            "adults": 2, "children": 1, "amount": "240.00"},
        ("POST", f"/test-helpers/ota-bookings/{reference}/modify"): {"checkOut": "2026-12-13", "adults": 1},
        ("POST", "/test-helpers/channel-manager/faults"): {"mode": "ok", "count": 1},
    }


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value: each member and element, containers included."""
    if path:
        yield path
    if isinstance(value, dict):
        for name, member in value.items():
            yield from leaves(member, (*path, name))
    elif isinstance(value, list):
        for index, element in enumerate(value):
            yield from leaves(element, (*path, index))


def replaced(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    changed = copy.deepcopy(body)
    target = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


def in_the_envelope(answer: Answer, what: str) -> None:
    assert answer.status < 500, (what, answer.status, answer.body)
    body = answer.body
    if answer.status >= 400:
        assert isinstance(body, dict) and set(body) == {"statuscode", "message", "data"}, (what, body)
        assert body["statuscode"] == answer.status and isinstance(body["data"]["code"], str), (what, body)


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_BUDGETS": LIFTED}


# Two halves: the contract's bodies with a live key; the test helpers' with a test key,
# slow (each body that passes emits an OTA booking the intake takes in).
@pytest.mark.parametrize("half", ["contract", pytest.param("helpers", marks=pytest.mark.slow)])
async def test_every_edge_value_in_every_body_leaf(api: Harness, half: str) -> None:
    prop, live_key = await api.keyed_property(EVERY_SCOPE)
    test_key = str((await api.create_key(prop["id"], EVERY_SCOPE, mode="test"))["key"])
    made = await api.call("POST", f"{API}/bookings", key=live_key, body={
        **good_bodies(prop, 0)[("POST", "/bookings")], "externalReference": "EDGE-0"})
    assert made.status == 201, made.body
    ota = await api.call("POST", f"{API}/test-helpers/ota-bookings", key=test_key,
                         body=good_bodies(prop, 0)[("POST", "/test-helpers/ota-bookings")])
    assert ota.status == 201, ota.body
    bodies = good_bodies(prop, made.data["bookingId"], ota.data["reference"])
    documented = {(m.upper(), path.removeprefix(API))
                  for path, item in json_object(openapi_document()["paths"]).items()
                  for m, op in json_object(item).items() if "requestBody" in json_object(op)}
    placeholders = {str(made.data["bookingId"]): "{bookingId}", ota.data["reference"]: "{reference}"}
    assert {(m, "/".join(placeholders.get(part, part) for part in p.split("/"))) for m, p in bodies} == documented
    tried = 0
    for (method, path), body in bodies.items():
        helper = path.startswith("/test-helpers/")
        if helper != (half == "helpers"):
            continue
        key = test_key if helper else live_key
        for place in leaves(body):
            for value in EDGE_JSON:
                answer = await api.call(method, f"{API}{path}", key=key, body=replaced(body, place, value))
                in_the_envelope(answer, f"{method} {path} {place}={value!r:.60}")
                tried += 1
            raw = json.dumps(replaced(body, place, "@big@")).replace('"@big@"', BIG_NUMBER_TEXT)
            in_the_envelope(await api.call(method, f"{API}{path}", key=key, raw=raw.encode(),
                                           headers={"Content-Type": "application/json"}), f"{path} {place} big")
    assert tried > (1000 if half == "contract" else 400)
    # the property's writer still serves
    again = await api.call("POST", f"{API}/bookings", key=live_key, body={
        **bodies[("POST", "/bookings")], "externalReference": "EDGE-LAST"})
    assert again.status == 201, again.body


async def test_every_edge_value_in_every_query_and_path(api: Harness) -> None:
    _, key = await api.keyed_property(EVERY_SCOPE)
    for path, item in json_object(openapi_document()["paths"]).items():
        for method, op in json_object(item).items():
            parameters = map(json_object, json_list(json_object(op).get("parameters", [])))
            names = {str(p["name"]): p["in"] for p in parameters}
            for name, where in names.items():
                for text in EDGE_TEXT:
                    escaped = quote(text, safe="%")
                    if where == "query":
                        url = f"{path}?{name}={escaped}"
                    elif where == "path":
                        url = path.replace(f"{{{name}}}", escaped or "x")
                    else:
                        continue  # headers: below
                    url = url.replace("{bookingId}", "1").replace("{batchId}", "1")
                    answer = await api.call(method.upper(), url, key=key,
                                            body={} if method in ("put", "post") else None)
                    in_the_envelope(answer, f"{method} {url:.80}")


async def test_repeated_headers_never_confuse_a_route(api: Harness) -> None:
    prop, key = await api.keyed_property(EVERY_SCOPE)
    body = json.dumps(good_bodies(prop, 0)[("PUT", "/availability")]).encode()
    for name, values in (("Authorization", [f"Bearer {key}", "Bearer cak_live_" + "x" * 43]),
                         ("Authorization", ["Bearer cak_live_" + "x" * 43, f"Bearer {key}"]),
                         ("Content-Type", ["application/json", "text/plain"]),
                         ("x-idempotency-key", ["edge-0000000001", "edge-0000000002"]),
                         ("X-Forwarded-For", ["203.0.113.5", "\u0663"]),
                         ("Content-Length", [str(len(body)), "5"])):
        headers = Headers([("Content-Type", "application/json")] if name != "Content-Type" else [])
        if name != "Authorization":
            headers.add("Authorization", f"Bearer {key}")
        for value in values:
            headers.add(name, value)
        response = await api.client.open(f"{API}/availability", method="PUT", headers=headers, data=body,  # type: ignore[call-arg]
                                         scope_base={"client": ("198.51.100.7", 40000)})
        answer = Answer(response.status_code, await response.get_json(), response.headers)
        in_the_envelope(answer, f"two {name} lines")
