"""Typed rows handed out of storage: callers never see asyncpg records."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import TypedDict

from ..domain import sell_modes


@dataclass(frozen=True, slots=True)
class RoomType:
    id: int
    name: str
    max_adults: int
    max_occupancy: int
    rooms: int


@dataclass(frozen=True, slots=True)
class RatePlan:
    id: int
    room_type_id: int
    name: str
    meal_plan: str
    min_rate: int | None
    max_rate: int | None
    sell_mode: str  # domain.sell_modes: per_room | per_person
    max_adults: int  # its room type's

    @property
    def occupancies(self) -> list[int]:
        """The adult counts it is priced for (domain.sell_modes.occupancies)."""
        return sell_modes.occupancies(self.sell_mode, self.max_adults)


@dataclass(frozen=True, slots=True)
class Property:
    id: int
    name: str
    timezone: str
    currency: str
    channel_manager: bool
    pms: bool
    pms_entitled: bool
    status: str
    owner_email: str | None
    bookings_per_day: int | None
    guest_confirmation: bool
    created_at: datetime
    mode: str = "live"  # `test`: the test twin of `twin_of` (docs/decisions/0115-test-mode-twins.md)
    twin_of: int | None = None

    @property
    def live_id(self) -> int:
        """The live property: where the catalog is, and what the owner and operator name."""
        return self.twin_of if self.twin_of is not None else self.id


@dataclass(frozen=True, slots=True)
class Catalog:
    room_types: tuple[RoomType, ...]
    rate_plans: tuple[RatePlan, ...]


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: int
    property_id: int  # the key's own: a test key's is its property's test twin
    label: str
    prefix: str
    scopes: tuple[str, ...]
    allowlist: tuple[str, ...]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    mode: str = "live"
    live_property_id: int | None = None  # the live property, for a test key; None: `property_id`

    @property
    def of_property(self) -> int:
        """The (live) property the owner and operator know the key by."""
        return self.live_property_id if self.live_property_id is not None else self.property_id


@dataclass(frozen=True, slots=True)
class KeyWithProperty:
    """What the front needs to authenticate a request, read in one query."""

    key: ApiKey
    digest: bytes
    property: Property


@dataclass(frozen=True, slots=True)
class BookingRoom:
    id: int
    room_type_id: int
    rate_plan_id: int | None
    meal_plan: str
    adults: int
    children: int
    nightly_minor: int
    status: str


@dataclass(frozen=True, slots=True)
class Booking:
    id: int
    property_id: int
    source: str
    reference: str
    external_reference: str | None
    status: str
    check_in: date
    check_out: date
    currency: str
    guest_name: str
    guest_phone: str
    guest_email: str | None
    total_minor: int
    paid_minor: int
    created_at: datetime
    cancelled_at: datetime | None
    channel_manager: bool  # the property's: whether channels hear of its inventory
    event_recorded: bool
    rooms: tuple[BookingRoom, ...]
    revision: int  # 1 at creation, one more per change
    modified_at: datetime  # the last change; the creation until one


@dataclass(frozen=True, slots=True)
class Notification:
    id: int
    property_id: int | None  # None: an owner's setup e-mail
    kind: str
    to_address: str
    subject: str
    body: str
    created_at: datetime
    sent_at: datetime | None
    attempts: int
    last_error: str | None


@dataclass(frozen=True, slots=True)
class PropertyLock:
    """The property as read when a write takes its row lock: what the checks need."""

    id: int
    name: str
    currency: str
    timezone: str
    owner_email: str | None
    guest_confirmation: bool
    pms: bool
    mode: str = "live"
    twin_of: int | None = None  # a test twin's live property

    @property
    def live_id(self) -> int:
        """The live property: the one the integrator and the owner know."""
        return self.twin_of if self.twin_of is not None else self.id


@dataclass(frozen=True, slots=True)
class BookingLock:
    """An API booking locked for a change of state."""

    id: int
    status: str
    check_in: date
    check_out: date
    reference: str


@dataclass(frozen=True, slots=True)
class AvailabilityNight:
    room_type_id: int
    night: date
    available: int


@dataclass(frozen=True, slots=True)
class RateNight:
    rate_plan_id: int
    night: date
    occupancy: int  # domain.sell_modes.ROOM_PRICE for a per-room plan's one price
    rate_minor: int


class RestrictionFields(TypedDict):
    """A restriction cell's fields by their API names; None: the record holds no opinion."""

    stopSell: bool | None
    closedToArrival: bool | None
    closedToDeparture: bool | None
    minStayArrival: int | None
    minStayThrough: int | None
    maxStay: int | None


@dataclass(frozen=True, slots=True)
class RestrictionNight:
    rate_plan_id: int
    night: date
    fields: RestrictionFields
