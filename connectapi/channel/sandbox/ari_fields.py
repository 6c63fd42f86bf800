"""The ARI fields the sandbox takes, holds and answers, as Channex names them
(docs.channex.io, "Availability and Rates")."""

from __future__ import annotations

from typing import Final, Literal, TypeGuard, get_args

from typing_extensions import TypedDict


class AvailabilityFields(TypedDict):
    """What an availability value sets for each of its nights."""

    availability: int  # the room type's rooms left to sell


class Restrictions(TypedDict, total=False):
    """The restrictions of a rate plan's night, held and read alike: only the fields given
    (or ever given), in the order they first came."""

    rate: str  # in major units, as many decimals as the currency has ("200.00")
    min_stay_arrival: int
    min_stay_through: int
    max_stay: int
    closed_to_arrival: bool
    closed_to_departure: bool
    stop_sell: bool


# The names of Restrictions, for a night's fields read one by one.
HeldField = Literal["rate", "min_stay_arrival", "min_stay_through", "max_stay", "closed_to_arrival",
                    "closed_to_departure", "stop_sell"]
HELD_FIELDS: tuple[HeldField, ...] = get_args(HeldField)


class RestrictionFields(Restrictions, total=False):
    """What a restrictions value sets for each of its nights, and what a rate plan holds for
    a night. A per-person plan's prices are `rates`, never `rate`."""

    # A per-person plan's prices, occupancy -> rate (as `rate`): a value's are laid over
    # what the night holds, so an occupancy a value does not name keeps its price.
    rates: dict[int, str]


class OccupancyRate(TypedDict):
    """One occupancy's price on a night, as a read answers it."""

    occupancy: int
    rate: str  # as `rate`


class PlanNight(Restrictions, total=False):
    """A rate plan's night as the reads answer it. A per-person plan's (ours: Channex
    documents no read of one) has `rate` its primary occupancy's price, absent when that
    has none, and `rates` every option's price held, by occupancy.

    The same shape as channel.client.RestrictionFields, written again on purpose: the
    sandbox plays Channex against our client, and a mistake shared by both would pass
    every test."""

    rates: list[OccupancyRate]  # sorted by occupancy; absent when the night holds no price


class NightRead(PlanNight, total=False):
    """A rate plan's night as the restrictions read answers it: the fields asked for, of
    those it holds, in the order asked (`rates` beside `rate`, which asks for both)."""

    availability: int  # its room type's
    min_stay: int  # virtual: the min stay the property's min_stay_type names


# What a restrictions read may ask for (filter[restrictions]); the last two are read-only
# and held by nobody here, so never answered.
ReadableField = Literal["availability", "rate", "min_stay_arrival", "min_stay_through", "min_stay",
                        "closed_to_arrival", "closed_to_departure", "stop_sell", "max_stay",
                        "availability_offset", "max_availability"]
READABLE_RESTRICTIONS: tuple[ReadableField, ...] = get_args(ReadableField)

# Where the virtual `min_stay` lands, by the property's min_stay_type (`both`: nowhere, refused).
MIN_STAY_FIELDS: Final[dict[str, Literal["min_stay_arrival", "min_stay_through"]]] = {
    "arrival": "min_stay_arrival", "through": "min_stay_through"}


def readable(name: str) -> TypeGuard[ReadableField]:
    return name in READABLE_RESTRICTIONS


def held_field(name: str) -> TypeGuard[HeldField]:
    return name in HELD_FIELDS
