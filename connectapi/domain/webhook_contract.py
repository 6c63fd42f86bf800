"""The public webhook contract: event types, JSON Schemas, signing, the retry schedule and
one signed example per event type. Built from the same code that makes and signs events,
so the document cannot drift from what is sent."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from typing_extensions import TypedDict

from . import webhook_retry
from .json_value import JsonObject, JsonValue, json_object
from .webhook_body import ChangedFields, EventData, WebhookBooking, WebhookEvent
from .webhook_events import API_VERSION, EVENT_TYPES, MODE, PING, PropertyFacts, event_body
from .webhook_signing import signed_headers

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# A secret for the examples only: never one an endpoint is given.
SAMPLE_SECRET = "whsec_" + base64.b64encode(b"connectapi contract sample key!!").decode()
SAMPLE_AT = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)

_MONEY: JsonObject = {"type": "string", "pattern": r"^[0-9]+\.[0-9]{2}$", "description": "major units, two decimals"}
_NULLABLE_STRING: JsonObject = {"type": ["string", "null"]}
_NULLABLE_COUNT: JsonObject = {"type": ["integer", "null"], "minimum": 0}
# Members added since the first release of the booking (issue 42): in every event, but not
# in a `previous` that tells a booking as an event before them told it.
_TAX: JsonObject = {"type": "object", "required": ["name", "type", "inclusive", "amount"], "additionalProperties": False,
        "description": "a tax as the OTA charged it: `inclusive` when the room's price includes it",
        "properties": {"name": {"type": "string"}, "type": _NULLABLE_STRING,
                       "inclusive": {"type": ["boolean", "null"]}, "amount": _MONEY}}
_SERVICE: JsonObject = {"type": "object", "required": ["name", "type", "amount", "priceMode", "persons", "nights"],
            "additionalProperties": False, "description": "an extra the guest bought (breakfast, parking ...)",
            "properties": {"name": {"type": "string"}, "type": _NULLABLE_STRING, "amount": _MONEY,
                           "priceMode": {**_NULLABLE_STRING, "description": "per stay, per night, per person per night"},
                           "persons": _NULLABLE_COUNT, "nights": _NULLABLE_COUNT}}
_TAXES: JsonObject = {"type": "array", "items": _TAX}
_SERVICES: JsonObject = {"type": "array", "items": _SERVICE}

BOOKING_SCHEMA: JsonObject = {
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
                               "children": {"type": "integer", "minimum": 0}, "amount": _MONEY,
                               "nights": {"type": "array", "description": "each night's price, as the OTA sent it",
                                          "items": {"type": "object", "required": ["date", "amount"],
                                                    "additionalProperties": False,
                                                    "properties": {"date": {"type": "string", "format": "date"},
                                                                   "amount": _MONEY}}},
                               "taxes": _TAXES, "services": _SERVICES,
                               "childrenAges": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                               "infants": {"type": "integer", "minimum": 0}},
            },
        },
        "guest": {
            "type": "object", "required": ["name", "email", "phone", "country"], "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "email": _NULLABLE_STRING, "phone": _NULLABLE_STRING,
                           "country": _NULLABLE_STRING, "language": _NULLABLE_STRING,
                           "address": {"type": ["object", "null"], "required": ["line", "city", "zip", "country"],
                                       "additionalProperties": False,
                                       "properties": {"line": _NULLABLE_STRING, "city": _NULLABLE_STRING,
                                                      "zip": _NULLABLE_STRING, "country": _NULLABLE_STRING}},
                           "company": {"type": ["object", "null"], "required": ["name", "vatNumber"],
                                       "additionalProperties": False,
                                       "properties": {"name": _NULLABLE_STRING, "vatNumber": _NULLABLE_STRING}}},
        },
        "amounts": {
            "type": "object", "required": ["total", "currency"], "additionalProperties": False,
            "properties": {"total": _MONEY, "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
                           "commission": {"type": ["string", "null"], "pattern": _MONEY["pattern"],
                                          "description": "the OTA's commission (Booking.com, Airbnb), or null"},
                           "paymentCollect": {"anyOf": [{"enum": ["ota", "property"]}, {"type": "null"}],
                                              "description": "who collects the money: the OTA (the guest paid "
                                                             "it), the property, or not said (usually the property)"},
                           "paymentType": {"anyOf": [{"enum": ["credit_card", "bank_transfer"]}, {"type": "null"}]},
                           "guarantee": {"type": ["object", "null"], "required": ["virtualCard", "cardType"],
                                         "additionalProperties": False,
                                         "description": "a card guaranteed the booking; never its number, "
                                                        "holder, expiry or CVV",
                                         "properties": {"virtualCard": {"type": "boolean"},
                                                        "cardType": _NULLABLE_STRING}}},
        },
        "channel": {
            "type": "object", "required": ["name", "reservationCode"], "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "reservationCode": {"type": "string"}},
        },
        "taxes": {**_TAXES, "description": "taxes of the whole booking (most OTAs give them per room)"},
        "services": {**_SERVICES, "description": "extras of the whole booking"},
        "arrivalHour": {"type": ["string", "null"], "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
        "notes": {**_NULLABLE_STRING, "description": "the guest's requests, as the OTA sent them"},
    },
}

_CHANGED_FIELDS: JsonObject = {
    "type": "object", "additionalProperties": False, "minProperties": 1,
    "description": "the booking's fields that changed, each whole: in `changes` the new value, in `previous` "
                   "the old one",
    "properties": {name: {"$ref": f"#/$defs/booking/properties/{name}"}
                   for name in ("status", "stay", "rooms", "guest", "amounts", "channel", "taxes", "services",
                                "arrivalHour", "notes")},
}

ENVELOPE_SCHEMA: JsonObject = {
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


def _example_booking(status: str = "UPCOMING", prices: tuple[str, ...] = ("120.00", "120.00")) -> WebhookBooking:
    """A Booking.com booking as the front desk needs it: each night's price, VAT included, a
    city tax not, breakfast bought as an extra, a child aged 5, arrival at 22:30, paid at
    the OTA with its virtual card."""
    nights = [f"2026-10-{day:02d}" for day in range(1, len(prices) + 1)]
    room = sum((Decimal(p) for p in prices), Decimal(0))
    breakfast = Decimal("15.00") * 3 * len(prices)
    return {
        "reference": "PMS-42-000017", "status": status,
        "stay": {"checkIn": nights[0], "checkOut": f"2026-10-{len(prices) + 1:02d}", "nights": len(prices)},
        "rooms": [{"roomTypeId": 7, "ratePlanId": 12, "adults": 2, "children": 1, "amount": f"{room:.2f}",
                   "nights": [{"date": night, "amount": price} for night, price in zip(nights, prices, strict=True)],
                   "taxes": [{"name": "VAT (6%)", "type": "Value Added Tax (VAT)", "inclusive": True,
                              "amount": f"{(room * 6 / 106).quantize(Decimal('0.01')):.2f}"},
                             {"name": "City tax", "type": "city_tax", "inclusive": False,
                              "amount": f"{Decimal(2) * 2 * len(prices):.2f}"}],
                   "services": [], "childrenAges": [5], "infants": 0}],
        "guest": {"name": "Ana Lima", "email": "ana.lima.412@guest.booking.com", "phone": "+351912345678",
                  "country": "PT", "language": "pt",
                  "address": {"line": "Rua Augusta 100", "city": "Lisboa", "zip": "1100-053", "country": "PT"},
                  "company": None},
        "amounts": {"total": f"{room + breakfast:.2f}", "currency": "EUR",
                    "commission": f"{(room + breakfast) * Decimal('0.15'):.2f}", "paymentCollect": "ota",
                    "paymentType": "credit_card", "guarantee": {"virtualCard": True, "cardType": "MC"}},
        "channel": {"name": "BookingCom", "reservationCode": "4205138871"},
        "taxes": [],
        "services": [{"name": "Breakfast", "type": "Breakfast", "amount": f"{breakfast:.2f}",
                      "priceMode": "Per person per night", "persons": 3, "nights": len(prices)}],
        "arrivalHour": "22:30",
        "notes": "A quiet room, please.",
    }


class ContractExample(TypedDict):
    """One signed example: the event's text as sent, its headers, and the event it reads as."""

    type: str
    secret: str
    headers: dict[str, str]
    body: str
    event: WebhookEvent


