"""The PropertyActor's protocol: the key and property budgets of each request."""

from __future__ import annotations

from dataclasses import dataclass

from ...domain.budgets import RequestKind
from ...domain.errors import ApiError
from ...domain.sliding_window import WindowState
from ...engine import Ask


@dataclass(frozen=True, slots=True)
class Admitted:
    """The key's policies after this request, for the RateLimit headers, and the refusal if any."""

    policies: tuple[tuple[str, WindowState], ...]
    refusal: ApiError | None


@dataclass(frozen=True, slots=True)
class AdmitRequest(Ask[Admitted]):
    key_id: int
    kind: RequestKind
    bookings_per_day: int | None  # the owner's raise of property-bookings-day, read with the key


@dataclass(frozen=True, slots=True)
class ChargeCells(Ask[None]):
    """Charge the `cells` budget; raises the 429 when it is spent."""

    cells: int


@dataclass(frozen=True, slots=True)
class ChargeBooking(Ask[None]):
    """The three booking budgets of one new booking; raises the 429 of the first one spent."""

    key_id: int
    bookings_per_day: int | None


PropertyMessage = AdmitRequest | ChargeCells | ChargeBooking
