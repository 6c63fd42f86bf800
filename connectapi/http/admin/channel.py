"""Admin routes about the channel manager: what it holds, and the sandbox's stats and faults."""

from __future__ import annotations

from datetime import date

from quart import Blueprint, Response, request

from ...channel.sandbox.state import SandboxState
from ...domain import dates
from ...domain.admin_models import OtaBookingChangeIn, OtaBookingIn, SandboxFaultsIn
from ...domain.errors import ApiError
from ...domain.paths import ADMIN_PREFIX
from ...domain.sell_modes import ROOM_PRICE
from ...domain.validation import parse_model
from ...storage import properties, twins
from ..body import raw_body
from ..context import context
from ..envelope import ok
from ..shared import sandbox_bookings
from ..shared.held_grid import read_held_grid
from .answers import HeldRate

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
    await _live(property_id)
    first = _day("from", ctx.clock.now().date())
    last = _day("to", dates.plus_days(first, GRID_DEFAULT_DAYS) or date.max)
    if not 0 <= (last - first).days <= GRID_MAX_DAYS:
        # As the Connect API's reads: a range a channel manager can be asked for in one go.
        raise ApiError("VALIDATION", "query does not match the schema",
                       [{"path": "to", "message": f"must be from `from` to {GRID_MAX_DAYS} days after it"}])
    mode = request.args.get("mode", "live")
    if mode not in ("live", "test"):
        raise ApiError("VALIDATION", "query does not match the schema", [{"path": "mode", "message": "live or test"}])
    if mode == "test":
        twin = await twins.twin_of(ctx.db, property_id)
        if twin is None:
            raise ApiError("PROPERTY_NOT_FOUND", f"property {property_id} has no test record yet (no test key)")
        property_id = twin
    held = await read_held_grid(property_id, first, last)
    availability = [{"roomTypeId": room, "date": day, "available": count}
                    for room, nights in held.availability.items() for day, count in nights.items()]
    rates = [_held_rate(plan, day, prices, held.occupancies.get(plan))
             for plan, nights in held.rates.items() for day, prices in nights.items()]
    restrictions = [{"ratePlanId": plan, "date": day, **fields}
                    for plan, nights in held.restrictions.items() for day, fields in nights.items()]
    return ok({"from": first.isoformat(), "to": last.isoformat(), "availability": availability, "rates": rates,
               "restrictions": restrictions})


def _held_rate(plan: int, day: str, prices: dict[int, int], occupancies: list[int] | None) -> HeldRate:
    """A plan's night as the channel manager holds it, shaped as GET /rates shows the
    record's: a per-room plan's one price; a per-person plan's price for each of its
    occupancies (null where none is held) and, as `rateMinor`, its largest occupancy's."""
    if occupancies is None:
        return {"ratePlanId": plan, "date": day, "rateMinor": prices.get(ROOM_PRICE)}
    return {"ratePlanId": plan, "date": day, "rateMinor": prices.get(occupancies[-1]),
            "byOccupancy": [{"occupancy": n, "rateMinor": prices.get(n)} for n in occupancies]}


async def _live(property_id: int) -> int:
    """A live property's id, as every admin route takes one: a test twin's is no property of
    the admin API (a twin reads its live property's channel ids, and its id here made a live
    booking on the live property)."""
    if await properties.get_live_property(context().db, property_id) is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    return property_id


@blueprint.post("/properties/<int:property_id>/sandbox/ota-bookings")
async def sandbox_ota_booking(property_id: int) -> Response:
    sandbox = _sandbox()
    body = parse_model(OtaBookingIn, await raw_body())
    return ok(await sandbox_bookings.new_booking(sandbox, await _live(property_id), body), 201)


@blueprint.post("/properties/<int:property_id>/sandbox/ota-bookings/<reference>/modify")
async def sandbox_ota_modify(property_id: int, reference: str) -> Response:
    sandbox = _sandbox()
    body = parse_model(OtaBookingChangeIn, await raw_body())
    return ok(await sandbox_bookings.modify_booking(sandbox, await _live(property_id), reference, body))


@blueprint.post("/properties/<int:property_id>/sandbox/ota-bookings/<reference>/cancel")
async def sandbox_ota_cancel(property_id: int, reference: str) -> Response:
    return ok(await sandbox_bookings.cancel_booking(_sandbox(), await _live(property_id), reference))
