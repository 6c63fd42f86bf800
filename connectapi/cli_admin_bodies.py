"""The bodies `connectapi admin` and `connectapi seed` send, typed (issue 43, item 4): the
admin API validates them (domain/admin_models.py, domain/owners.py); these let mypy check
that the command line builds them with the names those models take.

A body read from a file (`--file`) is sent as it is, unchecked here: the API says what is
wrong with it.
"""

from __future__ import annotations

from typing_extensions import NotRequired, TypedDict


# POST /properties/{id}/keys (KeyIn): scopes, or legacy for a pre-scopes key.
class KeyCreateBody(TypedDict):
    label: str
    scopes: NotRequired[list[str]]
    allowlist: NotRequired[list[str]]
    legacy: NotRequired[bool]
    mode: NotRequired[str]  # live or test


# PATCH /keys/{id} (KeyPatch): only what is sent changes.
class KeyUpdateBody(TypedDict, total=False):
    label: str
    scopes: list[str]
    allowlist: list[str]


# POST /owners (OwnerIn).
class OwnerCreateBody(TypedDict):
    email: str
    name: str
    propertyIds: list[int]


# PATCH /owners/{id} (OwnerChange): only what is sent changes; propertyIds replaces the list.
class OwnerUpdateBody(TypedDict, total=False):
    name: str
    propertyIds: list[int]
    disabled: bool


class ProductsBody(TypedDict):
    channelManager: bool
    pms: bool


class RoomTypeBody(TypedDict):
    name: str
    maxAdults: int
    maxOccupancy: NotRequired[int]
    rooms: int


class RatePlanBody(TypedDict):
    roomType: int  # the index of its room type in the property's roomTypes
    name: str
    mealPlan: str
    minRate: NotRequired[int]  # major units
    maxRate: NotRequired[int]
    sellMode: NotRequired[str]  # perRoom (the default) or perPerson: fixed once made


# POST /properties (PropertyIn), as `connectapi seed` sends its sample.
class PropertyBody(TypedDict):
    name: str
    timezone: str
    currency: str
    products: ProductsBody
    pmsEntitled: NotRequired[bool]
    status: NotRequired[str]  # active, deleted or demo
    ownerEmail: NotRequired[str]
    bookingsPerDay: NotRequired[int]
    guestConfirmation: NotRequired[bool]
    roomTypes: NotRequired[list[RoomTypeBody]]
    ratePlans: NotRequired[list[RatePlanBody]]
