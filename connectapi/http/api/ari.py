"""Availability, rates and restrictions: reads from the record, writes through the property actor."""

from __future__ import annotations

from datetime import date, timedelta
from zoneinfo import ZoneInfo

from quart import Blueprint, Response, request

from ...actors.messages.property_writer import ApplyWrite, KeyedWrite, Refused, WriteOutcome
from ...domain import dates
from ...domain import idempotency as idem
from ...domain.ari_write import Resource, plan_write
from ...budgets.rules import RequestKind
from ...domain.errors import ApiError
from ...domain.paths import CONNECT_PREFIX
from ...domain.validation import parse_json
from ...storage import ari
from ...storage.idempotency import Stored
from ...storage.properties import get_catalog
from ...domain.sell_modes import PER_PERSON, ROOM_PRICE
from ...storage.records import Catalog, Property, RatePlan, RestrictionFields
from ..body import raw_body
from ..context import context
from ..envelope import ok
from .answers import (AvailabilityNight, AvailabilityRead, PlanRestrictions, RateNight, RatesRead, RestrictionNight,
                      RestrictionsRead, WriteResult)
from .gates import caller, rule
from .idempotent import answer_kept

blueprint = Blueprint("connect_ari", __name__)
# A night the record holds no restriction cell for.
NO_OPINION = RestrictionFields(stopSell=None, closedToArrival=None, closedToDeparture=None, minStayArrival=None,
                               minStayThrough=None, maxStay=None)

MAX_READ_DAYS = 500
DEFAULT_READ_DAYS = 30


def _read_range() -> tuple[date, date]:
    zone = ZoneInfo(caller().property.timezone)
    issues = []
    parsed: dict[str, date] = {}
    for name in ("from", "to"):
        text = request.args.get(name)
        if text is None:
            continue
        try:
            if len(text) != 10:
                raise ValueError
            parsed[name] = date.fromisoformat(text)
        except ValueError:
            issues.append({"path": name, "message": "must be a date YYYY-MM-DD"})
    if issues:
        raise ApiError("VALIDATION", "query does not match the schema", issues)
    first = parsed.get("from") or context().clock.today(zone)
    last = parsed.get("to") or dates.plus_days(first, DEFAULT_READ_DAYS)
    if last is None:
        raise ApiError("RANGE_INVALID", f"from is too late for the default {DEFAULT_READ_DAYS} days; give to",
                       {"from": first.isoformat(), "to": None})
    if last < first:
        raise ApiError("RANGE_INVALID", "to is before from", {"from": first.isoformat(), "to": last.isoformat()})
    if (last - first).days > MAX_READ_DAYS:
        raise ApiError("RANGE_INVALID", f"to is more than {MAX_READ_DAYS} days after from",
                       {"from": first.isoformat(), "to": last.isoformat(), "maxDays": MAX_READ_DAYS})
    return first, last


async def _read_setup() -> tuple[date, date, Property, Catalog]:
    """The range asked for, the caller's property and its catalog: what every read starts with."""
    first, last = _read_range()
    prop = caller().property
    return first, last, prop, await get_catalog(context().db, prop.id)


@blueprint.get("/availability")
@rule(scope="ari:read", product="channelManager")
async def read_availability() -> Response:
    first, last, prop, catalog = await _read_setup()
    rows = await ari.read_availability(context().db, prop.id, first, last)
    nights: dict[int, list[AvailabilityNight]] = {r.id: [] for r in catalog.room_types}
    for row in rows:  # ordered by room type and night
        nights.setdefault(row.room_type_id, []).append({"date": row.night.isoformat(), "available": row.available})
    answer: AvailabilityRead = {"from": first.isoformat(), "to": last.isoformat(), "roomTypes": [
        {"roomTypeId": r.id, "nights": nights[r.id]} for r in catalog.room_types]}
    return ok(answer)


@blueprint.get("/rates")
@rule(scope="ari:read", product="channelManager")
async def read_rates() -> Response:
    first, last, prop, catalog = await _read_setup()
    rows = await ari.read_rates(context().db, prop.id, first, last)
    prices: dict[int, dict[date, dict[int, int]]] = {p.id: {} for p in catalog.rate_plans}
    for row in rows:  # ordered by rate plan, night and occupancy
        prices.setdefault(row.rate_plan_id, {}).setdefault(row.night, {})[row.occupancy] = row.rate_minor
    answer: RatesRead = {"from": first.isoformat(), "to": last.isoformat(), "currency": prop.currency, "ratePlans": [
        {"ratePlanId": p.id, "nights": [_rate_night(night, held, p) for night, held in prices[p.id].items()]}
        for p in catalog.rate_plans]}
    return ok(answer)


