"""Our cells as the channel manager's values, and back.

Restrictions fields with no opinion (null) go out as the channel manager's neutral
values: no stop-sell and no closure, minimum stays of 1, maximum stay 0 (no maximum).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Required, TypedDict

from .money import currency_exponent

class AvailabilityValue(TypedDict):
    """A range of one room type's count, as the channel manager's `POST /availability`
    takes it (no `days`: it refuses them there)."""

    property_id: str
    room_type_id: str
    date_from: str  # YYYY-MM-DD
    date_to: str
    availability: int


class OccupancyRateValue(TypedDict):
    """A per-person plan's price for one adult count, as a multi-occupancy value lists it."""

    occupancy: int
    rate: str  # a decimal string in major units


class RestrictionValue(TypedDict, total=False):
    """A range of one rate plan's rate and restrictions, as `POST /restrictions` takes it:
    only the fields that changed, and `days` for a weekday pattern. A per-person plan's
    prices go as `rates`, one per occupancy that changed (Channex's "Multi Occupancy Rate
    Plan update"), never as `rate`."""

    property_id: Required[str]
    rate_plan_id: Required[str]
    date_from: Required[str]
    date_to: Required[str]
    days: list[str]
    rate: str  # a decimal string in major units
    rates: list[OccupancyRateValue]
    stop_sell: bool
    closed_to_arrival: bool
    closed_to_departure: bool
    min_stay_arrival: int
    min_stay_through: int
    max_stay: int


ChannelValue = AvailabilityValue | RestrictionValue
ChannelValues = Sequence[AvailabilityValue] | Sequence[RestrictionValue]


# A restriction's value as the channel manager takes it: a closure or stop-sell, or a stay.
RestrictionSetting = bool | int

# our field -> (the channel manager's field, the value that means "no restriction")
CM_RESTRICTIONS: dict[str, tuple[str, RestrictionSetting]] = {
    "stopSell": ("stop_sell", False),
    "closedToArrival": ("closed_to_arrival", False),
    "closedToDeparture": ("closed_to_departure", False),
    "minStayArrival": ("min_stay_arrival", 1),
    "minStayThrough": ("min_stay_through", 1),
    "maxStay": ("max_stay", 0),
}


# the channel manager's field -> its "no restriction" value
NEUTRAL: dict[str, RestrictionSetting] = dict(CM_RESTRICTIONS.values())


def rate_text(rate_minor: int, currency: str) -> str:
    """Minor units as the channel manager's decimal string in major units: 12000 EUR -> "120.00"."""
    exponent = currency_exponent(currency)
    return f"{Decimal(rate_minor).scaleb(-exponent):.{exponent}f}"


def restriction_fields(fields: Mapping[str, RestrictionSetting | None]) -> dict[str, RestrictionSetting]:
    """A restriction cell's fields (our names; None: the record holds no opinion) as the
    channel manager's, every one of them."""
    return {cm: (neutral if (held := fields.get(ours)) is None else held)
            for ours, (cm, neutral) in CM_RESTRICTIONS.items()}
