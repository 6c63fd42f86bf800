"""Strict bodies of the three ARI writes: `{updates: [...]}` with the spec's entry fields."""

from __future__ import annotations

from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

from .sell_modes import MOST_OCCUPANCIES

MAX_MAJOR_RATE = 10_000_000
Weekday = Literal["mo", "tu", "we", "th", "fr", "sa", "su"]
StayNights = Annotated[StrictInt, Field(ge=1, le=365)]
EntityId = Annotated[StrictInt, Field(ge=1)]
Occupancy = Annotated[StrictInt, Field(ge=1, le=MOST_OCCUPANCIES)]


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    dateFrom: date
    dateTo: date


def _check_days(value: list[str] | None) -> list[str] | None:
    if value is None:
        return None
    if not value:
        raise ValueError("days cannot be empty; leave it out for every day")
    if len(set(value)) != len(value):
        raise ValueError("days repeat")
    return value


class AvailabilityEntry(Entry):
    roomTypeId: EntityId
    available: Annotated[StrictInt, Field(ge=0, le=100_000)]


class RateEntry(Entry):
    ratePlanId: EntityId
    days: list[Weekday] | None = None
    # Checked against the plan's sell mode by ari_write.check_write.
    occupancy: Annotated[Occupancy | None, Field(description=(
        "the adult count this price is for: required for a rate plan sold per person (one of its "
        "`occupancies` in GET /catalog), refused for one sold per room; VALIDATION at "
        "`updates[i].occupancy` otherwise. Each occupancy of a night is a cell of its own: it is counted "
        "for the budgets, and last write wins and no-ops apply, occupancy by occupancy"))] = None
    rate: Any
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]

    _days = field_validator("days")(classmethod(lambda cls, v: _check_days(v)))

    @field_validator("rate", mode="before")
    @classmethod
    def _whole_major_units(cls, value: Any) -> int:
        """A decimal string or a number in major units, positive and whole: "120.00", 120."""
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError("rate must be a decimal string or a number")
        try:
            amount = Decimal(value.strip()) if isinstance(value, str) else Decimal(str(value))
        except InvalidOperation:
            raise ValueError("rate must be a decimal string or a number") from None
        # ASCII digits only: isdigit() and Decimal() also take "١٢٠" and "１２０".
        if isinstance(value, str) and not (value.isascii() and value.strip().replace(".", "", 1).isdigit()):
            raise ValueError("rate must be written as digits with an optional decimal point")
        if not amount.is_finite() or amount <= 0:
            raise ValueError("rate must be positive")
        if amount != amount.to_integral_value():
            raise ValueError("rate must be whole major units (rates are stored without fractions)")
        if amount > MAX_MAJOR_RATE:
            raise ValueError(f"rate cannot exceed {MAX_MAJOR_RATE}")
        return int(amount)


RESTRICTION_FIELDS: tuple[str, ...] = (
    "stopSell", "closedToArrival", "closedToDeparture", "minStayArrival", "minStayThrough", "maxStay",
)


class RestrictionEntry(Entry):
    ratePlanId: EntityId
    days: list[Weekday] | None = None
    stopSell: StrictBool | None = None
    closedToArrival: StrictBool | None = None
    closedToDeparture: StrictBool | None = None
    minStayArrival: StayNights | None = None
    minStayThrough: StayNights | None = None
    maxStay: StayNights | None = None

    _days = field_validator("days")(classmethod(lambda cls, v: _check_days(v)))

    @field_validator("stopSell", "closedToArrival", "closedToDeparture", mode="before")
    @classmethod
    def _flags_are_not_cleared(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("a flag is true or false; null clears only the stay lengths")
        return value

    @model_validator(mode="after")
    def _names_a_field(self) -> RestrictionEntry:
        if not self.sent_fields():
            raise ValueError(f"an entry must name at least one of {list(RESTRICTION_FIELDS)}")
        return self

    def sent_fields(self) -> dict[str, bool | int | None]:
        """The restriction fields this entry sets (null clears a stay length)."""
        return {name: getattr(self, name) for name in RESTRICTION_FIELDS if name in self.model_fields_set}


class AvailabilityBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    updates: list[AvailabilityEntry]


class RatesBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    updates: list[RateEntry]


class RestrictionsBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    updates: list[RestrictionEntry]
