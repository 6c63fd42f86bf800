"""The contract's Booking body, from a booking in the record (or one a writer answered)."""

from __future__ import annotations

from typing import Any

from ...domain.bookings import money
from ...domain.money import currency_exponent
from ...storage.records import Booking

PUSHED_BY = "inventory-drain"


def _timestamp(value: Any) -> str | None:
    # As every other timestamp of the API: ISO 8601 with its offset.
    return None if value is None else str(value.isoformat())


def booking_body(b: Booking, replay: bool) -> dict[str, Any]:
    exponent = currency_exponent(b.currency)
    return {
        "bookingId": b.id,
        "reference": b.reference,
        "externalReference": b.external_reference,
        "status": b.status,
        "checkIn": b.check_in.isoformat(),
        "checkOut": b.check_out.isoformat(),
        "nights": (b.check_out - b.check_in).days,
        "currency": b.currency,
        "totalAmount": money(b.total_minor, exponent),
        "totalPaid": money(b.paid_minor, exponent),
        "balanceDue": money(b.total_minor - b.paid_minor, exponent),
        "guest": {"name": b.guest_name, "phone": b.guest_phone, "email": b.guest_email},
        "rooms": [{
            "bookingRoomId": r.id, "roomTypeId": r.room_type_id, "ratePlanId": r.rate_plan_id,
            "mealPlan": r.meal_plan, "adults": r.adults, "children": r.children,
            "nightlyRate": money(r.nightly_minor, exponent), "status": r.status,
        } for r in b.rooms],
        "inventory": {"eventRecorded": b.event_recorded, "channelManager": b.channel_manager,
                      "pushedBy": PUSHED_BY},
        "replay": replay,
        "createdAt": _timestamp(b.created_at),
        "cancelledAt": _timestamp(b.cancelled_at),
        "revision": b.revision,
        "modifiedAt": _timestamp(b.modified_at),
    }

