"""Planning an ARI write, without I/O: check the body, expand ranges, merge last-write-wins.

Order (docs/decisions/0019-ari-write-order-of-checks.md): entry count, schema, then each entry's range,
past nights, horizon and weekday mask, then the request's cell count. Everything here
runs before any budget is charged; ids, currency and rate policy are checked against the
property's catalog as its writer holds it (`check_write`), whose version the write's own
statement checks (docs/decisions/0132-a-keyed-write-in-one-statement.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import Enum
from typing import Any

from pydantic import BaseModel
from typing_extensions import TypedDict

from . import dates
from .ari_models import (
    AvailabilityBody,
    RateEntry,
    RatesBody,
    RestrictionEntry,
    RestrictionsBody,
)
from .errors import ApiError, validation_error
from .money import currency_exponent
from .sell_modes import ROOM_PRICE
from .validation import parse_payload

MAX_UPDATES = 1000
MAX_CELLS = 5000
HORIZON_DAYS = 365


class Resource(Enum):
    AVAILABILITY = "availability"
    RATES = "rates"
    RESTRICTIONS = "restrictions"

    @property
    def pushed_by(self) -> str:
        return "inventory-drain" if self is Resource.AVAILABILITY else "ari-projector"


_BODIES: dict[Resource, type[BaseModel]] = {
    Resource.AVAILABILITY: AvailabilityBody,
    Resource.RATES: RatesBody,
    Resource.RESTRICTIONS: RestrictionsBody,
}

Cell = tuple[int, date]  # (room type or rate plan id, night)


@dataclass(frozen=True, slots=True)
class EntryCells:
    """One entry of the body, expanded: its entity, its nights, and what it sets."""

    index: int
    entity_id: int
    nights: tuple[date, ...]
    value: Any  # availability: int; rates: whole major units; restrictions: {field: value}
    currency: str | None = None
    occupancy: int | None = None  # rates: the adult count priced (a per-person plan's), or None


@dataclass(frozen=True, slots=True)
class WritePlan:
    resource: Resource
    entries: tuple[EntryCells, ...]

    @property
    def requested_cells(self) -> int:
        """Cells named by the body after expansion; a cell named twice counts twice."""
        return sum(len(e.nights) for e in self.entries)

    def entity_ids(self) -> set[int]:
        return {e.entity_id for e in self.entries}


def plan_write(resource: Resource, payload: Any, today: date) -> WritePlan:
    """Check and expand a parsed body; raises the contract's 400s."""
    if isinstance(payload, dict) and isinstance(payload.get("updates"), list):
        count = len(payload["updates"])
        if count > MAX_UPDATES:
            raise ApiError("TOO_MANY_UPDATES", f"at most {MAX_UPDATES} entries per request",
                           {"max": MAX_UPDATES, "got": count})
    body = parse_payload(_BODIES[resource], payload)
    updates: list[Any] = body.updates  # type: ignore[attr-defined]

    last_night = today + timedelta(days=HORIZON_DAYS)
    total = 0
    masks = []
    for index, entry in enumerate(updates):
        mask = dates.mask_of(getattr(entry, "days", None))
        _check_range(index, entry.dateFrom, entry.dateTo, mask, today, last_night)
        masks.append(mask)
        total += dates.count_nights(entry.dateFrom, entry.dateTo, mask)
    if total > MAX_CELLS:
        raise ApiError("TOO_MANY_CELLS", f"at most {MAX_CELLS} cells per request", {"max": MAX_CELLS, "got": total})

    return WritePlan(resource, tuple(_expand(resource, i, e, m) for i, (e, m) in enumerate(zip(updates, masks))))


