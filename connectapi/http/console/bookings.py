"""A property's bookings: the API's and the OTAs', one booking's detail with the front desk's
check-in, and the OTA revisions kept unapplied (unmapped or refused) with "apply again".

The admin routes behind the same moves take a booking id alone; here every booking and
revision is looked up within the owned property, so another property's is not found."""

from __future__ import annotations

from quart import Blueprint, Response, redirect, request

from ...domain.channel_values import rate_text
from ...domain.errors import ApiError
from ...storage import bookings, ota, properties
from ...storage.records import Booking
from ..context import context
from ..shared import property_actions
from .pages import property_page
from .session import PREFIX, ConsoleRefusal, login_required, not_found, owned_record

DONE = {
    "checked-in": "The guest is checked in.",
    "applied": "The revision is applied again in the next round: its outcome shows below in a moment.",
}
MOST_REVISION_ID = 200
# Who collects an OTA booking's money, as the front desk reads it.
COLLECTORS = {"ota": "the channel (the guest paid it)", "property": "the hotel", None: "not said (usually the hotel)"}
# Whether a tax is in the room's price: one not said is not taken for either (a desk would
# charge it twice, or not at all).
INCLUSION = {True: "included", False: "not included", None: "included or not: not said"}


def money(minor: int, currency: str) -> str:
    return f"{rate_text(minor, currency)} {currency}"


def _done() -> str | None:
    return DONE.get(request.args.get("done", ""))


@login_required
async def booking_list(property_id: int) -> Response:
    prop, record = await owned_record(property_id)
    db = context().db
    revisions = [r for r in await ota.revisions_of(db, record.id) if r["state"] in (*ota.KEPT_STATES, "received")]
    return await property_page(
        "bookings.html", prop, "/bookings", notice=_done(), money=money,
        api_bookings=await bookings.property_bookings(db, record.id, "api"),
        ota_bookings=await bookings.property_bookings(db, record.id, "ota"),
        revisions=revisions, kept=ota.KEPT_STATES)


async def _booking(property_id: int, booking_id: int) -> Booking:
    found = await bookings.property_booking(context().db, property_id, booking_id)
    if found is None:
        raise not_found()
    return found


@login_required
async def booking_detail(property_id: int, booking_id: int) -> Response:
    prop, record = await owned_record(property_id)
    booking = await _booking(record.id, booking_id)
    catalog = await properties.get_catalog(context().db, prop.id)
    # An OTA booking as its last event told it: each night's price, taxes, extras, the
    # OTA's commission and who collects (issue 42).
    told = await ota.told_of(context().db, record.id, booking_id) if booking.source == "ota" else None
    return await property_page(
        "booking.html", prop, "/bookings", notice=_done(), booking=booking, money=money, told=told,
        room_names={r.id: r.name for r in catalog.room_types}, plan_names={p.id: p.name for p in catalog.rate_plans},
        nights=(booking.check_out - booking.check_in).days, collectors=COLLECTORS, inclusion=INCLUSION)


@login_required
async def check_in(property_id: int, booking_id: int) -> Response:
    prop, record = await owned_record(property_id)
    await _booking(record.id, booking_id)
    try:
        await property_actions.check_in(booking_id, record.id)
    except ApiError as err:
        if err.status == 404:
            raise not_found() from None
        raise ConsoleRefusal(err.status, "Not checked in", _sentence(err.message)) from None
    also = "&mode=test" if record.mode == "test" else ""
    return _see(f"{PREFIX}/properties/{prop.id}/bookings/{booking_id}?done=checked-in{also}")


@login_required
async def apply_again(property_id: int, revision_id: str) -> Response:
    prop, record = await owned_record(property_id)
    if len(revision_id) > MOST_REVISION_ID:
        raise not_found()
    try:
        await property_actions.apply_revision_again(record.id, revision_id)
    except ApiError as err:
        if err.status == 404:
            raise not_found() from None
        raise ConsoleRefusal(err.status, "Not applied again", _sentence(err.message)) from None
    also = "&mode=test" if record.mode == "test" else ""
    return _see(f"{PREFIX}/properties/{prop.id}/bookings?done=applied{also}#revisions")


def _sentence(message: str) -> str:
    return message[:1].upper() + message[1:] + "."


def _see(target: str) -> Response:
    """After a form's move, the page that shows its outcome (a reload does not post again)."""
    return redirect(target, 303)  # type: ignore[return-value]


def register(blueprint: Blueprint) -> None:
    base = "/properties/<int:property_id>/bookings"
    blueprint.add_url_rule(base, view_func=booking_list, methods=["GET"])
    blueprint.add_url_rule(f"{base}/<int:booking_id>", view_func=booking_detail, methods=["GET"])
    blueprint.add_url_rule(f"{base}/<int:booking_id>/check-in", view_func=check_in, methods=["POST"],
                           endpoint="booking_check_in")
    blueprint.add_url_rule(f"{base}/revisions/<revision_id>/apply", view_func=apply_again, methods=["POST"],
                           endpoint="revision_apply_again")
