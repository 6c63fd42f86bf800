"""Admin routes about the channel manager: what it holds, and the sandbox's stats and faults."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from quart import Blueprint, Response, request

from ...channel.sandbox.bookings import Stay
from ...channel.sandbox.state import SandboxState
from ...domain import dates
from ...domain.admin_models import OtaBookingChangeIn, OtaBookingIn, OtaGuestIn, SandboxFaultsIn
from ...domain.errors import ApiError
from ...domain.paths import ADMIN_PREFIX
from ...domain.validation import parse_model
from ...storage import properties
from ..body import raw_body
from ..context import context
from ..envelope import ok
from ..shared.held_grid import read_held_grid

blueprint = Blueprint("admin_channel", __name__, url_prefix=ADMIN_PREFIX)


def _sandbox() -> SandboxState:
    sandbox = context().channel.sandbox
    if sandbox is None:
        raise ApiError("SANDBOX_DISABLED", "a real channel manager is configured")
    return sandbox


@blueprint.get("/sandbox")
async def sandbox_stats() -> Response:
    return ok({"url": context().channel.sandbox_url, "stats": _sandbox().stats.view()})


@blueprint.get("/sandbox/calls")
async def sandbox_calls() -> Response:
    """The ARI writes the in-process sandbox received, oldest first (its last 10,000), each
    with when it applied them: what the standalone sandbox's /_sandbox/calls lists."""
    return ok([c.view() for c in _sandbox().calls])


@blueprint.post("/sandbox/faults")
async def sandbox_faults() -> Response:
    sandbox = _sandbox()
    body = parse_model(SandboxFaultsIn, await raw_body())
    sandbox.faults.mode, sandbox.faults.remaining, sandbox.faults.retry_after = body.mode, body.count, body.retryAfter
    return ok({"mode": body.mode, "count": body.count, "retryAfter": body.retryAfter})


GRID_DEFAULT_DAYS = 30
GRID_MAX_DAYS = 500


def _day(name: str, default: date) -> date:
    text = request.args.get(name)
    if text is None:
        return default
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ApiError("VALIDATION", "query does not match the schema",
                       [{"path": name, "message": "must be a date YYYY-MM-DD"}]) from None


@blueprint.get("/properties/<int:property_id>/channel-grid")
async def channel_grid(property_id: int) -> Response:
    ctx = context()
    if await properties.get_live_property(ctx.db, property_id) is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    first = _day("from", ctx.clock.now().date())
    last = _day("to", dates.plus_days(first, GRID_DEFAULT_DAYS) or date.max)
    if not 0 <= (last - first).days <= GRID_MAX_DAYS:
        # As the Connect API's reads: a range a channel manager can be asked for in one go.
        raise ApiError("VALIDATION", "query does not match the schema",
                       [{"path": "to", "message": f"must be from `from` to {GRID_MAX_DAYS} days after it"}])
    held = await read_held_grid(property_id, first, last)
    availability = [{"roomTypeId": room, "date": day, "available": count}
                    for room, nights in held.availability.items() for day, count in nights.items()]
    rates = [{"ratePlanId": plan, "date": day, "rateMinor": rate}
             for plan, nights in held.rates.items() for day, rate in nights.items()]
    restrictions = [{"ratePlanId": plan, "date": day, **fields}
                    for plan, nights in held.restrictions.items() for day, fields in nights.items()]
    return ok({"from": first.isoformat(), "to": last.isoformat(), "availability": availability, "rates": rates,
               "restrictions": restrictions})


def _guest(g: OtaGuestIn) -> dict[str, Any]:
    return {"name": g.name, "surname": g.surname, "mail": g.email, "phone": g.phone, "country": g.country}


