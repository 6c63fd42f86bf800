"""What the record keeps of a Connect API booking's change (the domain_events table, its
`payload` as JSON): who it was, and what changed. Built by actors.booking_writer, stored by
storage.bookings; kept for the record, never sent."""

from __future__ import annotations

from typing_extensions import TypedDict


class BookingCreated(TypedDict):
    bookingId: int
    reference: str
    externalReference: str
    source: str  # "api"


class BookingModified(TypedDict):
    bookingId: int
    reference: str
    revision: int  # the booking's revision this change made
    changes: list[str]  # the names of the summary's members that changed
    # The booking before and after, as domain.bookings.booking_summary tells it (with its
    # total): kept as written, never read back here.
    previous: dict[str, object]
    current: dict[str, object]


class BookingCancelled(TypedDict):
    bookingId: int
    reference: str
    reason: str | None


BookingEvent = BookingModified | BookingCancelled
