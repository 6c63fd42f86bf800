"""The admin API's answers, typed (issue 43, item 4): the shapes the admin routes build from
the record, so mypy checks each key they write. Times are datetimes here; the envelope
writes them as ISO 8601 text (http/envelope.py).
"""

from __future__ import annotations

from datetime import datetime

from typing_extensions import NotRequired, TypedDict

from ...domain.sell_modes import ApiSellMode


class RoomTypeView(TypedDict):
    id: int
    name: str
    maxAdults: int
    maxOccupancy: int
    rooms: int


class RatePlanView(TypedDict):
    id: int
    roomTypeId: int
    name: str
    mealPlan: str
    minRate: int | None
    maxRate: int | None
    sellMode: ApiSellMode
    occupancies: list[int]


class ProductsView(TypedDict):
    channelManager: bool
    pms: bool


# A property with its catalog: created, read and changed by the admin API.
class PropertyView(TypedDict):
    id: int
    name: str
    timezone: str
    currency: str
    products: ProductsView
    pmsEntitled: bool
    status: str
    ownerEmail: str | None
    bookingsPerDay: int | None
    guestConfirmation: bool
    createdAt: datetime
    roomTypes: list[RoomTypeView]
    ratePlans: list[RatePlanView]


# An API key, never its secret (only the answers that mint one add it, once).
class KeyView(TypedDict):
    id: int
    propertyId: int  # the live property, for a test key too
    mode: str
    label: str
    prefix: str
    scopes: list[str]
    allowlist: list[str]
    createdAt: datetime
    lastUsedAt: datetime | None
    revokedAt: datetime | None


# An actor whose crash budget is spent.
class ActorDownView(TypedDict):
    actor: str
    kind: str
    reason: str
    crashes: int
    since: datetime
    degraded: str


# The processes serving: the workers of `serve --workers N`, or this one alone.
class ServingProcesses(TypedDict):
    count: int
    pids: list[int]
    answeredBy: int


class LiveActors(TypedDict):
    writer: int  # property writers running


# GET /actors (read by `connectapi status` too).
class ActorsAnswer(TypedDict):
    down: list[ActorDownView]
    live: LiveActors
    workers: ServingProcesses


# A webhook endpoint, never its secret.
class EndpointView(TypedDict):
    id: int
    propertyId: int
    mode: str
    url: str
    description: str | None
    status: str
    failingSince: datetime | None
    pausedAt: datetime | None
    createdAt: datetime


# An endpoint just registered: its secret shown this once, and the ping sent to it.
class RegisteredEndpoint(EndpointView):
    secret: str
    pingEventId: str


class HeldOccupancyRate(TypedDict):
    occupancy: int
    rateMinor: int | None


class HeldRate(TypedDict):
    """A rate plan's night in GET /properties/{id}/channel-grid: what the channel manager
    holds, as GET /rates shows the record's."""

    ratePlanId: int
    date: str
    rateMinor: int | None
    byOccupancy: NotRequired[list[HeldOccupancyRate]]
