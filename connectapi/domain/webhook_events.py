"""The envelope of every outbound webhook event, as the spec gives it."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime

from .webhook_body import ChangedFields, EventData, WebhookEvent

API_VERSION = "2026-09-01"
MODE = "live"
PING = "connectapi.ping"
EVENT_TYPES = ("channel.booking.created", "channel.booking.modified", "channel.booking.cancelled", PING)


@dataclass(frozen=True, slots=True)
class PropertyFacts:
    id: int  # the live property's: a test twin's events name the property the integrator knows
    name: str
    currency: str
    timezone: str
    mode: str = MODE  # `test`: an event of the property's test twin, for its test endpoints


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    type: str
    occurred_at: datetime
    body: str  # the JSON text that is signed and sent, byte for byte on every attempt


def new_event(event_type: str, prop: PropertyFacts, data: EventData, occurred_at: datetime,
              changes: ChangedFields | None = None, previous: ChangedFields | None = None) -> Event:
    event_id = f"evt_{uuid.uuid4()}"
    return Event(event_id, event_type, occurred_at,
                 event_body(event_id, event_type, prop, data, occurred_at, changes, previous))


def event_body(event_id: str, event_type: str, prop: PropertyFacts, data: EventData, occurred_at: datetime,
               changes: ChangedFields | None = None, previous: ChangedFields | None = None) -> str:
    """The envelope as the JSON text that is signed and sent."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    envelope: WebhookEvent = {
        "id": event_id,
        "type": event_type,
        "apiVersion": API_VERSION,
        "occurredAt": occurred_at.isoformat(),
        "mode": prop.mode,
        "property": {"id": prop.id, "name": prop.name, "currency": prop.currency, "timezone": prop.timezone},
        "data": data,
        # null but on `modified`: the changed fields' new values, and their old ones
        "changes": changes,
        "previous": previous,
    }
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)


def ping(prop: PropertyFacts, occurred_at: datetime, reason: str) -> Event:
    """`connectapi.ping`: sent when an endpoint is registered and when the owner tests it."""
    return new_event(PING, prop, {"reason": reason}, occurred_at)
