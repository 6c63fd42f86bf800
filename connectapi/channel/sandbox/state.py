"""What the sandbox channel manager holds and enforces, without I/O.

It keeps the grid it was sent (values checked as Channex checks them, see values.py, and
applied in order, last wins), the ARI calls it received, counts calls, values and cells,
enforces the budgets (per property: 10 availability calls and 10 restrictions calls a
minute, Channex's; per account: 10 reads a minute, our own caution), can be told to refuse
an entity's values (a rate plan disabled on the channel), and to fail its next calls (a 429,
a 500, a hang, a 200 that is not JSON, a dropped connection) of one kind.
"""

from __future__ import annotations

import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal, get_args
from zoneinfo import ZoneInfo

from typing_extensions import TypedDict

from ...domain.money import currency_exponent
from ...budgets.window import SlidingWindow
from .ari_fields import (MIN_STAY_FIELDS, AvailabilityFields, NightRead, OccupancyRate, PlanNight, ReadableField,
                         RestrictionFields, held_field)
from .bookings import BookingFeed
from .occupancy import PerPerson, per_person
from .values import Change, Fields, Problems, Target, check_availability, check_restrictions

MINUTE = 60.0
RESTRICTION_FIELDS = ("rate", "min_stay_arrival", "min_stay_through", "max_stay", "closed_to_arrival",
                      "closed_to_departure", "stop_sell")
MIN_STAY_TYPES = ("arrival", "through", "both")
CALLS_KEPT = 10_000
# "malformed": a 200 whose body is an HTML page; "reset": the connection closed without an answer.
FaultMode = Literal["ok", "429", "500", "timeout", "malformed", "reset"]
FAULT_MODES: tuple[FaultMode, ...] = get_args(FaultMode)
# Which calls an armed fault fails: "ari" every ARI write and read and the catalog's
# creations (the default, as before the selector); "reads" only ARI reads; "ack" booking
# acknowledgements; "feed" feed pages and one-revision reads.
FaultCalls = Literal["ari", "reads", "ack", "feed"]
FAULT_CALLS: tuple[FaultCalls, ...] = get_args(FaultCalls)
CallKind = Literal["write", "read", "catalog", "ack", "feed"]
_FAILS: dict[FaultCalls, frozenset[CallKind]] = {
    "ari": frozenset({"write", "read", "catalog"}), "reads": frozenset({"read"}),
    "ack": frozenset({"ack"}), "feed": frozenset({"feed"})}


@dataclass
class Limits:
    availability_per_property: int = 10
    restrictions_per_property: int = 10
    reads_per_account: int = 10


@dataclass
class Stats:
    availability_calls: int = 0
    restriction_calls: int = 0
    read_calls: int = 0
    values: int = 0
    cells: int = 0
    throttled: int = 0
    failed: int = 0
    # Values refused with a warning (counted in no call's `values`).
    refused: int = 0
    # Pushes that arrived while another push for one of the same properties was still open:
    # 0 when one process at a time pushes a property.
    overlapping_calls: int = 0
    # The booking feed: pages read, acknowledgements, and those of a revision already
    # acknowledged (0 when one process at a time takes the feed).
    feed_reads: int = 0
    acks: int = 0
    acks_repeated: int = 0

    def view(self) -> dict[str, int]:
        return {"availabilityCalls": self.availability_calls, "restrictionCalls": self.restriction_calls,
                "readCalls": self.read_calls, "values": self.values, "cells": self.cells,
                "throttled": self.throttled, "failed": self.failed, "refused": self.refused,
                "overlappingCalls": self.overlapping_calls, "feedReads": self.feed_reads, "acks": self.acks,
                "acksRepeated": self.acks_repeated}


