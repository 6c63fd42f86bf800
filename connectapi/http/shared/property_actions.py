"""What the operator (admin API) and the owner (console) both do to a property: the front
desk's check-in, applying a kept OTA revision again, changing the property's settings.
One function each, so both answer alike; the console passes the property it owns, and a
booking or revision of another property is then not found."""

from __future__ import annotations

from ...domain.admin_models import PropertyPatch
from ...domain.errors import ApiError
from ...storage import bookings, ota, properties
from ...storage.records import Property
from ..context import context


async def check_in(booking_id: int, property_id: int | None = None) -> int:
    """Move an UPCOMING booking to CHECKED_IN (a checked-in one stays so); answers its
    property. With `property_id`, a booking of another property is BOOKING_NOT_FOUND."""
    ctx = context()
    moved = await bookings.check_in(ctx.db, booking_id, ctx.clock.now(), property_id)
    if moved is None:
        raise ApiError("BOOKING_NOT_FOUND", f"no booking {booking_id}")
    before, found_property = moved
    if before == "CANCELLED":
        raise ApiError("BOOKING_CANCELLED", "a cancelled booking cannot be checked in")
    return found_property


async def apply_revision_again(property_id: int, revision_id: str) -> str:
    """Once the owner has fixed what kept it (a mapping, most often), the intake's next round
    applies the revision as if it had just come; answers the state it had."""
    ctx = context()
    before = await ota.apply_again(ctx.db, property_id, revision_id)
    if before is None:
        raise ApiError("REVISION_NOT_FOUND", "no such OTA revision of this property")
    if before not in ota.KEPT_STATES:
        raise ApiError("REVISION_NOT_KEPT", f"the revision is {before}: only an unmapped or refused one is applied "
                                            "again", {"state": before})
    ctx.properties.wakeups.revisions_waiting()
    return before


async def patch_property(property_id: int, patch: PropertyPatch) -> Property:
    ctx = context()
    prop = await properties.patch_property(ctx.db, property_id, patch)
    ctx.keys.invalidate()  # keys carry their property: its new settings count from the next request
    if prop is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    return prop
