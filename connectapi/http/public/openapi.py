"""The OpenAPI 3.1 document of the Connect API, built from the models that validate the bodies
and from one table of the routes: their scope, parameters, answers and error codes.

A test holds the table to the app's routes both ways, so a route cannot be added or removed
without the document following.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ...domain.ari_models import AvailabilityBody, RatesBody, RestrictionsBody
from ...domain.admin_models import OtaBookingChangeIn
from ...domain.booking_models import BookingIn, BookingPatchIn, CancelIn
from ...domain.errors import STATUS_OF_CODE
from ...domain.idempotency import HEADER as IDEMPOTENCY_HEADER
from ...domain.json_value import JsonObject, JsonValue, json_object
from ...domain.testmode_helper_models import TestFaultsIn, TestOtaBookingIn
from ...domain.webhook_contract import openapi_schemas, openapi_webhooks
from ..api.answers import (AvailabilityRead, BatchAnswer, Booking, BookingList, BookingRoom,
                           CatalogAnswer, PropertyAnswer, RatesRead, RestrictionsRead, SyncAnswer, TestCheckIn,
                           TestEvents, TestFaults, TestOtaRevision, TestReset, WriteResult, answer_schema)
from ..api.gates import CONNECT_PREFIX, MAX_BODY_BYTES

OPENAPI_PATH = "/api/v1/connect-api/openapi.json"
API_VERSION = "1.0.0"


@dataclass(frozen=True)
class Param:
    name: str
    where: str  # query | path
    schema: JsonObject
    description: str
    required: bool = False


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # OpenAPI form, under the prefix: /bookings/{bookingId}
    operation_id: str
    summary: str
    scope: str | None  # None: any valid key
    product: str | None  # channelManager | pms
    success: dict[int, str]  # status -> data schema name
    errors: dict[str, str] = field(default_factory=dict)  # code -> when, beyond those every route has
    body: type[BaseModel] | None = None
    params: tuple[Param, ...] = ()
    idempotent: bool = False  # takes x-idempotency-key
    etag: bool = False  # success answers carry the booking's ETag
    conditional: bool = False  # takes If-Match


_RANGE = (
    Param("from", "query", {"type": "string", "format": "date"}, "first night; default today in the property's "
          "timezone"),
    Param("to", "query", {"type": "string", "format": "date"}, "last night; default from + 30 days, at most 500 "
          "days after from"),
)
_BOOKING_ID = Param("bookingId", "path", {"type": "integer", "minimum": 1}, "the booking's id", True)
_REFERENCE = Param("reference", "path", {"type": "string"}, "the reference a simulated OTA booking answered", True)
_WRITE_ERRORS = {
    "VALIDATION": "the body does not match the schema", "RANGE_INVALID": "dateTo before dateFrom",
    "HORIZON": "a night beyond today + 365 days", "TOO_MANY_UPDATES": "more than 1000 entries",
    "TOO_MANY_CELLS": "more than 5000 cells", "IDEMPOTENCY_KEY_INVALID": "a malformed x-idempotency-key",
    "IDEMPOTENCY_KEY_REUSED": "the key was used with another body", "IDEMPOTENCY_IN_FLIGHT": "the key's first "
    "request is still running", "NOTHING_ACCEPTED": "the rate policy refused every group",
    "PAYLOAD_TOO_LARGE": f"the body exceeds {MAX_BODY_BYTES} bytes",
}
_READ_ERRORS = {"RANGE_INVALID": "a bad from/to range", "VALIDATION": "a date that cannot be read"}

OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/property", "getProperty", "The key's property, its scopes and products", None, None,
              {200: "Property"}),
    Operation("GET", "/catalog", "getCatalog", "Room types and rate plans with their ids", None, None,
              {200: "Catalog"}),
    Operation("GET", "/availability", "getAvailability", "Availability from the record", "ari:read",
              "channelManager", {200: "AvailabilityRead"}, _READ_ERRORS, params=_RANGE),
    Operation("PUT", "/availability", "putAvailability", "Set absolute availability", "ari:write", "channelManager",
              {202: "WriteResult"}, {**_WRITE_ERRORS, "UNKNOWN_ROOM_TYPE": "a room type not of this property"},
              AvailabilityBody, idempotent=True),
    Operation("GET", "/rates", "getRates", "Rates from the record, in minor units", "ari:read", "channelManager",
              {200: "RatesRead"}, _READ_ERRORS, params=_RANGE),
    Operation("PUT", "/rates", "putRates", "Set nightly sell prices", "ari:write", "channelManager",
              {202: "WriteResult"}, {**_WRITE_ERRORS, "UNKNOWN_RATE_PLAN": "a rate plan not of this property",
                                     "CURRENCY_MISMATCH": "not the property's currency",
                                     "VALIDATION": "the body does not match the schema, or an entry's occupancy does "
                                                   "not fit its plan: required (one of its occupancies) for a plan "
                                                   "sold per person, refused for one sold per room"},
              RatesBody, idempotent=True),
    Operation("GET", "/restrictions", "getRestrictions", "Restrictions from the record", "ari:read",
              "channelManager", {200: "RestrictionsRead"}, _READ_ERRORS, params=_RANGE),
    Operation("PUT", "/restrictions", "putRestrictions", "Set stay restrictions", "ari:write", "channelManager",
              {202: "WriteResult"}, {**_WRITE_ERRORS, "UNKNOWN_RATE_PLAN": "a rate plan not of this property"},
              RestrictionsBody, idempotent=True),
    Operation("GET", "/sync", "getSync", "Whether the sent data reached the channels", "ari:read", "channelManager",
              {200: "Sync"}),
    Operation("GET", "/batches/{batchId}", "getBatch", "Status of one write batch", "ari:read", "channelManager",
              {200: "Batch"}, {"BATCH_NOT_FOUND": "no such batch on this property",
                               "VALIDATION": "wait is not whole seconds from 0 to 30"},
              params=(Param("batchId", "path", {"type": "string"}, "the batch id a write answered", True),
                      Param("wait", "query", {"type": "integer", "minimum": 0, "maximum": 30},
                            "seconds to hold the answer until the batch is completed: one request instead of "
                            "polling (it counts as one request against the budgets)"))),
    Operation("GET", "/bookings", "listBookings", "Bookings the API created, newest first", "bookings:read", "pms",
              {200: "BookingList"}, {"VALIDATION": "a bad query parameter"}, params=(
                  Param("since", "query", {"type": "string", "format": "date-time"},
                        "created on or after it; default the last 7 days"),
                  Param("externalReference", "query", {"type": "string", "maxLength": 64},
                        "only the booking with that reservation id"),
                  Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}, ""),
                  Param("before", "query", {"type": "integer", "minimum": 1},
                        "the next page: the nextBefore of the page before (only bookings listed after it)"),
              )),
    Operation("GET", "/bookings/{bookingId}", "getBooking", "One booking the API created", "bookings:read", "pms",
              {200: "Booking"}, {"BOOKING_NOT_FOUND": "not on this property, or not created by the API"},
              params=(_BOOKING_ID,), etag=True),
    Operation("POST", "/bookings", "createBooking", "Create a booking in the PMS", "bookings:write", "pms",
              {201: "Booking", 200: "Booking"}, {
                  "VALIDATION": "the body does not match the schema", "CURRENCY_MISMATCH": "not the property's",
                  "STAY_INVALID": "in the past, beyond the horizon or over 90 nights",
                  "UNKNOWN_ROOM_TYPE": "not of this property", "UNKNOWN_RATE_PLAN": "not of this property",
                  "UNKNOWN_ROOM_TYPE_FOR_PLAN": "the plan is not the room type's",
                  "OCCUPANCY_EXCEEDED": "more guests than the room type takes",
                  "PAYMENT_EXCEEDS_TOTAL": "more than the stay's total", "MODULE_NOT_ENTITLED": "no PMS in the plan",
                  "PAYMENT_NOT_ALLOWED": "a payment without bookings:payments",
                  "NO_AVAILABILITY": "a night with no room left", "IDEMPOTENCY_KEY_INVALID": "malformed",
                  "IDEMPOTENCY_KEY_REUSED": "used with another body", "IDEMPOTENCY_IN_FLIGHT": "still running",
                  "PAYLOAD_TOO_LARGE": f"the body exceeds {MAX_BODY_BYTES} bytes"},
              BookingIn, idempotent=True, etag=True),
    Operation("PATCH", "/bookings/{bookingId}", "modifyBooking",
              "Change a booking's dates, rooms, guest or notes, all or nothing", "bookings:write", "pms",
              {200: "Booking"}, {
                  "VALIDATION": "the body does not match the schema, or names externalReference, currency or "
                                "payment, which cannot change, or keeps a bookingRoomId not of this booking",
                  "CURRENCY_MISMATCH": "the property's currency is no longer the booking's",
                  "STAY_INVALID": "the dates or rooms change, and the stay is in the past, beyond the horizon or "
                                  "over 90 nights (creation's rules judge only a changed stay)",
                  "UNKNOWN_ROOM_TYPE": "not of this property", "UNKNOWN_RATE_PLAN": "not of this property",
                  "UNKNOWN_ROOM_TYPE_FOR_PLAN": "the plan is not the room type's",
                  "OCCUPANCY_EXCEEDED": "more guests than the room type takes",
                  "PAYMENT_EXCEEDS_TOTAL": "the new total is below what was paid",
                  "MODULE_NOT_ENTITLED": "no PMS in the plan",
                  "BOOKING_NOT_FOUND": "not on this property, or not created by the API",
                  "BOOKING_NOT_MODIFIABLE": "cancelled or checked in",
                  "BOOKING_REVISION_STALE": "If-Match names another revision; details.revision is the current one",
                  "NO_AVAILABILITY": "a night the booking does not hold has no room left; nothing changed",
                  "IDEMPOTENCY_KEY_INVALID": "malformed", "IDEMPOTENCY_KEY_REUSED": "used with another body",
                  "IDEMPOTENCY_IN_FLIGHT": "still running",
                  "PAYLOAD_TOO_LARGE": f"the body exceeds {MAX_BODY_BYTES} bytes"},
              BookingPatchIn, params=(_BOOKING_ID,), idempotent=True, etag=True, conditional=True),
    Operation("POST", "/bookings/{bookingId}/cancel", "cancelBooking", "Cancel the whole booking", "bookings:write",
              "pms", {200: "Booking"}, {"VALIDATION": "the body does not match the schema",
                                        "BOOKING_NOT_FOUND": "not on this property, or not created by the API",
                                        "BOOKING_NOT_CANCELLABLE": "checked in or moved on",
                                        "PAYLOAD_TOO_LARGE": f"the body exceeds {MAX_BODY_BYTES} bytes"},
              CancelIn, params=(_BOOKING_ID,), etag=True),
    # Test mode's helpers (test keys only: a live key gets 404 NOT_FOUND).
    Operation("POST", "/test-helpers/ota-bookings", "testOtaBooking",
              "Test keys only: an OTA booking arrives through the test sandbox and the real intake",
              "ari:write", "channelManager", {201: "TestOtaRevision"}, {
                  "VALIDATION": "the body does not match the schema, or the property is not mapped to the channel "
                                "manager", "NOT_FOUND": "a live key: the helpers answer test keys only",
                  "PAYLOAD_TOO_LARGE": f"the body exceeds {MAX_BODY_BYTES} bytes"}, TestOtaBookingIn),
    Operation("POST", "/test-helpers/ota-bookings/{reference}/modify", "testOtaModify",
              "Test keys only: the OTA changes the booking (any field of its creation)", "ari:write",
              "channelManager", {200: "TestOtaRevision"}, {
                  "VALIDATION": "the body does not match the schema",
                  "NOT_FOUND": "a live key, or no such simulated booking of this property",
                  "PAYLOAD_TOO_LARGE": f"the body exceeds {MAX_BODY_BYTES} bytes"}, OtaBookingChangeIn,
              params=(_REFERENCE,)),
    Operation("POST", "/test-helpers/ota-bookings/{reference}/cancel", "testOtaCancel",
              "Test keys only: the OTA cancels the booking", "ari:write", "channelManager", {200: "TestOtaRevision"},
              {"NOT_FOUND": "a live key, or no such simulated booking of this property"}, params=(_REFERENCE,)),
    Operation("POST", "/test-helpers/bookings/{bookingId}/check-in", "testCheckIn",
              "Test keys only: the front desk checks the booking in", "bookings:write", "pms", {200: "TestCheckIn"},
              {"NOT_FOUND": "a live key", "BOOKING_NOT_FOUND": "not a booking of this test record",
               "BOOKING_CANCELLED": "a cancelled booking cannot be checked in"}, params=(_BOOKING_ID,)),
    Operation("POST", "/test-helpers/channel-manager/faults", "testFaults",
              "Test keys only: the test sandbox answers this record's next ARI calls with a fault",
              "ari:write", "channelManager", {200: "TestFaults"}, {
                  "VALIDATION": "the body does not match the schema, or the property is not mapped",
                  "NOT_FOUND": "a live key", "PAYLOAD_TOO_LARGE": f"the body exceeds {MAX_BODY_BYTES} bytes"},
              TestFaultsIn),
    Operation("GET", "/test-helpers/events", "testEvents",
              "Test keys only: the test record's events after a cursor, each body as its webhooks carry it "
              "(`connectapi listen` forwards them to your machine)", None, None, {200: "TestEvents"},
              {"NOT_FOUND": "a live key", "VALIDATION": "after or wait is not a whole number, or wait is above 30"},
              params=(Param("after", "query", {"type": "string", "pattern": "^[0-9]{1,18}$"},
                            "the previous answer's `after`; without it, no events and where to start (now)"),
                      Param("wait", "query", {"type": "integer", "minimum": 0, "maximum": 30},
                            "seconds to hold the answer until an event comes"))),
    Operation("POST", "/test-helpers/reset", "testReset",
              "Test keys only: the test record emptied (ARI, batches, bookings, events); keys and endpoints stay",
              "ari:write", None, {200: "TestReset"}, {"NOT_FOUND": "a live key"}),
)

# What every route can answer, by the gates.
_EVERY_ROUTE = {
    "API_KEY_INVALID": "a missing, malformed or unknown key", "API_KEY_REVOKED": "a revoked or rotated key",
    "IP_NOT_ALLOWED": "outside the key's address allowlist", "PROPERTY_UNAVAILABLE": "the property is not active",
    "RATE_LIMITED": "a budget is spent; see data.scope and Retry-After",
    "INTERNAL": "a fault of ours; data.details.requestId names it",
    "SERVICE_UNAVAILABLE": "the service cannot answer right now; see Retry-After",
}
_PRODUCT_ERRORS = {"channelManager": ("CHANNEL_MANAGER_DISABLED", "the property has no channel manager"),
                   "pms": ("PMS_NOT_AVAILABLE", "the property has no PMS")}



# Every answer of the Connect API is a type in http/api/answers.py, and its schema is
# drawn from it (decision 0134). The types are TypedDicts, of no common base but `type`.
DRAWN_ANSWERS: dict[str, type[Any]] = {
    "Property": PropertyAnswer, "Catalog": CatalogAnswer, "AvailabilityRead": AvailabilityRead,
    "RatesRead": RatesRead, "RestrictionsRead": RestrictionsRead, "WriteResult": WriteResult,
    "Sync": SyncAnswer, "Batch": BatchAnswer, "Booking": Booking, "BookingRoom": BookingRoom,
    "BookingList": BookingList, "TestOtaRevision": TestOtaRevision, "TestEvents": TestEvents,
    "TestCheckIn": TestCheckIn, "TestFaults": TestFaults, "TestReset": TestReset}


_RATELIMIT_HEADERS: JsonObject = {
    "RateLimit": {"description": "the budget nearest to running out (IETF RateLimit draft): "
                                 "\"<policy>\";r=<remaining>;t=<seconds to reset>",
                  "schema": {"type": "string"}},
    "RateLimit-Policy": {"description": "the budgets that apply: \"<policy>\";q=<quota>;w=<window seconds>",
                         "schema": {"type": "string"}},
    "X-Request-Id": {"description": "this request's id, also in the service's log", "schema": {"type": "string"}},
}


def _error_response(codes: dict[str, str]) -> JsonObject:
    status = STATUS_OF_CODE[next(iter(codes))]
    headers = dict(_RATELIMIT_HEADERS)
    response: JsonObject = {
        "description": "; ".join(f"{code}: {when}" for code, when in codes.items()),
        "headers": headers,
        "content": {"application/json": {"schema": {"allOf": [
            {"$ref": "#/components/schemas/ErrorEnvelope"},
            {"properties": {"statuscode": {"const": status},
                            "data": {"properties": {"code": {"enum": list(codes)}}}}},
        ]}}},
    }
    if status in (429, 503):
        headers["Retry-After"] = {"description": "seconds to wait", "schema": {"type": "integer"}}
    return response


def _operation(op: Operation, body_refs: dict[str, JsonObject]) -> JsonObject:
    codes = dict(op.errors)
    codes.update(_EVERY_ROUTE)
    if op.scope is not None:
        codes["SCOPE_MISSING"] = f"the key lacks {op.scope}"
    if op.product is not None:
        code, when = _PRODUCT_ERRORS[op.product]
        codes[code] = when
    by_status: dict[int, dict[str, str]] = {}
    for code, when in codes.items():
        by_status.setdefault(STATUS_OF_CODE[code], {})[code] = when
    responses: JsonObject = {}
    for status, schema in sorted(op.success.items()):
        headers = dict(_RATELIMIT_HEADERS)
        if op.etag:
            headers["ETag"] = {"description": "the booking's revision, quoted: send it as If-Match to change "
                                              "only this revision", "schema": {"type": "string"}}
        if op.idempotent:
            headers["X-Idempotent-Replay"] = {"description": "true when this is a stored answer replayed",
                                              "schema": {"type": "string", "enum": ["true"]}}
        what = "a repeated externalReference: the booking as made, replay true" if (
            op.operation_id == "createBooking" and status == 200) else "success"
        responses[str(status)] = {"description": what, "headers": headers, "content": {"application/json": {
            "schema": {"allOf": [{"$ref": "#/components/schemas/SuccessEnvelope"},
                                 {"properties": {"data": {"$ref": f"#/components/schemas/{schema}"}}}]}}}}
    for status, status_codes in sorted(by_status.items()):
        responses[str(status)] = _error_response(status_codes)
    parameters: list[JsonValue] = [{"name": p.name, "in": p.where, "required": p.required,
                                    "description": p.description, "schema": p.schema} for p in op.params]
    if op.conditional:
        parameters.append({"name": "If-Match", "in": "header", "required": False,
                           "description": "the ETag of the revision the change is meant for (or a list of them, "
                                          "or *); another revision answers 412 BOOKING_REVISION_STALE",
                           "schema": {"type": "string"}})
    if op.idempotent:
        parameters.append({"name": IDEMPOTENCY_HEADER, "in": "header", "required": False,
                           "description": "the same key and body within 7 days replays the stored answer",
                           "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{10,64}$"}})
    made: JsonObject = {
        "operationId": op.operation_id, "summary": op.summary,
        "description": f"Scope: {op.scope or 'any valid key'}." + (f" Product: {op.product}." if op.product else ""),
        "security": [{"bearerAuth": []}], "parameters": parameters, "responses": responses,
    }
    if op.body is not None:
        body: JsonObject = {"schema": body_refs[op.body.__name__]}
        content: JsonObject = {"application/json": body}
        if op.method == "PATCH":  # a JSON merge patch (RFC 7396), under either name
            content = {"application/merge-patch+json": body, "application/json": body}
        made["requestBody"] = {"required": True, "content": content}
    return made


@cache
def openapi_document() -> JsonObject:
    models = sorted({op.body for op in OPERATIONS if op.body is not None}, key=lambda m: m.__name__)
    refs, definitions = models_json_schema([(m, "validation") for m in models],
                                           ref_template="#/components/schemas/{model}")
    # Pydantic types the schemas it draws with values of Any; they are JSON.
    body_refs: dict[str, JsonObject] = {model.__name__: ref for (model, _), ref in refs.items()}
    paths: JsonObject = {}
    for op in OPERATIONS:
        json_object(paths.setdefault(CONNECT_PREFIX + op.path, {}))[op.method.lower()] = _operation(op, body_refs)
    # Drawn here, once, when the document is first asked for: not at every process's start.
    answers = {name: answer_schema(drawn) for name, drawn in DRAWN_ANSWERS.items()}
    drawn_definitions: JsonObject = definitions.get("$defs", {})
    schemas: JsonObject = {**drawn_definitions, **answers, **openapi_schemas()}
    schemas["SuccessEnvelope"] = {"type": "object", "required": ["statuscode", "message", "data"], "properties": {
        "statuscode": {"type": "integer"}, "message": {"type": "string"}, "data": {}}}
    schemas["ErrorEnvelope"] = {"type": "object", "required": ["statuscode", "message", "data"], "properties": {
        "statuscode": {"type": "integer"}, "message": {"type": "string"},
        "data": {"type": "object", "required": ["code"], "properties": {
            "code": {"type": "string"}, "details": {"type": ["object", "array"]}, "scope": {"type": "string"},
            "retryAfterSeconds": {"type": "integer"}}}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "connectapi Connect API", "version": API_VERSION,
                 "description": "Availability, rates and restrictions to the channels, and bookings into the PMS. "
                                "Every answer is the envelope {statuscode, message, data}; clients branch on "
                                "data.code. Budgets are told in the RateLimit headers."},
        "servers": [{"url": "/"}],
        "paths": paths,
        "webhooks": openapi_webhooks(),
        "components": {"schemas": schemas,
                       "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer",
                                                          "description": "Authorization: Bearer <API key>"}}},
        "security": [{"bearerAuth": []}],
    }