def _check_range(index: int, first: date, last: date, mask: frozenset[int], today: date, last_night: date) -> None:
    where = {"index": index, "dateFrom": first.isoformat(), "dateTo": last.isoformat()}
    if last < first:
        raise ApiError("RANGE_INVALID", "dateTo is before dateFrom", where)
    first_night = dates.first_masked(first, last, mask)
    final_night = dates.last_masked(first, last, mask)
    if first_night is None or final_night is None:
        raise ApiError("RANGE_INVALID", "the weekday mask leaves no night in the range", where)
    if first_night < today:
        raise ApiError("RANGE_INVALID", "a night is in the past", {**where, "today": today.isoformat()})
    if final_night > last_night:
        raise ApiError("HORIZON", f"the last writable night is {last_night.isoformat()}",
                       {**where, "lastNight": last_night.isoformat()})


def _expand(resource: Resource, index: int, entry: Any, mask: frozenset[int]) -> EntryCells:
    nights = tuple(dates.nights(entry.dateFrom, entry.dateTo, mask))
    if resource is Resource.AVAILABILITY:
        return EntryCells(index, entry.roomTypeId, nights, entry.available)
    if isinstance(entry, RateEntry):
        return EntryCells(index, entry.ratePlanId, nights, entry.rate, entry.currency, entry.occupancy)
    assert isinstance(entry, RestrictionEntry)
    return EntryCells(index, entry.ratePlanId, nights, entry.sent_fields())


def merge(resource: Resource, entries: Iterable[EntryCells]) -> dict[Cell, Any]:
    """The value each cell ends with, in body order: the last write to a cell wins.

    Restrictions merge field by field: a later entry overrides only the fields it sends.
    Rates merge occupancy by occupancy, {occupancy: price} a plan's night (ROOM_PRICE for a
    per-room plan's one price): a cell is a plan, a night and an occupancy.
    """
    cells: dict[Cell, Any] = {}
    if resource is Resource.RESTRICTIONS:
        for entry in entries:
            for night in entry.nights:
                fields = cells.setdefault((entry.entity_id, night), {})
                fields.update(entry.value)
    elif resource is Resource.RATES:
        for entry in entries:
            occupancy = ROOM_PRICE if entry.occupancy is None else entry.occupancy
            for night in entry.nights:
                cells.setdefault((entry.entity_id, night), {})[occupancy] = entry.value
    else:
        for entry in entries:
            for night in entry.nights:
                cells[(entry.entity_id, night)] = entry.value
    return cells


def unknown_ids(plan: WritePlan, known: set[int]) -> list[int]:
    return sorted(plan.entity_ids() - known)


def occupancy_issues(plan: WritePlan, occupancies: Mapping[int, frozenset[int]]) -> list[dict[str, str]]:
    """Each rates entry whose occupancy does not fit its plan's sell mode, as VALIDATION's
    {path, message}: a per-person plan is priced per adult count (`occupancy` required,
    one of the plan's), a per-room plan has one price (no `occupancy`)."""
    issues = []
    for entry in plan.entries:
        taken = occupancies.get(entry.entity_id)
        path = f"updates[{entry.index}].occupancy"
        if taken is None:
            if entry.occupancy is not None:
                issues.append({"path": path, "message": f"rate plan {entry.entity_id} is sold per room: "
                                                        "its one price takes no occupancy"})
        elif entry.occupancy is None:
            issues.append({"path": path, "message": f"rate plan {entry.entity_id} is sold per person: "
                                                    f"name the occupancy priced, one of {sorted(taken)}"})
        elif entry.occupancy not in taken:
            issues.append({"path": path, "message": f"rate plan {entry.entity_id} prices occupancies "
                                                    f"{sorted(taken)}, not {entry.occupancy}"})
    return issues


def currency_mismatch(plan: WritePlan, expected: str) -> str | None:
    """The first currency of the body that is not the property's, if any."""
    for entry in plan.entries:
        if entry.currency is not None and entry.currency != expected:
            return entry.currency
    return None


class RejectedCells(TypedDict):
    """An entry of a write refused whole, as the contract says it (`rejected[]`), the batch
    keeps it and an idempotency key keeps it with the write's outcome."""

    cells: int
    error: str


