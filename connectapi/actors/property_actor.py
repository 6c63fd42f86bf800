"""One actor per property: the key and property budgets, shared by all of the property's keys.

Every request of the property passes here before anything is read or written, so this
actor never awaits I/O: it answers in microseconds whatever the property's writes are
doing (those run in its PropertyWriter).
"""

from __future__ import annotations

from ..domain.budgets import (BOOKING_KEY_BUDGETS, BOOKING_PROPERTY_BUDGETS, KEY_BUDGETS, PROPERTY_BUDGETS, Budgets,
                              RequestKind)
from ..domain.errors import ApiError
from ..domain.sliding_window import SlidingWindow, WindowState
from ..engine import Actor, Clock
from ._budget_book import BudgetBook
from .messages.property_budgets import AdmitRequest, Admitted, ChargeBooking, ChargeCells, PropertyMessage

_PROPERTY = "property"




class PropertyActor(Actor[PropertyMessage]):
    replied_errors = (ApiError,)

    def __init__(self, property_id: int, budgets: Budgets, clock: Clock) -> None:
        self.property_id = property_id
        self._budgets = budgets
        self._book = BudgetBook(budgets)
        self._clock = clock

    async def handle(self, message: PropertyMessage) -> Admitted | None:
        now = self._clock.monotonic()
        match message:
            case AdmitRequest():
                return self._admit(now, message)
            case ChargeCells(cells):
                self._charge_cells(now, cells)
                return None
            case ChargeBooking(key_id, bookings_per_day):
                self._book.charge_all(now, self._charges(key_id, BOOKING_KEY_BUDGETS, BOOKING_PROPERTY_BUDGETS,
                                                         bookings_per_day))
                return None

    def _charge_cells(self, now: float, cells: int) -> None:
        window = self._book.window("cells", _PROPERTY)
        self._book.charge_all(now, [(window, "cells", cells)])

    def _charges(self, key_id: int, key_budgets: tuple[str, ...], property_budgets: tuple[str, ...],
                 bookings_per_day: int | None) -> list[tuple[SlidingWindow, str, int]]:
        charges = [(self._book.window(name, key_id), name, 1) for name in key_budgets]
        for name in property_budgets:
            limit = None
            if name == "property-bookings-day" and bookings_per_day is not None:
                limit = max(self._budgets.get(name).limit, bookings_per_day)
            charges.append((self._book.window(name, _PROPERTY, limit), name, 1))
        return charges

    def _admit(self, now: float, request: AdmitRequest) -> Admitted:
        charges = self._charges(request.key_id, KEY_BUDGETS[request.kind], PROPERTY_BUDGETS[request.kind],
                                request.bookings_per_day)
        try:
            self._book.charge_all(now, charges)
        except ApiError as refusal:
            return Admitted(self.policies_for(request.key_id, request.kind, now), refusal)
        return Admitted(self.policies_for(request.key_id, request.kind, now), None)

    def policies_for(self, key_id: int, kind: RequestKind, now: float) -> tuple[tuple[str, WindowState], ...]:
        names = ("requests", "writes") if kind is RequestKind.WRITE else ("requests",)
        return tuple((name, self._book.state(name, key_id, now)) for name in names)

    def may_stop_when_idle(self) -> bool:
        # Budget windows live only here: stopping with events still counted would forget them.
        return self._book.is_empty(self._clock.monotonic())
