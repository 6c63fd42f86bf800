"""One actor per property: the key and property budgets, shared by all of the property's keys.

Later issues give it the property's writes and its inventory lock; budgets come first
because every request of the property passes here before anything is read or written.
"""

from __future__ import annotations

from dataclasses import dataclass

from datetime import datetime

from ..domain.ari_write import WritePlan
from ..domain.budgets import KEY_BUDGETS, PROPERTY_BUDGETS, Budgets, RequestKind
from ..domain.errors import ApiError
from ..domain.sliding_window import WindowState
from ..engine import Actor, Clock
from ..storage.database import Database, StorageUnavailable
from ._budget_book import BudgetBook
from .ari_writer import Answer, IdempotencyClaim, apply_write

_PROPERTY = "property"


@dataclass(frozen=True, slots=True)
class AdmitRequest:
    key_id: int
    kind: RequestKind
    bookings_per_day: int | None  # the owner's raise of property-bookings-day, read with the key


@dataclass(frozen=True, slots=True)
class Admitted:
    """The key's policies after this request, for the RateLimit headers, and the refusal if any."""

    policies: tuple[tuple[str, WindowState], ...]
    refusal: ApiError | None


@dataclass(frozen=True, slots=True)
class ChargeCells:
    cells: int


@dataclass(frozen=True, slots=True)
class ApplyWrite:
    """Charge the plan's cells, then apply it; answers the write's Answer."""

    key_id: int
    plan: WritePlan
    now: datetime
    claim: IdempotencyClaim | None


PropertyMessage = AdmitRequest | ChargeCells | ApplyWrite


class PropertyActor(Actor[PropertyMessage]):
    # A record that cannot be reached is the asker's problem to report, not a reason to
    # restart and lose the budget windows.
    replied_errors = (ApiError, StorageUnavailable)

    def __init__(self, property_id: int, budgets: Budgets, clock: Clock, db: Database) -> None:
        self.property_id = property_id
        self._db = db
        self._budgets = budgets
        self._book = BudgetBook(budgets)
        self._clock = clock

    async def handle(self, message: PropertyMessage) -> Admitted | Answer | None:
        now = self._clock.monotonic()
        match message:
            case AdmitRequest():
                return self._admit(now, message)
            case ChargeCells(cells):
                self._charge_cells(now, cells)
                return None
            case ApplyWrite(key_id, plan, wall_now, claim):
                self._charge_cells(now, plan.requested_cells)
                return await apply_write(self._db, self.property_id, key_id, plan, wall_now, claim)

    def _charge_cells(self, now: float, cells: int) -> None:
        window = self._book.window("cells", _PROPERTY)
        self._book.charge_all(now, [(window, "cells", cells)])

    def _admit(self, now: float, request: AdmitRequest) -> Admitted:
        charges = [(self._book.window(name, request.key_id), name, 1) for name in KEY_BUDGETS[request.kind]]
        for name in PROPERTY_BUDGETS[request.kind]:
            limit = None
            if name == "property-bookings-day" and request.bookings_per_day is not None:
                limit = max(self._budgets.get(name).limit, request.bookings_per_day)
            charges.append((self._book.window(name, _PROPERTY, limit), name, 1))
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