def _rate_night(night: date, held: dict[int, int], plan: RatePlan) -> RateNight:
    """A night of a plan's prices: a per-room plan's one price; a per-person plan's price for
    each of its occupancies (null where the record holds none) and, as `rateMinor`, its
    largest occupancy's."""
    if plan.sell_mode != PER_PERSON:
        return {"date": night.isoformat(), "rateMinor": held[ROOM_PRICE]}
    each = plan.occupancies
    return {"date": night.isoformat(), "rateMinor": held.get(each[-1]),
            "byOccupancy": [{"occupancy": n, "rateMinor": held.get(n)} for n in each]}


@blueprint.get("/restrictions")
@rule(scope="ari:read", product="channelManager")
async def read_restrictions() -> Response:
    first, last, prop, catalog = await _read_setup()
    rows = await ari.read_restrictions(context().db, prop.id, first, last)
    held = {(r.rate_plan_id, r.night): r.fields for r in rows}
    span = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    plans: list[PlanRestrictions] = []
    for plan in catalog.rate_plans:
        nights: list[RestrictionNight] = [{"date": night.isoformat(), **held.get((plan.id, night), NO_OPINION)}
                                          for night in span]
        plans.append({"ratePlanId": plan.id, "nights": nights})
    answer: RestrictionsRead = {"from": first.isoformat(), "to": last.isoformat(), "ratePlans": plans}
    return ok(answer)


async def _write(resource: Resource) -> Response:
    ctx, who = context(), caller()
    pid = who.property.id
    key = idem.checked_key(request.headers.get(idem.HEADER))
    payload = parse_json(await raw_body())
    plan = plan_write(resource, payload, ctx.clock.today(ZoneInfo(who.property.timezone)))
    keyed = None if key is None else KeyedWrite(f"PUT /{resource.value}", key, idem.body_hash(payload))
    keeper = ctx.budgets.keeper
    in_flight = ctx.properties.keys_in_flight
    held = None
    if keyed is not None:
        held = (pid, keyed.route, keyed.key)
        if (running := in_flight.get(held)) is not None:
            return answer_kept(Stored(running == keyed.body_hash, True, None, None), pid, _answer)
        in_flight[held] = keyed.body_hash
    try:
        # The writer charges the cells, claims the key and writes in one statement, and
        # wakes the pushers once the cells are committed.
        done = await ctx.properties.writers.ask(
            pid, ApplyWrite(who.key.id, plan, ctx.clock.now(), keyed, keeper.cells_charge(pid, plan.requested_cells),
                            keeper.shared_time()), ctx.properties.ask_timeout)
    finally:
        if held is not None:
            in_flight.pop(held, None)
    if isinstance(done, Stored):
        return answer_kept(done, pid, _answer)
    return _answer(done)


def _answer(done: WriteOutcome) -> Response:
    if isinstance(done, Refused):
        raise done.error
    answer: WriteResult = {
        "batchId": str(done.batch_id), "resource": done.resource.value, "requestedCells": done.requested_cells,
        "acceptedCells": done.accepted_cells, "noopCells": done.noop_cells,
        "rejected": [{"cells": r.cells, "error": r.error} for r in done.rejected],
        "pushedBy": done.resource.pushed_by, "poll": f"{CONNECT_PREFIX}/batches/{done.batch_id}"}
    return ok(answer, 202, "Accepted")


@blueprint.put("/availability")
@rule(scope="ari:write", product="channelManager", kind=RequestKind.WRITE)
async def write_availability() -> Response:
    return await _write(Resource.AVAILABILITY)


@blueprint.put("/rates")
@rule(scope="ari:write", product="channelManager", kind=RequestKind.WRITE)
async def write_rates() -> Response:
    return await _write(Resource.RATES)


@blueprint.put("/restrictions")
@rule(scope="ari:write", product="channelManager", kind=RequestKind.WRITE)
async def write_restrictions() -> Response:
    return await _write(Resource.RESTRICTIONS)
