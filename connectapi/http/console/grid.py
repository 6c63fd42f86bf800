"""The channel grid of a property: for a range of nights, per room type and rate plan, what
the record holds beside what the channel manager holds, differences marked; and the write
batches still waiting to be pushed."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from quart import Blueprint, Response, request

from ...domain.sell_modes import ROOM_PRICE
from ...domain.channel_values import CM_RESTRICTIONS, rate_text
from ...domain.errors import ApiError
from ...domain.refusals import said
from ...storage import ari, channel_refusals, properties, pushes
from ...storage.channel_refusals import PropertyRefusal
from ...storage.records import RatePlan, RoomType
from ..context import context
from ..shared.held_grid import HeldGrid, read_held_grid
from .pages import property_page
from .session import owned_record, login_required

log = logging.getLogger("connectapi.http")

DEFAULT_NIGHTS = 14
MOST_NIGHTS = 60


Value = TypeVar("Value")


@dataclass(frozen=True, slots=True)
class Shown:
    """One value of the grid on both sides: the record's, the channel manager's, and
    whether they differ (only where the record says something)."""

    record: str
    held: str
    differs: bool


@dataclass(frozen=True, slots=True)
class GridRow:
    """One night of a room type: its availability, and each of its rate plans' rate and
    restrictions, by the column's name (`availability`, `rate-<plan>`, `restrictions-<plan>`)."""

    night: date
    cells: dict[str, Shown]


@dataclass(frozen=True, slots=True)
class GridRoom:
    room: RoomType
    plans: list[RatePlan]
    rows: list[GridRow]
    differing: int  # values that differ, on every night shown


@dataclass(frozen=True, slots=True)
class RefusedRow:
    """A write the channel manager refused, with the room type or rate plan it was of."""

    refusal: PropertyRefusal
    name: str
    said: str


def _compare(record: Value | None, held: Value | None, text: Callable[[Value], str], compared: bool) -> Shown:
    differs = compared and record is not None and record != held
    return Shown("—" if record is None else text(record), "—" if held is None else text(held), differs)


def _compare_prices(record: dict[int, int] | None, held: dict[int, int] | None,
                    text: Callable[[dict[int, int]], str], compared: bool) -> Shown:
    """As _compare, for a night's prices by occupancy: they differ where the record holds a
    price the channel manager does not hold the same (an occupancy only the channel holds
    is the record's "no opinion")."""
    differs = compared and record is not None and any((held or {}).get(n) != price for n, price in record.items())
    return Shown("—" if record is None else text(record), "—" if not held else text(held), differs)


def _restrictions_text(fields: dict[str, bool | int]) -> str:
    parts = []
    if fields["stopSell"]:
        parts.append("stop sell")
    if fields["closedToArrival"]:
        parts.append("closed to arrival")
    if fields["closedToDeparture"]:
        parts.append("closed to departure")
    if fields["minStayArrival"] > 1:
        parts.append(f"min {fields['minStayArrival']} (arrival)")
    if fields["minStayThrough"] > 1:
        parts.append(f"min {fields['minStayThrough']} (through)")
    if fields["maxStay"]:
        parts.append(f"max {fields['maxStay']}")
    return ", ".join(parts) or "none"


def _neutral(fields: Mapping[str, Any] | None) -> dict[str, bool | int] | None:
    """Restrictions with every field set: a field with no opinion is the one meaning none.
    `fields`: the record's (RestrictionFields) or the channel manager's (HeldGrid), by our
    field names."""
    if fields is None:
        return None
    return {ours: neutral if fields.get(ours) is None else fields[ours]
            for ours, (_, neutral) in CM_RESTRICTIONS.items()}


