"""Admin routes about bookings: the owner's e-mails, the front desk's check-in, and the OTA
revisions the channel manager sent (the unmapped and refused ones wait there for the owner,
who may have one applied again once its mapping is fixed)."""

from __future__ import annotations

from quart import Blueprint, Response

from ...domain.errors import ApiError
from ...domain.paths import ADMIN_PREFIX
from ...storage import notifications, ota, properties
from ..context import context
from ..envelope import ok
from ..shared import property_actions

blueprint = Blueprint("admin_bookings", __name__, url_prefix=ADMIN_PREFIX)


@blueprint.get("/properties/<int:property_id>/notifications")
async def list_notifications(property_id: int) -> Response:
    ctx = context()
    if await properties.get_live_property(ctx.db, property_id) is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    found = await notifications.for_property(ctx.db, property_id)
    return ok([{"id": n.id, "kind": n.kind, "to": n.to_address, "subject": n.subject, "createdAt": n.created_at,
                "sentAt": n.sent_at, "attempts": n.attempts, "lastError": n.last_error} for n in found])


@blueprint.get("/properties/<int:property_id>/ota-revisions")
async def list_ota_revisions(property_id: int) -> Response:
    ctx = context()
    if await properties.get_live_property(ctx.db, property_id) is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    return ok(await ota.revisions_of(ctx.db, property_id))


@blueprint.post("/properties/<int:property_id>/ota-revisions/<revision_id>/apply")
async def apply_ota_revision_again(property_id: int, revision_id: str) -> Response:
    """Its outcome shows in the list."""
    ctx = context()
    if await properties.get_live_property(ctx.db, property_id) is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    before = await property_actions.apply_revision_again(property_id, revision_id)
    return ok({"revisionId": revision_id, "state": "received", "before": before}, 202)


@blueprint.post("/bookings/<int:booking_id>/check-in")
async def check_in(booking_id: int) -> Response:
    property_id = await property_actions.check_in(booking_id)
    return ok({"bookingId": booking_id, "propertyId": property_id, "status": "CHECKED_IN"})