@dataclass
class Faults:
    mode: FaultMode = "ok"
    remaining: int = 0
    retry_after: int | None = None
    calls: FaultCalls = "ari"

    def take(self, kind: CallKind = "write") -> tuple[FaultMode, int | None]:
        """The fault for the next call of this kind, if one is armed for it."""
        if self.mode == "ok" or self.remaining <= 0 or kind not in _FAILS[self.calls]:
            return "ok", None
        self.remaining -= 1
        return self.mode, self.retry_after


PropertyFaultMode = Literal["ok", "429", "500", "timeout", "refuse"]


@dataclass
class PropertyFault:
    mode: PropertyFaultMode
    remaining: int


@dataclass(frozen=True, slots=True)
class Throttle:
    retry_after: int


@dataclass(frozen=True, slots=True)
class Refusal:
    field: str
    message: str


class CallView(TypedDict):
    """A Call as GET /_sandbox/calls lists it."""

    kind: str
    property_ids: list[str]
    task_id: str | None
    values: int
    warnings: int
    at: str  # ISO 8601


@dataclass(frozen=True, slots=True)
class Call:
    """One ARI write received: what GET /_sandbox/calls lists."""

    kind: str  # availability | restrictions
    property_ids: tuple[str, ...]
    task_id: str | None  # None when no value was applied
    values: int
    warnings: int
    at: datetime

    def view(self) -> CallView:
        return {"kind": self.kind, "property_ids": list(self.property_ids), "task_id": self.task_id,
                "values": self.values, "warnings": self.warnings, "at": self.at.isoformat()}


@dataclass(frozen=True, slots=True)
class Applied:
    """A write's outcome: the task id (None when nothing applied) and the refused values,
    each echoed with its `warning`."""

    task_id: str | None
    warnings: list[dict[str, Any]]  # each the value as sent, any JSON object, plus `warning`


@dataclass
class RoomType:
    title: str
    count_of_rooms: int


@dataclass
class RatePlan:
    title: str
    room_type_id: str | None  # None: adopted, its room type unknown (see adopt)
    per_person: PerPerson | None = None  # its occupancy options; None: sold per room

    def night(self, held: RestrictionFields) -> PlanNight:
        """A night it holds as the reads answer it. A per-room plan's: its fields as held.
        A per-person plan's (ours: Channex documents no read of one): its restrictions, its
        primary occupancy's price as `rate` (absent when that has none) and every option's
        price held as `rates`, by occupancy (absent when none is). What a plan held before
        its sell mode changed (adopt) is not shown: a per-room price, or a per-person one."""
        shown: PlanNight = {}
        for name in held:
            if held_field(name) and (name != "rate" or self.per_person is None):
                shown[name] = held[name]
        if self.per_person is not None:
            prices = held.get("rates", {})
            listed = [OccupancyRate(occupancy=n, rate=prices[n]) for n in self.per_person.occupancies if n in prices]
            if self.per_person.primary in prices:
                shown["rate"] = prices[self.per_person.primary]
            if listed:
                shown["rates"] = listed
        return shown


@dataclass
class Property:
    id: str
    title: str
    currency: str
    timezone: str = "UTC"
    min_stay_type: str = "arrival"
    room_types: dict[str, RoomType] = field(default_factory=dict)
    rate_plans: dict[str, RatePlan] = field(default_factory=dict)
    availability: dict[str, dict[date, int]] = field(default_factory=dict)
    restrictions: dict[str, dict[date, RestrictionFields]] = field(default_factory=dict)


