"""The public webhook contract: event types, JSON Schemas, signing, the retry schedule and
one signed example per event type. Built from the same code that makes and signs events,
so the document cannot drift from what is sent."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from functools import cache
from typing import Any

from . import webhook_retry
from .webhook_events import API_VERSION, EVENT_TYPES, MODE, PING, PropertyFacts, event_body
from .webhook_signing import signed_headers

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# A secret for the examples only: never one an endpoint is given.
SAMPLE_SECRET = "whsec_" + base64.b64encode(b"connectapi contract sample key!!").decode()
SAMPLE_AT = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)

_MONEY = {"type": "string", "pattern": r"^[0-9]+\.[0-9]{2}$", "description": "major units, two decimals"}
_NULLABLE_STRING = {"type": ["string", "null"]}

BOOKING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "An OTA booking in the property's own ids; never a channel-manager id or credential.",
    "required": ["reference", "status", "stay", "rooms", "guest", "amounts", "channel"],
    "additionalProperties": False,
    "properties": {
        "reference": {"type": "string", "description": "the PMS reference; receivers reconcile on it"},
        "status": {"enum": ["UPCOMING", "CHECKED_IN", "CANCELLED"]},
        "stay": {
            "type": "object", "required": ["checkIn", "checkOut", "nights"], "additionalProperties": False,
            "properties": {"checkIn": {"type": "string", "format": "date"},
                           "checkOut": {"type": "string", "format": "date"},
                           "nights": {"type": "integer", "minimum": 1}},
        },
        "rooms": {
            "type": "array", "minItems": 1,
            "items": {
                "type": "object", "additionalProperties": False,
                "required": ["roomTypeId", "ratePlanId", "adults", "children", "amount"],
                "properties": {"roomTypeId": {"type": "integer"}, "ratePlanId": {"type": ["integer", "null"]},
                               "adults": {"type": "integer", "minimum": 1},
                               "children": {"type": "integer", "minimum": 0}, "amount": _MONEY},
            },
        },
        "guest": {
            "type": "object", "required": ["name", "email", "phone", "country"], "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "email": _NULLABLE_STRING, "phone": _NULLABLE_STRING,
                           "country": _NULLABLE_STRING},
        },
        "amounts": {
            "type": "object", "required": ["total", "currency"], "additionalProperties": False,
            "properties": {"total": _MONEY, "currency": {"type": "string", "pattern": "^[A-Z]{3}$"}},
        },
        "channel": {
            "type": "object", "required": ["name", "reservationCode"], "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "reservationCode": {"type": "string"}},
        },
    },
}

_CHANGED_FIELDS = {
    "type": "object", "additionalProperties": False, "minProperties": 1,
    "description": "the booking's fields that changed, each whole: in `changes` the new value, in `previous` "
                   "the old one",
    "properties": {name: {"$ref": f"#/$defs/booking/properties/{name}"}
                   for name in ("status", "stay", "rooms", "guest", "amounts", "channel")},
}

ENVELOPE_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA_DIALECT,
    "type": "object",
    "required": ["id", "type", "apiVersion", "occurredAt", "mode", "property", "data", "changes", "previous"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": "^evt_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
               "description": "the same on every attempt, and the webhook-id header"},
        "type": {"enum": list(EVENT_TYPES)},
        "apiVersion": {"const": API_VERSION},
        "occurredAt": {"type": "string", "format": "date-time"},
        "mode": {"enum": [MODE, "test"],
                 "description": "`test` for an event of the property's test record, sent to test endpoints only"},
        "property": {
            "type": "object", "required": ["id", "name", "currency", "timezone"], "additionalProperties": False,
            "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                           "currency": {"type": "string", "pattern": "^[A-Z]{3}$"}, "timezone": {"type": "string"}},
        },
        "data": {"type": "object"},
        "changes": {"type": ["object", "null"]},
        "previous": {"type": ["object", "null"]},
    },
    "allOf": [
        {"if": {"properties": {"type": {"const": PING}}},
         "then": {"properties": {"data": {"type": "object", "required": ["reason"],
                                          "properties": {"reason": {"type": "string"}}},
                                 "changes": {"type": "null"}, "previous": {"type": "null"}}},
         "else": {"properties": {"data": {"type": "object", "required": ["booking"], "additionalProperties": False,
                                          "properties": {"booking": {"$ref": "#/$defs/booking"}}}}}},
        {"if": {"properties": {"type": {"const": "channel.booking.modified"}}},
         "then": {"properties": {"changes": {"$ref": "#/$defs/changedFields"},
                                 "previous": {"$ref": "#/$defs/changedFields"}}},
         "else": {"properties": {"changes": {"type": "null"}, "previous": {"type": "null"}}}},
    ],
    "$defs": {"booking": BOOKING_SCHEMA, "changedFields": _CHANGED_FIELDS},
}

_DESCRIPTIONS = {
    "channel.booking.created": "an OTA booking arrived through the channel manager",
    "channel.booking.modified": "the OTA sent a revision that changed what the booking is (dates, rooms, "
                                "amounts, guest, status); `changes` and `previous` hold the changed fields",
    "channel.booking.cancelled": "the OTA cancelled and the service could apply it (a checked-in booking is "
                                 "not cancelled: the owner is told instead, and no event is sent)",
    PING: "a test: on registration and when the owner asks for one",
}


def _example_booking(status: str = "UPCOMING", check_out: str = "2026-10-03", total: str = "240.00") -> dict[str, Any]:
    nights = (datetime.fromisoformat(check_out) - datetime.fromisoformat("2026-10-01")).days
    return {
        "reference": "PMS-42-001017", "status": status,
        "stay": {"checkIn": "2026-10-01", "checkOut": check_out, "nights": nights},
        "rooms": [{"roomTypeId": 7, "ratePlanId": 12, "adults": 2, "children": 0, "amount": total}],
        "guest": {"name": "Ana Lima", "email": "ana@example.com", "phone": "+351912345678", "country": "PT"},
        "amounts": {"total": total, "currency": "EUR"},
        "channel": {"name": "BookingCom", "reservationCode": "BOO-1001"},
    }


def _examples() -> list[dict[str, Any]]:
    prop = PropertyFacts(42, "Casa Azul", "EUR", "Europe/Lisbon")
    before, after = _example_booking(), _example_booking(check_out="2026-10-04", total="360.00")
    changed = ("stay", "rooms", "amounts")
    made: list[tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]] = [
        ("channel.booking.created", {"booking": before}, None, None),
        ("channel.booking.modified", {"booking": after}, {k: after[k] for k in changed},
         {k: before[k] for k in changed}),
        ("channel.booking.cancelled", {"booking": _example_booking(status="CANCELLED", check_out="2026-10-04",
                                                                   total="360.00")}, None, None),
        (PING, {"reason": "test"}, None, None),
    ]
    examples = []
    for n, (kind, data, changes, previous) in enumerate(made, start=1):
        event_id = f"evt_00000000-0000-4000-8000-{n:012d}"
        body = event_body(event_id, kind, prop, data, SAMPLE_AT, changes, previous)
        examples.append({"type": kind, "secret": SAMPLE_SECRET,
                         "headers": signed_headers(event_id, body, [SAMPLE_SECRET], SAMPLE_AT),
                         "body": body, "event": json.loads(body)})
    return examples


@cache
def contract() -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "eventTypes": [{"type": kind, "description": _DESCRIPTIONS[kind]} for kind in EVENT_TYPES],
        "schemas": {"envelope": ENVELOPE_SCHEMA, "booking": {"$schema": SCHEMA_DIALECT, **BOOKING_SCHEMA}},
        "signing": {
            "specification": "Standard Webhooks 1.0",
            "headers": ["webhook-id", "webhook-timestamp", "webhook-signature"],
            "signedContent": "<webhook-id>.<webhook-timestamp>.<raw body>",
            "algorithm": "HMAC-SHA256, base64; signature entries are 'v1,<base64>', space-separated",
            "secret": "whsec_ followed by the base64 of 32 random bytes; shown once at registration",
            "rotation": "after a rotation both the new and the old secret sign, for 24 hours",
            "timestampToleranceSeconds": 300,
        },
        "delivery": {
            "timeoutSeconds": 10,
            "success": "any 2xx; redirects are not followed",
            "order": "each endpoint gets its events in the order they occurred, one at a time",
            "guarantee": "at least once: ignore an id you have already handled",
            "retryScheduleSeconds": [0] + [int(w.total_seconds()) for w in webhook_retry.SCHEDULE],
            "jitter": f"each wait varies by up to {int(webhook_retry.JITTER * 100)}% either way",
            "retryAfter": "a longer Retry-After on a failed attempt is honoured, within the day",
            "afterOneDay": "the endpoint is paused and the owner e-mailed; events wait and are sent once it is "
                           "resumed",
            "gone": "a 410 pauses the endpoint at once",
        },
        "examples": _examples(),
    }
