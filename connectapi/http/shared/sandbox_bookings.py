"""OTA bookings a sandbox channel manager emits for a property, in our ids: the operator's
(the sandbox standing in for the channel manager) and the test helpers' (the test sandbox,
for a property's test twin) alike. What the sandbox emits then comes back as every OTA
booking does: through the booking feed and the intake.

Each answer names the booking as its webhooks do (issue 45): `reference`, the booking's own
(PMS-…, TEST-… for a test twin's), once the intake has applied the revision (waited for, up to TOLD_WITHIN seconds),
and `reservationCode`, the channel's. Modify and cancel take either."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from ...channel.sandbox.bookings import Stay, StayChange, StayDetails
from ...channel.sandbox.revision import Charge, Company, Guest, Revision, Service, Tax
from ...channel.sandbox.state import SandboxState
from ...domain.admin_models import OtaBookingChangeIn, OtaBookingIn, OtaChargeIn, OtaDetailsIn, OtaGuestIn
from ...domain.ari_write import HORIZON_DAYS
from ...domain.bookings import MAX_NIGHTS
from ...domain.errors import ApiError
from ...storage import ota, properties
from ...storage.properties import ChannelIds
from ..api.answers import TestOtaRevision
from ..context import context
from .looking_again import look_until


def _guest(g: OtaGuestIn) -> Guest:
    company: Company | None = None if g.company is None and g.vatNumber is None else {
        "title": g.company, "number": g.vatNumber, "number_type": "VAT" if g.vatNumber else None}
    return {"name": g.name, "surname": g.surname, "mail": g.email, "phone": g.phone, "country": g.country,
            "language": g.language, "address": g.address, "city": g.city, "zip": g.zip, "company": company}


def _charge(charge: OtaChargeIn, tax: bool) -> Charge:
    """A tax or an extra as Channex gives one (Bookings Collection: Booking Service, Taxes)."""
    return {"name": charge.name, "type": charge.type or ("tax" if tax else charge.name),
            "total_price": charge.amount, "price_per_unit": charge.amount,
            "price_mode": charge.priceMode or "Per stay", "persons": charge.persons, "nights": charge.nights}


def _tax(charge: OtaChargeIn) -> Tax:
    return {**_charge(charge, True), "is_inclusive": charge.inclusive}


def _extra(charge: OtaChargeIn) -> Service:
    return {**_charge(charge, False)}


def _details(body: OtaDetailsIn, nights: int, children: int) -> StayDetails:
    """The Stay's fields for what `body` gives of a booking's details (those it names only;
    a null clears one)."""
    given = body.details()  # which fields are given; their values are read, typed, from `body`
    found: StayDetails = {}
    if "nightlyAmounts" in given:
        if body.nightlyAmounts is not None and len(body.nightlyAmounts) != nights:
            raise ApiError("VALIDATION", "request does not match the schema",
                           [{"path": "nightlyAmounts", "message": f"one amount a night: {nights}"}])
        found["nightly"] = None if body.nightlyAmounts is None else [Decimal(a) for a in body.nightlyAmounts]
    if body.childrenAges is not None and len(body.childrenAges) != children:
        raise ApiError("VALIDATION", "request does not match the schema",
                       [{"path": "childrenAges", "message": f"one age a child: {children}"}])
    if "taxes" in given:
        found["taxes"] = None if body.taxes is None else [_tax(t) for t in body.taxes]
    if "extras" in given:
        found["extras"] = [_extra(e) for e in body.extras or ()]
    if "childrenAges" in given:
        found["children_ages"] = list(body.childrenAges or [])
    if "arrivalHour" in given:
        found["arrival_hour"] = body.arrivalHour
    if "notes" in given:
        found["notes"] = body.notes
    if "paymentCollect" in given:
        found["payment_collect"] = body.paymentCollect
    if "paymentType" in given:
        found["payment_type"] = body.paymentType
    if "virtualCard" in given:
        found["virtual_card"] = bool(body.virtualCard)
    if "commission" in given:
        found["commission"] = None if body.commission is None else Decimal(body.commission)
    return found


async def _mapped(property_id: int) -> ChannelIds:
    """The property's channel-manager ids; PROPERTY_NOT_FOUND, or VALIDATION when unmapped."""
    ids = await properties.channel_ids(context().db, property_id)
    if ids is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    if ids.property_id is None:
        raise ApiError("VALIDATION", "the property is not mapped to the channel manager",
                       [{"path": "$", "message": "set its channel mapping first"}])
    return ids


def _cm_ids(ids: ChannelIds, room_type_id: int, rate_plan_id: int) -> tuple[str, str]:
    """The channel manager's ids of our room type and rate plan."""
    issues = []
    if room_type_id not in ids.room_types:
        issues.append({"path": "roomTypeId", "message": "not a mapped room type of this property"})
    if rate_plan_id not in ids.rate_plans:
        issues.append({"path": "ratePlanId", "message": "not a mapped rate plan of this property"})
    if issues:
        raise ApiError("VALIDATION", "request does not match the schema", issues)
    return ids.room_types[room_type_id], ids.rate_plans[rate_plan_id]


