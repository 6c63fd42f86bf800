"""The bodies of the test helpers (test keys only): what an integrator sends to make the
test record do what the field would (docs/decisions/0115-test-mode-twins.md)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from .admin_models import OtaAmount, OtaBookingIn, OtaDetailsIn, OtaGuestIn
from .text import LINE_PATTERN

# What a simulated OTA booking costs a night when the integrator names no amount.
DEFAULT_NIGHTLY_AMOUNT = Decimal("100.00")


class TestOtaBookingIn(OtaDetailsIn):
    """An OTA booking for the test sandbox to emit, in our ids."""

    roomTypeId: StrictInt
    ratePlanId: StrictInt
    checkIn: date
    checkOut: date
    guest: OtaGuestIn
    channel: Annotated[str, Field(min_length=1, max_length=40, pattern=LINE_PATTERN)] = "BookingCom"
    adults: Annotated[StrictInt, Field(ge=1, le=20)] = 2
    children: Annotated[StrictInt, Field(ge=0, le=20)] = 0
    amount: OtaAmount | None = None  # the rooms' price; default 100.00 a night

    @model_validator(mode="after")
    def _stay(self) -> TestOtaBookingIn:
        if self.checkOut <= self.checkIn:
            raise ValueError("checkOut must be after checkIn")
        return self

    def as_ota_booking(self) -> OtaBookingIn:
        nights = (self.checkOut - self.checkIn).days
        amount = self.amount if self.amount is not None else f"{DEFAULT_NIGHTLY_AMOUNT * nights:.2f}"
        return OtaBookingIn(roomTypeId=self.roomTypeId, ratePlanId=self.ratePlanId, checkIn=self.checkIn,
                            checkOut=self.checkOut, adults=self.adults, children=self.children, guest=self.guest,
                            amount=amount, channel=self.channel, **self.details())


class TestFaultsIn(BaseModel):
    """Faults the test sandbox answers this test record's next ARI calls with: `429`, `500`,
    `timeout` (no answer), or `refuse` (each value refused with a warning in a 200); `ok`
    disarms what is armed."""

    model_config = ConfigDict(extra="forbid", strict=True)

    mode: Literal["ok", "429", "500", "timeout", "refuse"]
    count: Annotated[StrictInt, Field(ge=1, le=100)] = 1
