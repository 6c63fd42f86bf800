"""Strict bodies of the booking routes: POST /bookings and POST /bookings/{id}/cancel.

Every string has a length cap and every amount a bound (docs/decisions/0030-booking-body-caps-and-stay-rules.md),
so nothing unbounded reaches the record.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, field_validator
from pydantic.json_schema import SkipJsonSchema

from .ids import MAX_ID
from .json_value import JsonObject, json_list, json_object
from .text import LINE_PATTERN, TEXT_PATTERN

# A positive amount in major units, at most two decimals and ten integer digits.
AMOUNT_PATTERN = r"^(0|[1-9][0-9]{0,9})(\.[0-9]{1,2})?$"
PAYMENT_METHODS = ("ONLINE", "CARD", "BANK_TRANSFER", "VOUCHER")
MAX_ROOMS = 10
# A stay's dates in the calendar's first or last year cannot pass the stay rules (today to
# today + 365), and date arithmetic on them overflows before those rules run (the writer
# spans a stay's nights first): refused with the body, as VALIDATION. Every date between
# gets the contract's STAY_INVALID, past or beyond the horizon.
FIRST_STAY_DATE = date(2, 1, 1)
LAST_STAY_DATE = date(9998, 12, 31)

# These strings reach e-mails, logs and the owner's screens (domain/text.py says what is refused).
_LINE = LINE_PATTERN
_LINES = TEXT_PATTERN

ExternalReference = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=64, pattern=_LINE)]
GuestName = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=200, pattern=_LINE)]
Phone = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=32, pattern=_LINE)]
Email = Annotated[str, StringConstraints(strict=True, max_length=254, pattern=_LINE)]
PaymentReference = Annotated[str, StringConstraints(strict=True, max_length=128, pattern=_LINE)]
Note = Annotated[str, StringConstraints(strict=True, max_length=2000, pattern=_LINES)]
CancelReason = Annotated[str, StringConstraints(strict=True, max_length=500, pattern=_LINES)]
Amount = Annotated[str, StringConstraints(strict=True, pattern=AMOUNT_PATTERN)]
# At most a bigint: the writer looks the room types up before the rules run.
EntityId = Annotated[StrictInt, Field(ge=1, le=MAX_ID)]


def _positive(value: str) -> str:
    if Decimal(value) <= 0:
        raise ValueError("must be greater than zero")
    return value


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _name_not_blank(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("name cannot be blank")
    return value


def _phone_shape(value: str | None) -> str | None:
    if value is None:
        return value
    if not re.fullmatch(r"\+?[0-9 ().\-/]+", value.strip()):
        raise ValueError("phone may hold digits, spaces, ( ) . - / and a leading +")
    if not 5 <= sum(c.isdigit() for c in value) <= 20:
        raise ValueError("phone must have 5 to 20 digits")
    return value


def _email_shape(value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", value):
        raise ValueError("email must look like name@domain.tld")
    return value


def _within_the_calendar(value: date | None) -> date | None:
    if value is not None and not FIRST_STAY_DATE <= value <= LAST_STAY_DATE:
        raise ValueError(f"must be a date from {FIRST_STAY_DATE.isoformat()} to {LAST_STAY_DATE.isoformat()}")
    return value


class GuestIn(Strict):
    name: GuestName
    phone: Phone
    email: Email | None = None
    notes: Note | None = None

    _name = field_validator("name")(classmethod(lambda cls, v: _name_not_blank(v)))
    _phone = field_validator("phone")(classmethod(lambda cls, v: _phone_shape(v)))
    _email = field_validator("email")(classmethod(lambda cls, v: _email_shape(v)))


class RoomIn(Strict):
    roomTypeId: EntityId
    ratePlanId: EntityId
    adults: Annotated[StrictInt, Field(ge=1, le=20)]
    children: Annotated[StrictInt, Field(ge=0, le=20)] = 0
    nightlyRate: Amount

    _rate = field_validator("nightlyRate")(classmethod(lambda cls, v: _positive(v)))


class PaymentIn(Strict):
    amount: Amount
    method: Literal["ONLINE", "CARD", "BANK_TRANSFER", "VOUCHER"]
    reference: PaymentReference | None = None

    _amount = field_validator("amount")(classmethod(lambda cls, v: _positive(v)))


class BookingIn(Strict):
    externalReference: ExternalReference
    checkIn: date
    checkOut: date
    currency: Annotated[str, StringConstraints(strict=True, pattern=r"^[A-Z]{3}$")]
    guest: GuestIn
    rooms: Annotated[list[RoomIn], Field(min_length=1, max_length=MAX_ROOMS)]
    payment: PaymentIn | None = None
    notes: Note | None = None

    @field_validator("externalReference")
    @classmethod
    def _reference_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("externalReference cannot be blank")
        return value

    _dates = field_validator("checkIn", "checkOut")(classmethod(lambda cls, v: _within_the_calendar(v)))


# PATCH /bookings/{id}: a JSON merge patch (RFC 7396) of the fields a booking may change.
# An absent field is left as it is; null removes a field that may be empty (notes,
# guest.email, guest.notes) and is refused for one that may not. The fields fixed at
# creation are named only to be refused on their own path.
UNCHANGEABLE = ("externalReference", "currency", "payment")


def _no_null_in_schema(schema: JsonObject) -> None:
    """The document shows a field that refuses null without the null its type admits."""
    options = [option for option in json_list(schema.pop("anyOf", [])) if option != {"type": "null"}]
    if len(options) == 1:
        schema.update(json_object(options[0]))
    schema.pop("default", None)


_REQUIRED = Field(default=None, json_schema_extra=_no_null_in_schema)


def _not_null(value: object) -> object:
    if value is None:
        raise ValueError("cannot be removed (null); leave it out to keep it")
    return value


def _unchangeable(value: object) -> object:
    raise ValueError("cannot be changed: cancel the booking and create another")


class GuestPatchIn(Strict):
    name: GuestName | None = _REQUIRED
    phone: Phone | None = _REQUIRED
    email: Email | None = None
    notes: Note | None = None

    _required = field_validator("name", "phone")(classmethod(lambda cls, v: _not_null(v)))
    _name = field_validator("name")(classmethod(lambda cls, v: _name_not_blank(v)))
    _phone = field_validator("phone")(classmethod(lambda cls, v: _phone_shape(v)))
    _email = field_validator("email")(classmethod(lambda cls, v: _email_shape(v)))


class RoomPatchIn(RoomIn):
    """A room as on creation; `bookingRoomId` keeps one of the booking's rooms (its id, its
    row), without it the room is a new one."""

    bookingRoomId: EntityId | None = None


class BookingPatchIn(Strict):
    checkIn: date | None = _REQUIRED
    checkOut: date | None = _REQUIRED
    guest: GuestPatchIn | None = _REQUIRED
    # The whole array: the booking's rooms become these.
    rooms: Annotated[list[RoomPatchIn], Field(min_length=1, max_length=MAX_ROOMS)] | None = _REQUIRED
    notes: Note | None = None
    externalReference: SkipJsonSchema[Any] = None
    currency: SkipJsonSchema[Any] = None
    payment: SkipJsonSchema[Any] = None

    _required = field_validator("checkIn", "checkOut", "guest", "rooms")(classmethod(lambda cls, v: _not_null(v)))
    _dates = field_validator("checkIn", "checkOut")(classmethod(lambda cls, v: _within_the_calendar(v)))
    _fixed = field_validator(*UNCHANGEABLE, mode="before")(classmethod(lambda cls, v: _unchangeable(v)))

    @field_validator("rooms")
    @classmethod
    def _kept_once(cls, value: list[RoomPatchIn] | None) -> list[RoomPatchIn] | None:
        kept = [room.bookingRoomId for room in value or () if room.bookingRoomId is not None]
        if len(kept) != len(set(kept)):
            raise ValueError("a bookingRoomId may be kept by one entry only")
        return value


class CancelIn(Strict):
    reason: CancelReason | None = None
