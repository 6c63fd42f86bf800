"""Strict bodies of the admin routes (properties, catalog, keys)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from . import addresses, scopes
from .ids import MAX_ID, bounded_int
from .money import is_known_currency
from .sell_modes import MOST_OCCUPANCIES, ApiSellMode
from .text import EMAIL_PATTERN, LINE_PATTERN, TEXT_PATTERN

MEAL_PLANS = ("RO", "BB", "CP", "HB", "FB", "AI")
PROPERTY_STATUSES = ("active", "deleted", "demo")

Name = Annotated[str, Field(min_length=1, max_length=120, pattern=LINE_PATTERN)]
Email = Annotated[str, Field(min_length=3, max_length=254, pattern=EMAIL_PATTERN)]
MajorUnits = Annotated[StrictInt, Field(ge=1, le=10_000_000)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Products(Strict):
    channelManager: StrictBool
    pms: StrictBool


class RoomTypeIn(Strict):
    name: Name
    maxAdults: Annotated[StrictInt, Field(ge=1, le=20)]
    maxOccupancy: Annotated[StrictInt, Field(ge=1, le=30)] | None = None
    rooms: Annotated[StrictInt, Field(ge=0, le=10_000)]

    @model_validator(mode="after")
    def _occupancy_covers_adults(self) -> RoomTypeIn:
        if self.maxOccupancy is not None and self.maxOccupancy < self.maxAdults:
            raise ValueError("maxOccupancy cannot be below maxAdults")
        return self


class RatePolicy(Strict):
    minRate: MajorUnits | None = None
    maxRate: MajorUnits | None = None

    @model_validator(mode="after")
    def _ordered(self) -> RatePolicy:
        if self.minRate is not None and self.maxRate is not None and self.minRate > self.maxRate:
            raise ValueError("minRate cannot be above maxRate")
        return self


class RatePlanInProperty(RatePolicy):
    roomType: Annotated[StrictInt, Field(ge=0)]
    name: Name
    mealPlan: Literal["RO", "BB", "CP", "HB", "FB", "AI"]
    sellMode: ApiSellMode = "perRoom"  # fixed once made (domain/sell_modes.py)


class RatePlanIn(RatePolicy):
    roomTypeId: Annotated[StrictInt, Field(le=MAX_ID)]  # a bigint, or the insert is refused
    name: Name
    mealPlan: Literal["RO", "BB", "CP", "HB", "FB", "AI"]
    sellMode: ApiSellMode = "perRoom"  # fixed once made (domain/sell_modes.py)


def per_person_too_large(sell_mode: str, max_adults: int) -> str | None:
    """Why a plan sold so cannot be made on a room type for `max_adults`, if it cannot:
    Channex prices a per-person plan for at most 18 adults."""
    if sell_mode == "perPerson" and max_adults > MOST_OCCUPANCIES:
        return (f"a per-person rate plan prices 1 to {MOST_OCCUPANCIES} adults; its room type takes "
                f"{max_adults}: sell it per room")
    return None


class PropertyIn(Strict):
    name: Name
    timezone: Annotated[str, Field(min_length=1, max_length=64)]
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    products: Products
    pmsEntitled: StrictBool = False
    status: Literal["active", "deleted", "demo"] = "active"
    ownerEmail: Email | None = None
    bookingsPerDay: Annotated[StrictInt, Field(ge=1, le=1_000_000)] | None = None
    guestConfirmation: StrictBool = False
    roomTypes: Annotated[list[RoomTypeIn], Field(max_length=20)] = []
    ratePlans: Annotated[list[RatePlanInProperty], Field(max_length=200)] = []

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: "Europe" is a directory of tzdata
            raise ValueError(f"{value!r} is not a time zone name") from None
        return value

    @field_validator("currency")
    @classmethod
    def _known_currency(cls, value: str) -> str:
        if not is_known_currency(value):
            raise ValueError(f"{value!r} is not an ISO 4217 currency we sell in")
        return value

    @model_validator(mode="after")
    def _plans_name_room_types(self) -> PropertyIn:
        for plan in self.ratePlans:
            if plan.roomType >= len(self.roomTypes):
                raise ValueError(f"ratePlans roomType {plan.roomType} is not an index of roomTypes")
            too_large = per_person_too_large(plan.sellMode, self.roomTypes[plan.roomType].maxAdults)
            if too_large is not None:
                raise ValueError(too_large)
        return self


class PropertyPatch(Strict):
    name: Name | None = None
    status: Literal["active", "deleted", "demo"] | None = None
    products: Products | None = None
    pmsEntitled: StrictBool | None = None
    ownerEmail: Email | None = None
    bookingsPerDay: Annotated[StrictInt, Field(ge=1, le=1_000_000)] | None = None
    guestConfirmation: StrictBool | None = None


ChannelId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]


class ChannelMappingIn(Strict):
    """The channel manager's ids for a property's own: `{cmPropertyId, roomTypes: {id: cmId}, ratePlans: {id: cmId}}`."""

    cmPropertyId: ChannelId
    roomTypes: dict[str, ChannelId] = {}
    ratePlans: dict[str, ChannelId] = {}

    @field_validator("roomTypes", "ratePlans")
    @classmethod
    def _numeric_keys_distinct_values(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if bounded_int(key, MAX_ID) is None:
                raise ValueError(f"{key[:40]!r} is not one of our numeric ids")
        if len(set(value.values())) != len(value):
            raise ValueError("two of our ids map to the same channel-manager id")
        return value


class SandboxFaultsIn(Strict):
    """Fail the sandbox's next `count` ARI calls: `429` (with `retryAfter` when given), `500`,
    `timeout` (no answer for an hour), `malformed` (a 200 that is an HTML page), `reset` (the
    connection closed without an answer); `ok` disarms. The same modes as the sandbox's
    own `FaultMode` (a test holds them equal)."""

    mode: Literal["ok", "429", "500", "timeout", "malformed", "reset"]
    count: Annotated[StrictInt, Field(ge=0, le=10_000)] = 1
    retryAfter: Annotated[StrictInt, Field(ge=0, le=3600)] | None = None


def _check_scopes(value: list[str]) -> list[str]:
    problems = scopes.scope_problems(value)
    if problems:
        raise ValueError("; ".join(problems))
    return scopes.canonical(value)


def _check_allowlist(value: list[str]) -> list[str]:
    return addresses.normalise_allowlist(value)


class KeyIn(Strict):
    label: Annotated[str, Field(min_length=1, max_length=80, pattern=LINE_PATTERN)]
    scopes: list[str] | None = None
    allowlist: Annotated[list[str], Field(max_length=addresses.MAX_ALLOWLIST_ENTRIES)] = []
    legacy: StrictBool = False
    mode: Literal["live", "test"] = "live"  # a test key works on the property's test twin

    _scopes = field_validator("scopes")(classmethod(lambda cls, v: None if v is None else _check_scopes(v)))
    _allowlist = field_validator("allowlist")(classmethod(lambda cls, v: _check_allowlist(v)))

    @model_validator(mode="after")
    def _scopes_or_legacy(self) -> KeyIn:
        if self.legacy and self.scopes is not None:
            raise ValueError("a legacy key holds the two ari scopes; send scopes or legacy, not both")
        if not self.legacy and self.scopes is None:
            raise ValueError("scopes is required (or legacy: true)")
        return self

    def granted_scopes(self) -> list[str]:
        return list(scopes.LEGACY_SCOPES) if self.legacy else list(self.scopes or [])


class KeyPatch(Strict):
    label: Annotated[str, Field(min_length=1, max_length=80, pattern=LINE_PATTERN)] | None = None
    scopes: list[str] | None = None
    allowlist: Annotated[list[str], Field(max_length=addresses.MAX_ALLOWLIST_ENTRIES)] | None = None

    _scopes = field_validator("scopes")(classmethod(lambda cls, v: None if v is None else _check_scopes(v)))
    _allowlist = field_validator("allowlist")(classmethod(lambda cls, v: None if v is None else _check_allowlist(v)))


class WebhookEndpointIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    url: Annotated[str, Field(min_length=1, max_length=2048)]
    description: Annotated[str, Field(max_length=200, pattern=LINE_PATTERN)] | None = None
    mode: Literal["live", "test"] = "live"  # which mode's events it receives


class RedeliverIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    eventId: Annotated[str, Field(min_length=1, max_length=64)]


class RecoverIn(BaseModel):
    model_config = ConfigDict(extra="forbid")  # not strict: `since` is an ISO 8601 string in JSON

    since: AwareDatetime

    @field_validator("since")
    @classmethod
    def _an_instant_in_utc(cls, value: datetime) -> datetime:
        try:
            value.astimezone(UTC)  # 0001-01-01T00:00+01:00 has no UTC datetime; the driver would fail
        except OverflowError:
            raise ValueError("must be a date-time that is still one in UTC") from None
        return value


class OtaGuestIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: Annotated[str, Field(min_length=1, max_length=200, pattern=LINE_PATTERN)]
    surname: Annotated[str, Field(max_length=200, pattern=LINE_PATTERN)] | None = None
    email: Annotated[str, Field(max_length=254, pattern=LINE_PATTERN)] | None = None
    phone: Annotated[str, Field(max_length=32, pattern=LINE_PATTERN)] | None = None
    country: Annotated[str, Field(pattern=r"^[A-Z]{2}$")] | None = None
    language: Annotated[str, Field(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")] | None = None
    address: Annotated[str, Field(max_length=200, pattern=LINE_PATTERN)] | None = None
    city: Annotated[str, Field(max_length=100, pattern=LINE_PATTERN)] | None = None
    zip: Annotated[str, Field(max_length=20, pattern=LINE_PATTERN)] | None = None
    company: Annotated[str, Field(max_length=200, pattern=LINE_PATTERN)] | None = None
    vatNumber: Annotated[str, Field(max_length=40, pattern=LINE_PATTERN)] | None = None


OtaAmount = Annotated[str, Field(pattern=r"^[0-9]{1,10}(\.[0-9]{1,2})?$")]
ChargeName = Annotated[str, Field(min_length=1, max_length=100, pattern=LINE_PATTERN)]


class OtaChargeIn(BaseModel):
    """A tax or an extra of a simulated OTA booking, as the OTA would charge it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: ChargeName
    amount: OtaAmount
    type: Annotated[str, Field(min_length=1, max_length=60, pattern=LINE_PATTERN)] | None = None
    inclusive: bool = False  # a tax: whether the room's price includes it
    priceMode: Annotated[str, Field(min_length=1, max_length=40, pattern=LINE_PATTERN)] | None = None
    persons: Annotated[StrictInt, Field(ge=0, le=100)] | None = None
    nights: Annotated[StrictInt, Field(ge=0, le=90)] | None = None


