"""The sandbox channel manager's OTA bookings: revisions, the feed of unacknowledged ones,
and acknowledgement, as a Channex-style channel manager keeps them (REFERENCE.md)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any


@dataclass
class Stay:
    """What an OTA booking is now: the fields a revision repeats in full."""

    property_id: str
    room_type_id: str
    rate_plan_id: str
    arrival: date
    departure: date
    adults: int
    children: int
    guest: dict[str, Any]
    amount: Decimal
    currency: str
    ota_name: str


@dataclass
class BookingFeed:
    revisions: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> revision, in emission order
    acked: set[str] = field(default_factory=set)
    stays: dict[str, Stay] = field(default_factory=dict)  # booking id -> the stay now
    codes: dict[str, str] = field(default_factory=dict)  # OTA reservation code -> booking id
    # Told of each revision as the channel manager's webhook would be: {booking_id,
    # property_id, revision_id}, no booking data (REFERENCE.md).
    listeners: list[Callable[[dict[str, str]], None]] = field(default_factory=list)
    # Tests: hand the feed out newest first, as a channel manager may.
    newest_first: bool = False
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1001))
    _last_at: datetime | None = None

    def new(self, stay: Stay, at: datetime) -> dict[str, Any]:
        booking_id = str(uuid.uuid4())
        code = f"{stay.ota_name[:3].upper()}-{next(self._numbers)}"
        self.stays[booking_id] = stay
        self.codes[code] = booking_id
        return self._emit(booking_id, code, "new", at)

    def modify(self, code: str, changes: dict[str, Any], at: datetime) -> dict[str, Any]:
        booking_id = self.codes[code]
        stay = self.stays[booking_id]
        for name, value in changes.items():
            setattr(stay, name, value)
        return self._emit(booking_id, code, "modified", at)

    def cancel(self, code: str, at: datetime) -> dict[str, Any]:
        return self._emit(self.codes[code], code, "cancelled", at)

    def feed(self, property_id: str | None) -> list[dict[str, Any]]:
        """Revisions not yet acknowledged, oldest first (or newest first, when told to)."""
        found = [r for rid, r in self.revisions.items()
                 if rid not in self.acked and (property_id is None or r["property_id"] == property_id)]
        return found[::-1] if self.newest_first else found

    def ack(self, revision_id: str) -> bool:
        if revision_id not in self.revisions:
            return False
        self.acked.add(revision_id)
        return True

    def _emit(self, booking_id: str, code: str, status: str, at: datetime) -> dict[str, Any]:
        # Its clock gives every revision its own instant, even on a test's standing clock.
        if self._last_at is not None and at <= self._last_at:
            at = self._last_at + timedelta(microseconds=1)
        self._last_at = at
        stay = self.stays[booking_id]
        nights = [stay.arrival + timedelta(days=i) for i in range((stay.departure - stay.arrival).days)]
        nightly = (stay.amount / len(nights)).quantize(Decimal("0.01")) if nights else stay.amount
        revision_id = str(uuid.uuid4())
        revision = {
            "id": revision_id,
            "booking_id": booking_id,
            "property_id": stay.property_id,
            "unique_id": code,
            "system_id": f"{code}-{sum(1 for r in self.revisions.values() if r['booking_id'] == booking_id) + 1}",
            "ota_reservation_code": code,
            "ota_name": stay.ota_name,
            "status": status,
            "arrival_date": stay.arrival.isoformat(),
            "departure_date": stay.departure.isoformat(),
            "amount": f"{stay.amount:.2f}",
            "currency": stay.currency,
            "customer": dict(stay.guest),
            "rooms": [{
                "room_type_id": stay.room_type_id, "rate_plan_id": stay.rate_plan_id,
                "checkin_date": stay.arrival.isoformat(), "checkout_date": stay.departure.isoformat(),
                "amount": f"{stay.amount:.2f}", "days": {n.isoformat(): f"{nightly:.2f}" for n in nights},
                "occupancy": {"adults": stay.adults, "children": stay.children, "infants": 0},
            }],
            "notes": None,
            "inserted_at": at.isoformat(),
        }
        self.revisions[revision_id] = revision
        for listener in self.listeners:
            listener({"booking_id": booking_id, "property_id": stay.property_id, "revision_id": revision_id})
        return revision