def _examples() -> list[ContractExample]:
    prop = PropertyFacts(42, "Casa Azul", "EUR", "Europe/Lisbon")
    # The modification: the second night's price, and so the room's amount, the total and
    # the commission, and the VAT included in it.
    before, after = _example_booking(), _example_booking(prices=("120.00", "135.00"))
    made: list[tuple[str, EventData, ChangedFields | None, ChangedFields | None]] = [
        ("channel.booking.created", {"booking": before}, None, None),
        ("channel.booking.modified", {"booking": after}, {"rooms": after["rooms"], "amounts": after["amounts"]},
         {"rooms": before["rooms"], "amounts": before["amounts"]}),
        ("channel.booking.cancelled", {"booking": _example_booking(status="CANCELLED", prices=("120.00", "135.00"))},
         None, None),
        (PING, {"reason": "test"}, None, None),
    ]
    examples: list[ContractExample] = []
    for n, (kind, data, changes, previous) in enumerate(made, start=1):
        event_id = f"evt_00000000-0000-4000-8000-{n:012d}"
        body = event_body(event_id, kind, prop, data, SAMPLE_AT, changes, previous)
        examples.append({"type": kind, "secret": SAMPLE_SECRET,
                         "headers": signed_headers(event_id, body, [SAMPLE_SECRET], SAMPLE_AT),
                         "body": body, "event": json.loads(body)})
    return examples


