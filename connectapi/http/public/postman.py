"""The Postman v2.1 collection of the Connect API and its environment, from the same route
table as the OpenAPI document.

The collection runs top to bottom against a live service: reading the property and the
catalog fills the variables (currency, room type, rate plan) that the writes and the
booking use, a write's batch id and a booking's id feed the requests after them, and
every request checks its status.
"""

from __future__ import annotations

import json

from ...domain.json_value import JsonObject, JsonValue
from ..api.gates import CONNECT_PREFIX
from .openapi import OPERATIONS, Operation

SCHEMA = "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"

# Example bodies, with Postman variables where the values come from the service.
_BODIES: dict[str, JsonObject] = {
    "putAvailability": {"updates": [{"roomTypeId": "{{roomTypeId}}", "dateFrom": "{{night}}",
                                     "dateTo": "{{nightAfter}}", "available": 5}]},
    # `occupancy`: the plan's largest when it is sold per person, null (none) per room.
    "putRates": {"updates": [{"ratePlanId": "{{ratePlanId}}", "occupancy": "{{occupancy}}", "dateFrom": "{{night}}",
                              "dateTo": "{{nightAfter}}", "rate": "120.00", "currency": "{{currency}}"}]},
    "putRestrictions": {"updates": [{"ratePlanId": "{{ratePlanId}}", "dateFrom": "{{night}}",
                                     "dateTo": "{{nightAfter}}", "minStayArrival": 2, "closedToArrival": False}]},
    "createBooking": {"externalReference": "{{externalReference}}", "checkIn": "{{night}}",
                      "checkOut": "{{checkOut}}", "currency": "{{currency}}",
                      "guest": {"name": "Ana Lima", "phone": "+351 912 345 678", "email": "ana@example.com"},
                      "rooms": [{"roomTypeId": "{{roomTypeId}}", "ratePlanId": "{{ratePlanId}}", "adults": 1,
                                 "nightlyRate": "120.00"}]},
    "modifyBooking": {"checkOut": "{{checkOutLater}}", "guest": {"email": "ana.lima@example.com"}},
    "cancelBooking": {"reason": "guest changed plans"},
    "testOtaBooking": {"roomTypeId": "{{roomTypeId}}", "ratePlanId": "{{ratePlanId}}", "checkIn": "{{night}}",
                       "checkOut": "{{checkOut}}", "guest": {"name": "Ana Lima", "email": "ana@example.com"}},
    "testOtaModify": {"checkOut": "{{checkOutLater}}"},
    "testFaults": {"mode": "ok"},
}
# Ids are numbers in the bodies: a variable standing for one is written without quotes.
_UNQUOTED = ('"{{roomTypeId}}"', '"{{ratePlanId}}"', '"{{occupancy}}"')

# Test scripts beyond the status check: what later requests need.
_KEEPS: dict[str, list[str]] = {
    "getProperty": ['pm.collectionVariables.set("currency", pm.response.json().data.currency);'],
    "getCatalog": ['const catalog = pm.response.json().data;',
                   'pm.collectionVariables.set("roomTypeId", catalog.roomTypes[0].id);',
                   'const plan = catalog.ratePlans.find(p => p.roomTypeId === catalog.roomTypes[0].id);',
                   'pm.collectionVariables.set("ratePlanId", plan.id);',
                   'pm.collectionVariables.set("occupancy", plan.sellMode === "perPerson" ? '
                   'String(plan.occupancies[plan.occupancies.length - 1]) : "null");'],
    "putAvailability": ['pm.collectionVariables.set("batchId", pm.response.json().data.batchId);'],
    "createBooking": ['pm.collectionVariables.set("bookingId", pm.response.json().data.bookingId);'],
    "testOtaBooking": ['pm.collectionVariables.set("otaReference", pm.response.json().data.reference);'],
    "getBooking": ['pm.collectionVariables.set("bookingETag", pm.response.headers.get("ETag"));'],
    "modifyBooking": ['pm.test("the stay is one night longer, as a new revision", function () {',
                      '    const booking = pm.response.json().data;',
                      '    pm.expect(booking.checkOut).to.eql(pm.collectionVariables.get("checkOutLater"));',
                      '    pm.expect(booking.revision).to.eql(2);',
                      '    pm.expect(pm.response.headers.get("ETag")).to.eql(\'"2"\');',
                      '});'],
}
# Headers beyond the body's type: a change names the revision it was meant for.
_HEADERS: dict[str, list[JsonObject]] = {"modifyBooking": [{"key": "If-Match", "value": "{{bookingETag}}"}]}
_PATH_VALUES = {"batchId": "{{batchId}}", "bookingId": "{{bookingId}}", "reference": "{{otaReference}}"}
# An answer other than the route's success, where the run makes it so: the front desk's
# check-in comes after the booking above was cancelled.
_EXPECTED: dict[str, int] = {"testCheckIn": 409}