def _range(prop_timezone: str) -> tuple[date, date, str | None]:
    """The nights asked (from, to, inclusive), or the default two weeks with what was wrong."""
    today = context().clock.today(ZoneInfo(prop_timezone))
    default = (today, today + timedelta(days=DEFAULT_NIGHTS - 1))
    sent_from, sent_to = request.args.get("from", "").strip(), request.args.get("to", "").strip()
    if not sent_from and not sent_to:
        return *default, None
    try:
        first = date.fromisoformat(sent_from) if sent_from else default[0]
        # Two weeks from the first, or up to the calendar's last day (9999-12-31 has no next).
        last = (date.fromisoformat(sent_to) if sent_to
                else first + timedelta(days=min(DEFAULT_NIGHTS - 1, (date.max - first).days)))
    except ValueError:
        return *default, "Dates are written YYYY-MM-DD."
    if last < first:
        return *default, "The last night must not be before the first."
    if (last - first).days + 1 > MOST_NIGHTS:
        return *default, f"Show at most {MOST_NIGHTS} nights at once."
    return first, last, None


@login_required
async def grid(property_id: int) -> Response:
    prop, record = await owned_record(property_id)
    ctx = context()
    first, last, error = _range(prop.timezone)
    held: HeldGrid | None = None
    held_note = None
    try:
        # The console does not wait for the channel manager's read budget: it says so instead.
        held = await read_held_grid(record.id, first, last, wait=0.0)
    except ApiError as err:
        held_note = err.message
    except Exception:  # noqa: BLE001 - whatever went wrong there, the record is still shown
        log.exception("console grid: reading the channel manager of property %s failed", prop.id)
        held_note = "reading it failed"
    catalog = await properties.get_catalog(ctx.db, prop.id)
    availability = {(c.room_type_id, c.night): c.available
                    for c in await ari.read_availability(ctx.db, record.id, first, last)}
    rates: dict[tuple[int, date], dict[int, int]] = {}
    for c in await ari.read_rates(ctx.db, record.id, first, last):
        rates.setdefault((c.rate_plan_id, c.night), {})[c.occupancy] = c.rate_minor
    restrictions = {(c.rate_plan_id, c.night): c.fields
                    for c in await ari.read_restrictions(ctx.db, record.id, first, last)}
    nights = [first + timedelta(days=i) for i in range((last - first).days + 1)]

    def money(prices: dict[int, int]) -> str:
        """A night's price, or a per-person plan's by adult count: "1: 80.00 · 2: 95.00"."""
        if ROOM_PRICE in prices:
            return rate_text(prices[ROOM_PRICE], prop.currency)
        return " · ".join(f"{n}: {rate_text(prices[n], prop.currency)}" for n in sorted(prices))

    compared = held is not None
    rooms: list[GridRoom] = []
    for room in catalog.room_types:
        plans = [p for p in catalog.rate_plans if p.room_type_id == room.id]
        rows: list[GridRow] = []
        differing = 0
        for night in nights:
            day = night.isoformat()
            held_available = held.availability.get(room.id, {}).get(day) if held else None
            cells: dict[str, Shown] = {
                "availability": _compare(availability.get((room.id, night)), held_available, str, compared)}
            for plan in plans:
                held_rate = held.rates.get(plan.id, {}).get(day) if held else None
                held_fields = _neutral(held.restrictions.get(plan.id, {}).get(day, {})) if held else None
                cells[f"rate-{plan.id}"] = _compare_prices(rates.get((plan.id, night)), held_rate, money, compared)
                cells[f"restrictions-{plan.id}"] = _compare(_neutral(restrictions.get((plan.id, night))), held_fields,
                                                            _restrictions_text, compared)
            rows.append(GridRow(night, cells))
            differing += sum(shown.differs for shown in cells.values())
        rooms.append(GridRoom(room, plans, rows, differing))
    batches = await pushes.pending_batches(ctx.db, record.id)
    names = {("availability", r.id): r.name for r in catalog.room_types}
    names.update({(kind, p.id): p.name for p in catalog.rate_plans for kind in ("rates", "restrictions")})
    refused = [RefusedRow(r, names.get((r.resource, r.entity_id), f"#{r.entity_id}"), said(r.refusal))
               for r in await channel_refusals.of_property(ctx.db, record.id)]
    return await property_page("grid.html", prop, "/grid", 400 if error else 200, error=error, first=first,
                               last=last, most_nights=MOST_NIGHTS, rooms=rooms, held_note=held_note,
                               compared=compared, batches=batches, refused=refused)


def register(blueprint: Blueprint) -> None:
    blueprint.add_url_rule("/properties/<int:property_id>/grid", view_func=grid, methods=["GET"])