def _local(schema: JsonValue) -> JsonValue:
    """`schema` with its references to the contract's `$defs` made references to the
    OpenAPI document's components."""
    if isinstance(schema, dict):
        return {k: (v.replace("#/$defs/booking/properties/", "#/components/schemas/WebhookBooking/properties/")
                    .replace("#/$defs/", "#/components/schemas/Webhook")
                    if k == "$ref" and isinstance(v, str) else _local(v))
                for k, v in schema.items()}
    return [_local(s) for s in schema] if isinstance(schema, list) else schema


def openapi_schemas() -> dict[str, JsonObject]:
    """The event as OpenAPI components (the OpenAPI document's `webhooks` and the client
    libraries' models): the envelope with `data` as the union of what it holds (a booking,
    or a ping's reason), and the booking and changed fields as components of their own."""
    booking = json_object(_local(BOOKING_SCHEMA))
    booking_properties = json_object(booking["properties"])
    changed: JsonObject = {"type": "object", "description": _CHANGED_FIELDS["description"],
                           "properties": {name: booking_properties[name]
                                          for name in json_object(_CHANGED_FIELDS["properties"])}}
    event = {k: v for k, v in ENVELOPE_SCHEMA.items() if k not in ("$defs", "allOf", "$schema")}
    event["properties"] = {**json_object(event["properties"]),
                           "data": {"type": "object", "description": "`booking` for a channel.booking event, "
                                                                     "`reason` for a ping",
                                    "properties": {"booking": {"$ref": "#/components/schemas/WebhookBooking"},
                                                   "reason": {"type": "string"}}},
                           "changes": {"anyOf": [{"$ref": "#/components/schemas/WebhookChangedFields"},
                                                 {"type": "null"}]},
                           "previous": {"anyOf": [{"$ref": "#/components/schemas/WebhookChangedFields"},
                                                  {"type": "null"}]}}
    return {"WebhookEvent": event, "WebhookBooking": booking, "WebhookChangedFields": changed}


def openapi_webhooks() -> JsonObject:
    """OpenAPI 3.1's `webhooks`: one per event type, each a POST of the event, signed."""
    described = {kind: _DESCRIPTIONS[kind] for kind in EVENT_TYPES}
    return {kind: {"post": {
        "summary": what, "description": f"{what}. Signed as Standard Webhooks 1.0 (webhook-id, webhook-timestamp, "
                                        "webhook-signature); the contract at /api/v1/public/webhooks/contract has "
                                        "the retry schedule and signed examples.",
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/WebhookEvent"}}}},
        "responses": {"2XX": {"description": "received; anything else is retried for a day"}}}}
        for kind, what in described.items()}


class EventTypeEntry(TypedDict):
    type: str
    description: str


class WebhookContract(TypedDict):
    """The contract: JSON, but for its examples, whose events are typed (WebhookEvent)."""

    apiVersion: str
    eventTypes: list[EventTypeEntry]
    schemas: dict[str, JsonObject]
    signing: JsonObject
    delivery: JsonObject
    examples: list[ContractExample]


@cache
def contract() -> WebhookContract:
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
            "retryScheduleSeconds": [0, *(int(w.total_seconds()) for w in webhook_retry.SCHEDULE)],
            "jitter": f"each wait varies by up to {int(webhook_retry.JITTER * 100)}% either way",
            "retryAfter": "a longer Retry-After on a failed attempt is honoured, within the day",
            "afterOneDay": "the endpoint is paused and the owner e-mailed; events wait and are sent once it is "
                           "resumed",
            "gone": "a 410 pauses the endpoint at once",
        },
        "examples": _examples(),
    }