# Dates a week ahead, and a reference of this run's own: computed before each request.
_PRE_REQUEST = [
    "const day = (n) => new Date(Date.now() + n * 86400000).toISOString().slice(0, 10);",
    'pm.collectionVariables.set("night", day(7));',
    'pm.collectionVariables.set("nightAfter", day(8));',
    'pm.collectionVariables.set("checkOut", day(9));',
    'pm.collectionVariables.set("checkOutLater", day(10));',
    'if (!pm.collectionVariables.get("externalReference")) {',
    '    pm.collectionVariables.set("externalReference", "POSTMAN-" + Date.now());',
    "}",
]

# The order a newcomer reads them in, and the order they can run in.
_ORDER = ("getProperty", "getCatalog", "getAvailability", "putAvailability", "getRates", "putRates",
          "getRestrictions", "putRestrictions", "getSync", "getBatch", "createBooking", "listBookings",
          "getBooking", "modifyBooking", "cancelBooking",
          # Test keys only (a live key gets 404): run the collection with a test key.
          "testOtaBooking", "testOtaModify", "testOtaCancel", "testEvents", "testCheckIn", "testFaults", "testReset")


def _item(op: Operation) -> JsonObject:
    segments = [part for part in (CONNECT_PREFIX + op.path).split("/") if part]
    path = [_PATH_VALUES.get(s.strip("{}"), s) if s.startswith("{") else s for s in segments]
    header: list[JsonValue] = []
    request: JsonObject = {
        "method": op.method,
        "header": header,
        "url": {"raw": "{{baseUrl}}/" + "/".join(path), "host": ["{{baseUrl}}"], "path": [*path]},
        "description": f"{op.summary}. Scope: {op.scope or 'any valid key'}.",
    }
    if op.operation_id in _BODIES:
        raw = json.dumps(_BODIES[op.operation_id], indent=2)
        for quoted in _UNQUOTED:
            raw = raw.replace(quoted, quoted.strip('"'))
        header.append({"key": "Content-Type", "value": "application/json"})
        request["body"] = {"mode": "raw", "raw": raw, "options": {"raw": {"language": "json"}}}
    header += _HEADERS.get(op.operation_id, [])
    # The first listed: a new booking is 201, its replay 200.
    expected = _EXPECTED.get(op.operation_id, next(iter(op.success)))
    tests: list[JsonValue] = [
        f'pm.test("answers {expected}", function () {{ pm.response.to.have.status({expected}); }});',
        'pm.test("answers in the envelope", function () { pm.expect(pm.response.json()).to.have.property('
        f'"statuscode", {expected}); }});', *_KEEPS.get(op.operation_id, [])]
    return {"name": f"{op.method} {op.path}", "request": request,
            "event": [{"listen": "test", "script": {"type": "text/javascript", "exec": tests}}]}


def collection() -> JsonObject:
    by_id = {op.operation_id: op for op in OPERATIONS}
    assert set(by_id) == set(_ORDER), "every route, once"
    return {
        "info": {"name": "connectapi Connect API", "schema": SCHEMA,
                 "description": "Every Connect API route, runnable top to bottom with a test key holding every "
                                "scope (the test helpers at the end answer test keys only). Set baseUrl and "
                                "apiKey in the environment."},
        "auth": {"type": "bearer", "bearer": [{"key": "token", "value": "{{apiKey}}", "type": "string"}]},
        "event": [{"listen": "prerequest", "script": {"type": "text/javascript", "exec": [*_PRE_REQUEST]}}],
        "variable": [{"key": name, "value": ""} for name in
                     ("currency", "roomTypeId", "ratePlanId", "occupancy", "batchId", "bookingId", "bookingETag", "night",
                      "nightAfter", "checkOut", "checkOutLater", "externalReference", "otaReference")],
        "item": [_item(by_id[name]) for name in _ORDER],
    }


def environment(base_url: str) -> JsonObject:
    return {
        "name": "connectapi",
        "values": [{"key": "baseUrl", "value": base_url, "type": "default", "enabled": True},
                   {"key": "apiKey", "value": "", "type": "secret", "enabled": True}],
        "_postman_variable_scope": "environment",
    }
