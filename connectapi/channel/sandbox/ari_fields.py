"""The ARI fields the sandbox takes, holds and answers, as Channex names them
(docs.channex.io, "Availability and Rates")."""

from __future__ import annotations

from typing import Final, Literal, TypeGuard, get_args

from typing_extensions import TypedDict


class AvailabilityFields(TypedDict):
    """What an availability value sets for each of its nights."""

    availability: int  # the room type's rooms left to sell


class RestrictionFields(TypedDict, total=False):
    """What a restrictions value sets for each of its nights, and what a rate plan holds for
    a night: only the fields given (or ever given), in the order they first came.

    The same shape as channel.client.RestrictionFields, written again on purpose: the
    sandbox plays Channex against our client, and a mistake shared by both would pass
    every test."""

    rate: str  # in major units, as many decimals as the currency has ("200.00")
    min_stay_arrival: int
    min_stay_through: int
    max_stay: int
    closed_to_arrival: bool
    closed_to_departure: bool
    stop_sell: bool


class NightRead(RestrictionFields, total=False):
    """A rate plan's night as the restrictions read answers it: the fields asked for, of
    those it holds, in the order asked."""

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
