"""The contract's Booking body, from a booking in the record (or one a writer answered)."""

from __future__ import annotations

from ...domain.bookings import money
from ...domain.money import currency_exponent
from ...storage.records import Booking
from . import answers

PUSHED_BY = "inventory-drain"


def booking_body(b: Booking, replay: bool) -> answers.Booking:
    exponent = currency_exponent(b.currency)
    # Timestamps as every other of the API: ISO 8601 with their offset.
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
        "createdAt": b.created_at.isoformat(),
        "cancelledAt": None if b.cancelled_at is None else b.cancelled_at.isoformat(),
        "revision": b.revision,
        "modifiedAt": b.modified_at.isoformat(),
    }