class SandboxState:
    def __init__(self, limits: Limits | None = None, call_seconds: float = 0.0) -> None:
        self.limits = limits or Limits()
        # How long a push takes to answer (a real channel manager is not instant): the
        # window in which another push for the same property counts as overlapping.
        self.call_seconds = call_seconds
        self.open_pushes: Counter[str] = Counter()
        self.push_opened: dict[str, float] = {}  # property id -> when its latest push came (trio's clock)
        self.stats = Stats()
        self.faults = Faults()
        self.properties: dict[str, Property] = {}
        self.bookings = BookingFeed()
        self.refusals: dict[tuple[str, str], Refusal] = {}  # (property id, entity id) -> refusal
        # Faults armed for one property's ARI calls alone (the test helpers': one integrator's
        # faults never reach another's twin). `refuse`: each value of the call is refused
        # with a warning, in a 200.
        self.property_faults: dict[str, PropertyFault] = {}
        self.calls: deque[Call] = deque(maxlen=CALLS_KEPT)
        self._windows: dict[tuple[str, str], SlidingWindow] = {}

    # -- catalog ----------------------------------------------------------------------

    def create_property(self, title: str, currency: str, timezone: str = "UTC",
                        min_stay_type: str = "arrival") -> str:
        """KeyError for a currency it does not know, ValueError for a time zone or
        min_stay_type it does not know."""
        currency_exponent(currency)
        try:
            ZoneInfo(timezone)
        except (ValueError, KeyError) as exc:
            raise ValueError("timezone") from exc
        if min_stay_type not in MIN_STAY_TYPES:
            raise ValueError("min_stay_type")
        pid = str(uuid.uuid4())
        self.properties[pid] = Property(pid, title, currency, timezone, min_stay_type)
        return pid

    def create_room_type(self, property_id: str, title: str, rooms: int) -> str:
        rid = str(uuid.uuid4())
        self._property(property_id).room_types[rid] = RoomType(title, rooms)
        return rid

    def create_rate_plan(self, property_id: str, room_type_id: str, title: str,
                         occupancies: Sequence[int] | None = None) -> str:
        """A per-room plan, or with `occupancies` a per-person plan with an option for each,
        the largest primary. KeyError for a room type the property does not have,
        ValueError for occupancies that are not distinct whole numbers from 1 to 18."""
        return self.add_rate_plan(property_id, room_type_id, title,
                                  per_person(occupancies) if occupancies is not None else None)

    def add_rate_plan(self, property_id: str, room_type_id: str, title: str, sold: PerPerson | None) -> str:
        """A rate plan sold per room (`sold` None) or per person with these options (KeyError
        for a room type the property does not have)."""
        prop = self._property(property_id)
        if room_type_id not in prop.room_types:
            raise KeyError(room_type_id)
        rid = str(uuid.uuid4())
        prop.rate_plans[rid] = RatePlan(title, room_type_id, sold)
        return rid

    def adopt(self, property_id: str, currency: str, timezone: str, room_types: Iterable[str],
              rate_plans: Iterable[str], occupancies: Mapping[str, Sequence[int]] | None = None) -> None:
        """Take these ids as a property, room types and rate plans of its own, as they are
        (the test sandbox: a test twin is pushed under its live property's channel ids, in
        whichever process pushes it, and after any restart). What it holds already stays.

        With `occupancies`, each plan takes the sell mode it says, held already or not (a
        twin's plan adopted by an older process may have been taken as per-room, and a
        plan's mode may change): a plan it names is per-person with those options, the
        largest primary; one it does not name is per-room. Without it, plans new here are
        per-room and held ones keep their mode. ValueError for occupancies that are not
        distinct whole numbers from 1 to 18 (before anything is taken)."""
        plans = list(rate_plans)
        modes = None if occupancies is None else {
            plan: per_person(occupancies[plan]) if plan in occupancies else None for plan in plans}
        prop = self.properties.get(property_id)
        if prop is None:
            prop = self.properties[property_id] = Property(property_id, "test twin", currency, timezone)
        for room in room_types:
            prop.room_types.setdefault(room, RoomType("room type", 0))
        for plan in plans:
            held = prop.rate_plans.setdefault(plan, RatePlan("rate plan", None))
            if modes is not None:
                held.per_person = modes[plan]

    def take_property_fault(self, property_ids: Iterable[str]) -> PropertyFaultMode:
        """The fault armed for the next ARI call of any of these properties, if any."""
        for pid in property_ids:
            armed = self.property_faults.get(pid)
            if armed is not None and armed.remaining > 0:
                armed.remaining -= 1
                if armed.remaining == 0:
                    del self.property_faults[pid]
                return armed.mode
        return "ok"

    def _property(self, property_id: str) -> Property:
        return self.properties[property_id]

    # -- budgets ----------------------------------------------------------------------

    def admit(self, now: float, subjects: list[tuple[str, str]]) -> Throttle | None:
        """Charge one call to each (budget, whose) or none; a Throttle when one is spent."""
        windows = [self._window(kind, whose) for kind, whose in subjects]
        for window in windows:
            wait = window.wait_for(now)
            if wait is not None:
                self.stats.throttled += 1
                return Throttle(max(1, int(wait + 0.999)))
        for window in windows:
            window.charge(now)
        return None

    def _window(self, kind: str, whose: str) -> SlidingWindow:
        key = (kind, whose)
        if key not in self._windows:
            limit = {"availability": self.limits.availability_per_property,
                     "restrictions": self.limits.restrictions_per_property,
                     "reads": self.limits.reads_per_account}[kind]
            self._windows[key] = SlidingWindow(limit, MINUTE)
        return self._windows[key]

    # -- refusals ---------------------------------------------------------------------

    def refuse(self, property_id: str, entity_id: str, refusal: Refusal | None) -> None:
        """While set, every value for this room type or rate plan is refused with
        {field: [message]}; None lifts it."""
        if refusal is None:
            self.refusals.pop((property_id, entity_id), None)
        else:
            self.refusals[(property_id, entity_id)] = refusal

    # -- writes -----------------------------------------------------------------------

    def apply_availability(self, values: list[Any], now: datetime, refuse_all: bool = False) -> Applied:
        return self._apply("availability", values, now, refuse_all, check_availability, self._hold_availability)

    def apply_restrictions(self, values: list[Any], now: datetime, refuse_all: bool = False) -> Applied:
        return self._apply("restrictions", values, now, refuse_all, check_restrictions, self._hold_restrictions)

    def _apply(self, kind: str, values: list[Any], now: datetime, refuse_all: bool,
               check: Callable[[Any, Callable[[str], Target | None]], Change[Fields] | Problems],
               hold: Callable[[Change[Fields]], None]) -> Applied:
        """Check each value, apply those that pass in order (last wins), echo the others."""
        def target_of(pid: str) -> Target | None:
            prop = self.properties.get(pid)
            if prop is None:
                return None
            entities = prop.room_types if kind == "availability" else prop.rate_plans
            occupancies = {} if kind == "availability" else {
                pid: plan.per_person.occupancies for pid, plan in prop.rate_plans.items() if plan.per_person}
            return Target(frozenset(entities), now.astimezone(ZoneInfo(prop.timezone)).date(),
                          currency_exponent(prop.currency), prop.min_stay_type, occupancies)

        warnings: list[dict[str, Any]] = []
        applied = 0
        for value in values:
            outcome = check(value, target_of)
            if isinstance(outcome, Change):
                refusal = self.refusals.get((outcome.property_id, outcome.entity_id))
                if refusal is None and refuse_all:  # a `refuse` fault armed for the property
                    refusal = Refusal(next(iter(outcome.fields)), "is refused by a fault armed in the test sandbox")
                outcome = {refusal.field: [refusal.message]} if refusal else outcome
            if not isinstance(outcome, Change):
                warnings.append(_echo(value, outcome))
                continue
            hold(outcome)
            self.stats.values += 1
            self.stats.cells += len(outcome.nights)
            applied += 1
        self.stats.refused += len(warnings)
        task_id = str(uuid.uuid4()) if applied else None
        pids = sorted({str(v["property_id"]) for v in values if isinstance(v, dict) and "property_id" in v})
        self.calls.append(Call(kind, tuple(pids), task_id, applied, len(warnings), now))
        return Applied(task_id, warnings)

    def _hold_availability(self, change: Change[AvailabilityFields]) -> None:
        grid = self._property(change.property_id).availability.setdefault(change.entity_id, {})
        for night in change.nights:
            grid[night] = change.fields["availability"]

    def _hold_restrictions(self, change: Change[RestrictionFields]) -> None:
        plan = self._property(change.property_id).restrictions.setdefault(change.entity_id, {})
        for night in change.nights:
            held = plan.setdefault(night, {})
            prices = {**held.get("rates", {}), **change.fields.get("rates", {})}  # per occupancy
            held.update(change.fields)
            if prices:
                held["rates"] = prices

    # -- reads ------------------------------------------------------------------------

    def read_availability(self, property_id: str, first: date, last: date) -> dict[str, dict[str, int]]:
        """All it holds in [first, last]: {room type: {YYYY-MM-DD: count}} (KeyError: no such property)."""
        prop = self._property(property_id)
        return {room: {d.isoformat(): n for d, n in sorted(grid.items()) if first <= d <= last}
                for room, grid in prop.availability.items()}

    def read_restrictions(self, property_id: str, first: date, last: date) -> dict[str, dict[str, PlanNight]]:
        """All fields it holds in [first, last]: {rate plan: {YYYY-MM-DD: {field: value}}},
        a per-person plan's prices as RatePlan.night shows them."""
        prop = self._property(property_id)
        found: dict[str, dict[str, PlanNight]] = {}
        for plan, grid in prop.restrictions.items():
            nights = ((d, prop.rate_plans[plan].night(held)) for d, held in sorted(grid.items()) if first <= d <= last)
            found[plan] = {d.isoformat(): shown for d, shown in nights if shown}
        return found

    def read_fields(self, property_id: str, first: date, last: date,
                    asked: list[ReadableField]) -> dict[str, dict[str, NightRead]]:
        """The restrictions read as Channex answers it: only the fields asked for, per rate
        plan and date. `availability` is the plan's room type's; `min_stay` the min stay the
        property's setting names. A field it holds nothing for is left out (the docs do not
        show one; the service reads an absent field as its neutral value). `rate` asks
        for a per-person plan's `rates` too (RatePlan.night: ours)."""
        prop = self._property(property_id)
        min_stay = MIN_STAY_FIELDS.get(prop.min_stay_type)  # None: `both`, no min_stay to answer
        found: dict[str, dict[str, NightRead]] = {}
        for plan, about in prop.rate_plans.items():
            rooms = prop.availability.get(about.room_type_id, {}) if about.room_type_id is not None else {}
            held = prop.restrictions.get(plan, {})
            days: dict[str, NightRead] = {}
            for night in sorted(d for d in set(rooms) | set(held) if first <= d <= last):
                fields = about.night(held.get(night, {}))
                shown: NightRead = {}
                for name in asked:
                    if name == "availability":
                        if night in rooms:
                            shown["availability"] = rooms[night]
                    elif name == "min_stay":
                        if min_stay is not None and min_stay in fields:
                            shown["min_stay"] = fields[min_stay]
                    elif name == "availability_offset" or name == "max_availability":
                        continue  # held by nobody here
                    elif name == "rate":
                        if "rate" in fields:
                            shown["rate"] = fields["rate"]
                        if "rates" in fields:
                            shown["rates"] = fields["rates"]
                    elif name in fields:
                        shown[name] = fields[name]
                if shown:
                    days[night.isoformat()] = shown
            if days:
                found[plan] = days
        return found


def _echo(value: Any, problems: Problems) -> dict[str, Any]:
    """A refused value as Channex's warning shows it: the value as sent, plus `warning`."""
    echoed = dict(value) if isinstance(value, dict) else {"value": value}
    echoed["warning"] = problems
    return echoed
