"""Strict bodies of the booking routes: POST /bookings and POST /bookings/{id}/cancel.

Every string has a length cap and every amount a bound (decisions.md, "PMS bookings"),
so nothing unbounded reaches the record.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, field_validator

from .ids import MAX_ID
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


class GuestIn(Strict):
    name: GuestName
    phone: Phone
    email: Email | None = None
    notes: Note | None = None

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("name cannot be blank")
        return value

    @field_validator("phone")
    @classmethod
    def _phone_has_digits(cls, value: str) -> str:
        if not re.fullmatch(r"\+?[0-9 ().\-/]+", value.strip()):
            raise ValueError("phone may hold digits, spaces, ( ) . - / and a leading +")
        if not 5 <= sum(c.isdigit() for c in value) <= 20:
            raise ValueError("phone must have 5 to 20 digits")
        return value

    @field_validator("email")
    @classmethod
    def _email_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", value):
            raise ValueError("email must look like name@domain.tld")
        return value


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

    @field_validator("checkIn", "checkOut")
    @classmethod
    def _within_the_calendar(cls, value: date) -> date:
        if not FIRST_STAY_DATE <= value <= LAST_STAY_DATE:
            raise ValueError(f"must be a date from {FIRST_STAY_DATE.isoformat()} to {LAST_STAY_DATE.isoformat()}")
        return value


class CancelIn(Strict):
    reason: CancelReason | None = None