async def _cm_ids(property_id: int, room_type_id: int, rate_plan_id: int) -> tuple[str, str, str, str]:
    """The channel manager's ids of the property, room type and rate plan, and the currency."""
    ids = await properties.channel_ids(context().db, property_id)
    if ids is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    if ids.property_id is None:
        raise ApiError("VALIDATION", "the property is not mapped to the channel manager",
                       [{"path": "$", "message": "set its channel mapping first"}])
    issues = []
    if room_type_id not in ids.room_types:
        issues.append({"path": "roomTypeId", "message": "not a mapped room type of this property"})
    if rate_plan_id not in ids.rate_plans:
        issues.append({"path": "ratePlanId", "message": "not a mapped rate plan of this property"})
    if issues:
        raise ApiError("VALIDATION", "request does not match the schema", issues)
    return ids.property_id, ids.room_types[room_type_id], ids.rate_plans[rate_plan_id], ids.currency


def _revision_view(revision: dict[str, Any]) -> dict[str, Any]:
    return {"reference": revision["ota_reservation_code"], "revisionId": revision["id"], "status": revision["status"]}


@blueprint.post("/properties/<int:property_id>/sandbox/ota-bookings")
async def sandbox_ota_booking(property_id: int) -> Response:
    sandbox = _sandbox()
    body = parse_model(OtaBookingIn, await raw_body())
    cm_property, cm_room, cm_plan, currency = await _cm_ids(property_id, body.roomTypeId, body.ratePlanId)
    stay = Stay(cm_property, cm_room, cm_plan, body.checkIn, body.checkOut, body.adults, body.children,
                _guest(body.guest), Decimal(body.amount), currency, body.channel)
    return ok(_revision_view(sandbox.bookings.new(stay, context().clock.now())), 201)


async def _sandbox_booking(property_id: int, reference: str) -> Stay:
    """The sandbox OTA booking with this reference, if it is this property's."""
    sandbox = _sandbox()
    ids = await properties.channel_ids(context().db, property_id)
    booking_id = sandbox.bookings.codes.get(reference)
    stay = sandbox.bookings.stays.get(booking_id) if booking_id else None
    if ids is None or stay is None or stay.property_id != ids.property_id:
        raise ApiError("NOT_FOUND", f"no sandbox OTA booking {reference[:40]!r} on property {property_id}")
    return stay


@blueprint.post("/properties/<int:property_id>/sandbox/ota-bookings/<reference>/modify")
async def sandbox_ota_modify(property_id: int, reference: str) -> Response:
    sandbox = _sandbox()
    stay = await _sandbox_booking(property_id, reference)
    body = parse_model(OtaBookingChangeIn, await raw_body())
    changes: dict[str, Any] = {}
    if body.roomTypeId is not None or body.ratePlanId is not None:
        ids = await properties.channel_ids(context().db, property_id)
        assert ids is not None
        rooms = {cm: ours for ours, cm in ids.room_types.items()}
        plans = {cm: ours for ours, cm in ids.rate_plans.items()}
        _, cm_room, cm_plan, _ = await _cm_ids(property_id, body.roomTypeId or rooms[stay.room_type_id],
                                               body.ratePlanId or plans[stay.rate_plan_id])
        changes |= {"room_type_id": cm_room, "rate_plan_id": cm_plan}
    for field, attr in (("checkIn", "arrival"), ("checkOut", "departure"), ("adults", "adults"),
                        ("children", "children"), ("channel", "ota_name")):
        value = getattr(body, field)
        if value is not None:
            changes[attr] = value
    if body.guest is not None:
        changes["guest"] = _guest(body.guest)
    if body.amount is not None:
        changes["amount"] = Decimal(body.amount)
    arrival, departure = changes.get("arrival", stay.arrival), changes.get("departure", stay.departure)
    if departure <= arrival:
        raise ApiError("VALIDATION", "request does not match the schema",
                       [{"path": "checkOut", "message": "checkOut must be after checkIn"}])
    return ok(_revision_view(sandbox.bookings.modify(reference, changes, context().clock.now())))


@blueprint.post("/properties/<int:property_id>/sandbox/ota-bookings/<reference>/cancel")
async def sandbox_ota_cancel(property_id: int, reference: str) -> Response:
    sandbox = _sandbox()
    await _sandbox_booking(property_id, reference)
    return ok(_revision_view(sandbox.bookings.cancel(reference, context().clock.now())))