@dataclass(frozen=True, slots=True)
class Rejection:
    index: int
    cells: int
    error: str

    def view(self) -> RejectedCells:
        return {"cells": self.cells, "error": self.error}


def policy_rejections(plan: WritePlan, policies: Mapping[int, tuple[int | None, int | None]],
                      currency: str) -> list[Rejection]:
    """Rates entries outside their plan's [minRate, maxRate]: refused whole."""
    refused = []
    for entry in plan.entries:
        low, high = policies.get(entry.entity_id, (None, None))
        if low is not None and entry.value < low:
            refused.append(Rejection(entry.index, len(entry.nights),
                                     f"rate {entry.value} {currency} is below the plan's minimum of {low}"))
        elif high is not None and entry.value > high:
            refused.append(Rejection(entry.index, len(entry.nights),
                                     f"rate {entry.value} {currency} is above the plan's maximum of {high}"))
    return refused


@dataclass(frozen=True, slots=True)
class WriteCatalog:
    """What a write is checked against, as the record held it at `version`: the ids of the
    property's room types, its rate plans with their policies (min, max rate in whole major
    units), and its currency."""

    version: int
    currency: str
    room_types: frozenset[int]
    policies: Mapping[int, tuple[int | None, int | None]]
    # The per-person plans, with the adult counts each prices (1 to its room type's
    # maxAdults); a plan not here is sold per room.
    occupancies: Mapping[int, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CheckedWrite:
    """A write checked against a catalog: refused whole (`refusal`), or the value each
    cell ends with (availability: rooms; rates: {occupancy: minor units}; restrictions:
    the fields sent) and the rates entries refused for their plan's policy."""

    refusal: ApiError | None
    values: dict[Cell, Any]
    rejected: tuple[Rejection, ...] = ()


def check_write(plan: WritePlan, catalog: WriteCatalog) -> CheckedWrite:
    """Ids, a rates entry's occupancy against its plan's sell mode, currency and rate policy
    (decision 0019's order, the occupancy after the ids: decision 0136), then last write wins."""
    resource = plan.resource
    entries = list(plan.entries)
    rejected: list[Rejection] = []
    if resource is Resource.AVAILABILITY:
        unknown = unknown_ids(plan, set(catalog.room_types))
        if unknown:
            return CheckedWrite(ApiError("UNKNOWN_ROOM_TYPE", "room types not of this property",
                                         {"roomTypeIds": unknown}), {})
    else:
        unknown = unknown_ids(plan, set(catalog.policies))
        if unknown:
            return CheckedWrite(ApiError("UNKNOWN_RATE_PLAN", "rate plans not of this property",
                                         {"ratePlanIds": unknown}), {})
    if resource is Resource.RATES:
        issues = occupancy_issues(plan, catalog.occupancies)
        if issues:
            return CheckedWrite(validation_error(issues), {})
        got = currency_mismatch(plan, catalog.currency)
        if got is not None:
            return CheckedWrite(ApiError("CURRENCY_MISMATCH", f"rates must be in {catalog.currency}",
                                         {"expected": catalog.currency, "got": got}), {})
        rejected = policy_rejections(plan, catalog.policies, catalog.currency)
        if entries and len(rejected) == len(entries):  # an empty write refused nothing
            return CheckedWrite(ApiError("NOTHING_ACCEPTED", "every entry is outside its plan's rate policy",
                                         {"rejected": [r.view() for r in rejected]}), {})
        refused = {r.index for r in rejected}
        entries = [e for e in entries if e.index not in refused]
    values = merge(resource, entries)
    if resource is Resource.RATES:
        scale = 10 ** currency_exponent(catalog.currency)
        values = {cell: {occupancy: major * scale for occupancy, major in prices.items()}
                  for cell, prices in values.items()}
    return CheckedWrite(None, values, tuple(rejected))