class OtaDetailsIn(BaseModel):
    """What a simulated OTA booking may carry besides its stay (issue 42): each night's price,
    taxes, extras, payment terms, the children's ages, the arrival hour and requests."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # One per night: the room's price that night (the amount spread evenly when not given).
    nightlyAmounts: Annotated[list[OtaAmount], Field(min_length=1, max_length=90)] | None = None
    taxes: Annotated[list[OtaChargeIn], Field(max_length=10)] | None = None  # the room's (else the OTA's own)
    extras: Annotated[list[OtaChargeIn], Field(max_length=10)] | None = None  # bought on top of the room
    childrenAges: Annotated[list[Annotated[StrictInt, Field(ge=0, le=17)]], Field(max_length=20)] | None = None
    arrivalHour: Annotated[str, Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")] | None = None
    notes: Annotated[str, Field(max_length=2000, pattern=TEXT_PATTERN)] | None = None
    paymentCollect: Literal["ota", "property"] | None = None
    paymentType: Literal["credit_card", "bank_transfer"] | None = None
    virtualCard: bool | None = None
    commission: OtaAmount | None = None

    def details(self) -> dict[str, Any]:
        """The fields given, by name (a change names only what changes)."""
        return {name: getattr(self, name) for name in OtaDetailsIn.model_fields if name in self.model_fields_set}


class OtaBookingChangeIn(OtaDetailsIn):
    """A modified OTA booking (sandbox): any of the create fields."""

    roomTypeId: StrictInt | None = None
    ratePlanId: StrictInt | None = None
    checkIn: date | None = None
    checkOut: date | None = None
    adults: Annotated[StrictInt, Field(ge=1, le=20)] | None = None
    children: Annotated[StrictInt, Field(ge=0, le=20)] | None = None
    guest: OtaGuestIn | None = None
    amount: OtaAmount | None = None
    channel: Annotated[str, Field(min_length=1, max_length=40, pattern=LINE_PATTERN)] | None = None


class OtaBookingIn(OtaDetailsIn):
    """A new OTA booking the sandbox channel manager emits for a property."""

    roomTypeId: StrictInt
    ratePlanId: StrictInt
    checkIn: date
    checkOut: date
    adults: Annotated[StrictInt, Field(ge=1, le=20)]
    children: Annotated[StrictInt, Field(ge=0, le=20)] = 0
    guest: OtaGuestIn
    amount: OtaAmount
    channel: Annotated[str, Field(min_length=1, max_length=40, pattern=LINE_PATTERN)] = "BookingCom"

    @model_validator(mode="after")
    def _stay(self) -> OtaBookingIn:
        if self.checkOut <= self.checkIn:
            raise ValueError("checkOut must be after checkIn")
        return self
