"""What the sandbox channel manager holds and enforces, without I/O.

It keeps the grid it was sent (values applied in order, weekday masks included), counts
calls, values and cells, enforces the channel manager's budgets (per property: 10
availability calls and 10 restrictions calls a minute; per account: 10 reads a minute),
and can be told to fail its next calls (a 429, a 500, a hang, a 200 that is not JSON, a
dropped connection).
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, get_args

from ...domain.dates import WEEKDAY_CODES
from ...domain.money import currency_exponent
from ...domain.sliding_window import SlidingWindow
from .bookings import BookingFeed

MINUTE = 60.0
RESTRICTION_FIELDS = ("rate", "min_stay_arrival", "min_stay_through", "max_stay", "closed_to_arrival",
                      "closed_to_departure", "stop_sell")
# "malformed": a 200 whose body is an HTML page; "reset": the connection closed without an answer.
FaultMode = Literal["ok", "429", "500", "timeout", "malformed", "reset"]
FAULT_MODES: tuple[FaultMode, ...] = get_args(FaultMode)


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
                "throttled": self.throttled, "failed": self.failed, "overlappingCalls": self.overlapping_calls,
                "feedReads": self.feed_reads, "acks": self.acks, "acksRepeated": self.acks_repeated}


@dataclass
class Faults:
    mode: FaultMode = "ok"
    remaining: int = 0
    retry_after: int | None = None

    def take(self) -> tuple[FaultMode, int | None]:
        """The fault for the next call, if one is armed."""
        if self.mode == "ok" or self.remaining <= 0:
            return "ok", None
        self.remaining -= 1
        return self.mode, self.retry_after


@dataclass(frozen=True, slots=True)
class Throttle:
    retry_after: int


@dataclass
class Property:
    id: str
    title: str
    currency: str
    room_types: dict[str, dict[str, Any]] = field(default_factory=dict)
    rate_plans: dict[str, dict[str, Any]] = field(default_factory=dict)
    availability: dict[str, dict[date, int]] = field(default_factory=dict)
    restrictions: dict[str, dict[date, dict[str, Any]]] = field(default_factory=dict)


class SandboxState:
    def __init__(self, limits: Limits | None = None, call_seconds: float = 0.0) -> None:
        self.limits = limits or Limits()
        # How long a push takes to answer (a real channel manager is not instant): the
        # window in which another push for the same property counts as overlapping.
        self.call_seconds = call_seconds
        self.open_pushes: Counter[str] = Counter()
        self.stats = Stats()
        self.faults = Faults()
        self.properties: dict[str, Property] = {}
        self.bookings = BookingFeed()
        self._windows: dict[tuple[str, str], SlidingWindow] = {}

    # -- catalog ----------------------------------------------------------------------

    def create_property(self, title: str, currency: str) -> str:
        currency_exponent(currency)  # KeyError for a currency it does not know
        pid = str(uuid.uuid4())
        self.properties[pid] = Property(pid, title, currency)
        return pid

    def create_room_type(self, property_id: str, title: str, rooms: int) -> str:
        rid = str(uuid.uuid4())
        self._property(property_id).room_types[rid] = {"title": title, "count_of_rooms": rooms}
        return rid

    def create_rate_plan(self, property_id: str, room_type_id: str, title: str) -> str:
        prop = self._property(property_id)
        if room_type_id not in prop.room_types:
            raise KeyError(room_type_id)
        rid = str(uuid.uuid4())
        prop.rate_plans[rid] = {"title": title, "room_type_id": room_type_id}
        return rid

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

    # -- writes -----------------------------------------------------------------------

    def apply_availability(self, values: list[dict[str, Any]]) -> list[str]:
        """Apply in order; returns warnings for values dropped as invalid."""
        warnings = []
        for index, value in enumerate(values):
            try:
                prop = self._property(str(value["property_id"]))
                room = str(value["room_type_id"])
                if room not in prop.room_types:
                    raise KeyError(room)
                count = value["availability"]
                if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                    raise ValueError("availability must be a non-negative integer")
                nights = _nights(value)
            except (KeyError, ValueError, TypeError) as exc:
                warnings.append(f"values[{index}]: {exc}")
                continue
            grid = prop.availability.setdefault(room, {})
            for night in nights:
                grid[night] = count
            self.stats.values += 1
            self.stats.cells += len(nights)
        return warnings

    def apply_restrictions(self, values: list[dict[str, Any]]) -> list[str]:
        warnings = []
        for index, value in enumerate(values):
            try:
                prop = self._property(str(value["property_id"]))
                plan = str(value["rate_plan_id"])
                if plan not in prop.rate_plans:
                    raise KeyError(plan)
                fields = {name: value[name] for name in RESTRICTION_FIELDS if name in value}
                if not fields:
                    raise ValueError("a value needs at least one field besides the ids")
                if "rate" in fields:
                    fields["rate"] = _rate(fields["rate"], currency_exponent(prop.currency))
                nights = _nights(value)
            except (KeyError, ValueError, TypeError) as exc:
                warnings.append(f"values[{index}]: {exc}")
                continue
            grid = prop.restrictions.setdefault(plan, {})
            for night in nights:
                grid.setdefault(night, {}).update(fields)
            self.stats.values += 1
            self.stats.cells += len(nights)
        return warnings

    # -- reads ------------------------------------------------------------------------

    def read_availability(self, property_id: str, first: date, last: date) -> dict[str, dict[str, int]]:
        prop = self._property(property_id)
        return {room: {d.isoformat(): n for d, n in sorted(grid.items()) if first <= d <= last}
                for room, grid in prop.availability.items()}

    def read_restrictions(self, property_id: str, first: date, last: date) -> dict[str, dict[str, dict[str, Any]]]:
        prop = self._property(property_id)
        return {plan: {d.isoformat(): dict(f) for d, f in sorted(grid.items()) if first <= d <= last}
                for plan, grid in prop.restrictions.items()}


def _nights(value: dict[str, Any]) -> list[date]:
    first = date.fromisoformat(value["date_from"])
    last = date.fromisoformat(value["date_to"])
    if last < first:
        raise ValueError("date_to is before date_from")
    days = value.get("days")
    mask = set(range(7)) if days is None else {WEEKDAY_CODES.index(d) for d in days}
    return [first + timedelta(days=i) for i in range((last - first).days + 1)
            if (first + timedelta(days=i)).weekday() in mask]


def _rate(raw: Any, exponent: int) -> str:
    """Rates as the channel manager keeps them: a decimal string in major units ("200.00").

    It takes a decimal string in major units or an integer of minor units.
    """
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise ValueError("rate must be a decimal string or an integer of minor units")
    try:
        amount = Decimal(raw) if isinstance(raw, str) else Decimal(raw).scaleb(-exponent)
    except InvalidOperation:
        raise ValueError("rate must be a decimal string or an integer of minor units") from None
    if not amount.is_finite() or amount <= 0:
        raise ValueError("rate must be positive")
    return f"{amount:.{exponent}f}"
