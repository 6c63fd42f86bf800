"""Bookings kept under idempotency keys before outcomes were typed: the contract's Booking
as it was answered, read back into the record's Booking so that a replay is answered the
way every other is. Such records go with the idempotency retention (7 days); this module
can go with them."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from ...domain.money import currency_exponent
from ...storage.records import Booking, BookingRoom


def _minor(amount: str, exponent: int) -> int:
    return int(Decimal(amount).scaleb(exponent))


def _instant(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def booking_from_body(body: dict[str, Any], property_id: int) -> Booking:
    exponent = currency_exponent(body["currency"])
    created_at = datetime.fromisoformat(body["createdAt"])
    guest, inventory = body["guest"], body["inventory"]
    return Booking(
        id=int(body["bookingId"]), property_id=property_id, source="api", reference=body["reference"],
        external_reference=body["externalReference"], status=body["status"],
        check_in=date.fromisoformat(body["checkIn"]), check_out=date.fromisoformat(body["checkOut"]),
        currency=body["currency"], guest_name=guest["name"], guest_phone=guest["phone"], guest_email=guest["email"],
        total_minor=_minor(body["totalAmount"], exponent), paid_minor=_minor(body["totalPaid"], exponent),
        created_at=created_at, cancelled_at=_instant(body["cancelledAt"]),
        channel_manager=bool(inventory["channelManager"]), event_recorded=bool(inventory["eventRecorded"]),
        rooms=tuple(BookingRoom(id=int(r["bookingRoomId"]), room_type_id=int(r["roomTypeId"]),
                                rate_plan_id=r["ratePlanId"], meal_plan=r["mealPlan"], adults=int(r["adults"]),
                                children=int(r["children"]), nightly_minor=_minor(r["nightlyRate"], exponent),
                                status=r["status"]) for r in body["rooms"]),
        # Answers kept before bookings had revisions: a booking then was as it was made.
        revision=int(body.get("revision", 1)),
        modified_at=_instant(body.get("modifiedAt")) or created_at)