def _check_stay(arrival: date, departure: date) -> None:
    """A stay a channel manager could sell: within the bookable horizon, at most MAX_NIGHTS
    nights (a stay of millennia would have the sandbox build a day per night)."""
    today = context().clock.now().date()
    issues = []
    if (departure - arrival).days > MAX_NIGHTS:
        issues.append({"path": "checkOut", "message": f"a stay is at most {MAX_NIGHTS} nights"})
    if arrival < today - timedelta(days=1) or departure > today + timedelta(days=HORIZON_DAYS + 1):
        issues.append({"path": "checkIn", "message": f"the stay must be within {HORIZON_DAYS} days from today"})
    if issues:
        raise ApiError("VALIDATION", "request does not match the schema", issues)


# How long an answer waits for the intake to apply the revision it made (in-process: the
# sandbox's notification wakes the intake at once; a second or two under load).
TOLD_WITHIN = 10.0
# A revision applied by another process is seen by looking again this often.
LOOK_AGAIN = 0.25


async def _told(revision: Revision, property_id: int) -> TestOtaRevision:
    """The revision's answer, once the intake has settled it (or TOLD_WITHIN has passed, or
    the service stops): `reference` the booking's when it was applied, else None."""
    found = await look_until("revision", property_id, TOLD_WITHIN, LOOK_AGAIN,
                             lambda: ota.told_reference(context().db, property_id, revision["id"]),
                             lambda got: got is not None and got[0] != "received")
    return {"reference": found[1] if found is not None else None,
            "reservationCode": revision["ota_reservation_code"], "revisionId": revision["id"],
            "status": revision["status"]}


async def new_booking(sandbox: SandboxState, property_id: int, body: OtaBookingIn) -> TestOtaRevision:
    """A new OTA booking on the sandbox; answers its reference and first revision."""
    _check_stay(body.checkIn, body.checkOut)
    ids = await _mapped(property_id)
    assert ids.property_id is not None
    cm_room, cm_plan = _cm_ids(ids, body.roomTypeId, body.ratePlanId)
    stay = Stay(ids.property_id, cm_room, cm_plan, body.checkIn, body.checkOut, body.adults, body.children,
                _guest(body.guest), Decimal(body.amount), ids.currency, body.channel,
                **_details(body, (body.checkOut - body.checkIn).days, body.children))
    return await _told(sandbox.bookings.new(stay, context().clock.now()), property_id)


async def _booking(sandbox: SandboxState, property_id: int, reference: str) -> tuple[str, Stay, ChannelIds]:
    """The sandbox OTA booking named by `reference` (the booking's own, or the channel's
    reservation code), if it is this property's: its reservation code, the stay, and the
    property's channel ids."""
    ids = await properties.channel_ids(context().db, property_id)
    code = reference if reference in sandbox.bookings.codes else \
        await ota.reservation_code_of(context().db, property_id, reference[:64]) or reference
    booking_id = sandbox.bookings.codes.get(code)
    stay = sandbox.bookings.stays.get(booking_id) if booking_id else None
    if ids is None or stay is None or stay.property_id != ids.property_id:
        raise ApiError("NOT_FOUND", f"no sandbox OTA booking {reference[:40]!r} on this property")
    return code, stay, ids


async def modify_booking(sandbox: SandboxState, property_id: int, reference: str,
                         body: OtaBookingChangeIn) -> TestOtaRevision:
    code, stay, ids = await _booking(sandbox, property_id, reference)
    changes: StayChange = {}
    if body.roomTypeId is not None or body.ratePlanId is not None:
        rooms = {cm: ours for ours, cm in ids.room_types.items()}
        plans = {cm: ours for ours, cm in ids.rate_plans.items()}
        room = body.roomTypeId or rooms.get(stay.room_type_id)
        plan = body.ratePlanId or plans.get(stay.rate_plan_id)
        if room is None or plan is None:  # the mapping changed since the booking was made
            raise ApiError("VALIDATION", "request does not match the schema",
                           [{"path": "roomTypeId" if room is None else "ratePlanId",
                             "message": "name it: the booking's is no longer mapped"}])
        cm_room, cm_plan = _cm_ids(ids, room, plan)
        changes |= {"room_type_id": cm_room, "rate_plan_id": cm_plan}
    if body.checkIn is not None:
        changes["arrival"] = body.checkIn
    if body.checkOut is not None:
        changes["departure"] = body.checkOut
    if body.adults is not None:
        changes["adults"] = body.adults
    if body.children is not None:
        changes["children"] = body.children
    if body.channel is not None:
        changes["ota_name"] = body.channel
    if body.guest is not None:
        changes["guest"] = _guest(body.guest)
    if body.amount is not None:
        changes["amount"] = Decimal(body.amount)
    arrival, departure = changes.get("arrival", stay.arrival), changes.get("departure", stay.departure)
    if departure <= arrival:
        raise ApiError("VALIDATION", "request does not match the schema",
                       [{"path": "checkOut", "message": "checkOut must be after checkIn"}])
    _check_stay(arrival, departure)
    changes = {**changes, **_details(body, (departure - arrival).days, changes.get("children", stay.children))}
    if "nightly" not in changes and ((arrival, departure) != (stay.arrival, stay.departure) or "amount" in changes):
        # Nights given for another stay or another amount: the new amount spread again.
        changes["nightly"] = None
    return await _told(sandbox.bookings.modify(code, changes, context().clock.now()), property_id)


async def cancel_booking(sandbox: SandboxState, property_id: int, reference: str) -> TestOtaRevision:
    code, _, _ = await _booking(sandbox, property_id, reference)
    return await _told(sandbox.bookings.cancel(code, context().clock.now()), property_id)
