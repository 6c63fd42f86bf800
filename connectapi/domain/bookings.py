"""A PMS booking's rules, without I/O: the checks of POST /bookings in the contract's order,
the nights it needs, the first short night, its folio, and how amounts are written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Protocol

from .ari_write import HORIZON_DAYS  # the last writable night is also the last bookable arrival
from .booking_models import BookingIn, BookingPatchIn
from .errors import ApiError
from .money import currency_exponent

MAX_NIGHTS = 90
PAYMENTS_SCOPE = "bookings:payments"
# Board basis of a rate plan, as the folio's meal line names it; RO has no meal line.
MEAL_LINES = {"BB": "Breakfast", "CP": "Continental breakfast", "HB": "Half board", "FB": "Full board",
              "AI": "All inclusive"}


class CatalogRoomType(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def max_adults(self) -> int: ...
    @property
    def max_occupancy(self) -> int: ...
    @property
    def rooms(self) -> int: ...


class CatalogRatePlan(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def room_type_id(self) -> int: ...
    @property
    def meal_plan(self) -> str: ...


@dataclass(frozen=True, slots=True)
class PlannedRoom:
    index: int
    room_type_id: int
    rate_plan_id: int
    meal_plan: str
    adults: int
    children: int
    nightly_minor: int


@dataclass(frozen=True, slots=True)
class PlannedPayment:
    amount_minor: int
    method: str
    reference: str | None


@dataclass(frozen=True, slots=True)
class PlannedBooking:
    """A booking that passed every rule; what the transaction writes."""

    external_reference: str
    check_in: date
    check_out: date
    currency: str
    exponent: int
    guest_name: str
    guest_phone: str  # normalised
    guest_email: str | None
    guest_notes: str | None
    notes: str | None
    rooms: tuple[PlannedRoom, ...]
    payment: PlannedPayment | None

    @property
    def nights(self) -> int:
        return (self.check_out - self.check_in).days

    @property
    def total_minor(self) -> int:
        return sum(room.nightly_minor for room in self.rooms) * self.nights

    def stay_nights(self) -> list[date]:
        return stay_nights_of(self.check_in, self.check_out)

    def rooms_needed(self) -> dict[int, int]:
        """Rooms asked for per room type: two rooms of one type need two on every night."""
        return dict(Counter(room.room_type_id for room in self.rooms))


def stay_nights_of(check_in: date, check_out: date) -> list[date]:
    """The nights slept: from the arrival up to, not including, the departure."""
    return [check_in + timedelta(days=i) for i in range((check_out - check_in).days)]


def normalise_phone(phone: str) -> str:
    """'+351 912-345 678' -> '+351912345678': the guest's identity within a property."""
    digits = "".join(c for c in phone if c.isdigit())
    return ("+" if phone.strip().startswith("+") else "") + digits


def to_minor(amount: str, exponent: int) -> int | None:
    """A decimal string in major units as minor units; None when the currency cannot hold it."""
    scaled = Decimal(amount).scaleb(exponent)
    if scaled != scaled.to_integral_value():
        return None
    return int(scaled)


_CENT = Decimal("0.01")


def money(minor: int, exponent: int) -> str:
    """Minor units as the contract writes amounts: a string with two decimals, a currency
    of three (KWD, BHD …) rounded half up (decision 0128), not to the even cent."""
    return format(Decimal(minor).scaleb(-exponent).quantize(_CENT, rounding=ROUND_HALF_UP), "f")


def check_stay(check_in: date, check_out: date, today: date) -> None:
    def invalid(message: str, **details: object) -> ApiError:
        return ApiError("STAY_INVALID", message, {"checkIn": check_in.isoformat(),
                                                  "checkOut": check_out.isoformat(), **details})

    if check_out <= check_in:
        raise invalid("checkOut must be after checkIn")
    if check_in < today:
        raise invalid("the arrival is in the past", today=today.isoformat())
    if check_in > today + timedelta(days=HORIZON_DAYS):
        raise invalid(f"the arrival is beyond today + {HORIZON_DAYS} days",
                      lastArrival=(today + timedelta(days=HORIZON_DAYS)).isoformat())
    if (check_out - check_in).days > MAX_NIGHTS:
        raise invalid(f"a stay is at most {MAX_NIGHTS} nights", maxNights=MAX_NIGHTS)


def plan_booking(body: BookingIn, currency: str, today: date, scopes: Iterable[str],
                 room_types: Mapping[int, CatalogRoomType], rate_plans: Mapping[int, CatalogRatePlan]
                 ) -> PlannedBooking:
    """The rules of POST /bookings after the budgets, in the contract's order; raises the first refusal."""
    if body.currency != currency:
        raise ApiError("CURRENCY_MISMATCH", f"bookings must be in {currency}",
                       {"expected": currency, "got": body.currency})
    check_stay(body.checkIn, body.checkOut, today)
    exponent = currency_exponent(currency)

    unknown_rooms = sorted({r.roomTypeId for r in body.rooms} - set(room_types))
    if unknown_rooms:
        raise ApiError("UNKNOWN_ROOM_TYPE", "room types not of this property", {"roomTypeIds": unknown_rooms})
    unknown_plans = sorted({r.ratePlanId for r in body.rooms} - set(rate_plans))
    if unknown_plans:
        raise ApiError("UNKNOWN_RATE_PLAN", "rate plans not of this property", {"ratePlanIds": unknown_plans})

    rooms = []
    for index, entry in enumerate(body.rooms):
        plan = rate_plans[entry.ratePlanId]
        if plan.room_type_id != entry.roomTypeId:
            raise ApiError("UNKNOWN_ROOM_TYPE_FOR_PLAN", "the rate plan belongs to another room type",
                           {"index": index, "roomTypeId": entry.roomTypeId, "ratePlanId": entry.ratePlanId,
                            "ratePlanRoomTypeId": plan.room_type_id})
        room_type = room_types[entry.roomTypeId]
        if entry.adults > room_type.max_adults or entry.adults + entry.children > room_type.max_occupancy:
            raise ApiError("OCCUPANCY_EXCEEDED", "more guests than the room type takes",
                           {"index": index, "roomTypeId": entry.roomTypeId, "maxAdults": room_type.max_adults,
                            "maxOccupancy": room_type.max_occupancy})
        nightly = to_minor(entry.nightlyRate, exponent)
        if nightly is None:
            raise ApiError("VALIDATION", "request does not match the schema", [
                {"path": f"rooms[{index}].nightlyRate", "message": f"{currency} has no minor unit that small"}])
        rooms.append(PlannedRoom(index, entry.roomTypeId, entry.ratePlanId, plan.meal_plan, entry.adults,
                                 entry.children, nightly))

    payment = None
    if body.payment is not None:
        if PAYMENTS_SCOPE not in scopes:
            raise ApiError("PAYMENT_NOT_ALLOWED", f"recording a payment needs the {PAYMENTS_SCOPE} scope",
                           {"needed": PAYMENTS_SCOPE})
        amount = to_minor(body.payment.amount, exponent)
        if amount is None:
            raise ApiError("VALIDATION", "request does not match the schema", [
                {"path": "payment.amount", "message": f"{currency} has no minor unit that small"}])
        payment = PlannedPayment(amount, body.payment.method, body.payment.reference)

    planned = _planned(body, currency, rooms, payment)
    if payment is not None:
        check_paid(payment.amount_minor, planned.total_minor, exponent)
    return planned


def plan_guest_change(body: BookingIn, currency: str, booked: Iterable[PlannedRoom]) -> PlannedBooking:
    """A change of the guest or the notes alone: the stay stands as booked (its rooms, rates
    and meal plans as the record holds them), so none of its rules is asked again. A catalog
    changed since the booking was made (a rate plan withdrawn, an occupancy lowered) or a
    check-in day come must not refuse a guest's name corrected."""
    return _planned(body, currency, booked, None)


def _planned(body: BookingIn, currency: str, rooms: Iterable[PlannedRoom],
             payment: PlannedPayment | None) -> PlannedBooking:
    return PlannedBooking(
        external_reference=body.externalReference, check_in=body.checkIn, check_out=body.checkOut,
        currency=currency, exponent=currency_exponent(currency), guest_name=body.guest.name.strip(),
        guest_phone=normalise_phone(body.guest.phone), guest_email=body.guest.email,
        guest_notes=body.guest.notes, notes=body.notes, rooms=tuple(rooms), payment=payment)


def check_paid(paid_minor: int, total_minor: int, exponent: int) -> None:
    """What was paid (on creation, or before a change) is never above the stay's total."""
    if paid_minor > total_minor:
        raise ApiError("PAYMENT_EXCEEDS_TOTAL", "the payment is more than the stay's total",
                       {"amount": money(paid_minor, exponent), "total": money(total_minor, exponent)})


def patched(current: BookingIn, patch: BookingPatchIn) -> BookingIn:
    """A booking as creation would have been asked for it, with a merge patch applied: the
    fields sent replace the booking's (the guest's are merged one by one, the rooms are the
    whole array). The result passes through the rules of creation as it is."""
    given = patch.model_fields_set
    changes: dict[str, object] = {name: getattr(patch, name) for name in ("checkIn", "checkOut", "rooms", "notes")
                                  if name in given}
    if patch.guest is not None:
        changes["guest"] = current.guest.model_copy(update={
            name: getattr(patch.guest, name) for name in patch.guest.model_fields_set})
    return current.model_copy(update=changes)


def booking_summary(b: BookingIn, room_ids: Sequence[int | None], exponent: int) -> dict[str, Any]:
    """What a change compares and the activity log keeps, before and after: the stay, the
    rooms (with the booking room each keeps; None for a new one), the guest and the notes.
    Rates are compared as amounts ("120.5" is "120.50")."""
    return {
        "checkIn": b.checkIn.isoformat(), "checkOut": b.checkOut.isoformat(),
        "rooms": [{"bookingRoomId": room_id, "roomTypeId": r.roomTypeId, "ratePlanId": r.ratePlanId,
                   "adults": r.adults, "children": r.children,
                   "nightlyRate": money(to_minor(r.nightlyRate, exponent) or 0, exponent)}
                  for room_id, r in zip(room_ids, b.rooms, strict=True)],
        # The name as it is kept (trimmed): spaces around it change nothing.
        "guest": {"name": b.guest.name.strip(), "phone": b.guest.phone, "email": b.guest.email,
                  "notes": b.guest.notes},
        "notes": b.notes,
    }


def rooms_per_night(room_type_ids: Iterable[int], nights: list[date]) -> Counter[tuple[int, date]]:
    """Rooms a stay holds per (room type, night): one entry per room."""
    return Counter((room_type_id, night) for room_type_id in room_type_ids for night in nights)


@dataclass(frozen=True, slots=True)
class ShortNight:
    room_type_id: int
    night: date
    available: int
    requested: int

    def details(self) -> dict[str, object]:
        return {"roomTypeId": self.room_type_id, "date": self.night.isoformat(), "available": self.available,
                "requested": self.requested}


def first_short_night(needed: Mapping[int, int], nights: list[date], held: Mapping[tuple[int, date], int],
                      room_types: Mapping[int, CatalogRoomType]) -> ShortNight | None:
    """The earliest night (then lowest room type) without enough rooms for a stay that needs
    `needed` rooms of each type on every night."""
    return first_short_cell({(room_type_id, night): count for room_type_id, count in needed.items()
                             for night in nights}, held, room_types)


def first_short_cell(needed: Mapping[tuple[int, date], int], held: Mapping[tuple[int, date], int],
                     room_types: Mapping[int, CatalogRoomType]) -> ShortNight | None:
    """The earliest night (then lowest room type) with fewer rooms than `needed` there.

    A night the record holds no count for counts as the room type's full `rooms`: the
    record starts every night at that and nothing has been sold or closed there.
    """
    for (room_type_id, night) in sorted(needed, key=lambda cell: (cell[1], cell[0])):
        wanted = needed[room_type_id, night]
        if wanted <= 0:
            continue
        available = held.get((room_type_id, night), room_types[room_type_id].rooms)
        if available < wanted:
            return ShortNight(room_type_id, night, available, wanted)
    return None


@dataclass(frozen=True, slots=True)
class FolioLine:
    room_index: int | None  # the booking room it belongs to; None for the payment
    kind: str  # ROOM, MEAL, PAYMENT
    night: date | None
    description: str
    amount_minor: int


def folio(booking: PlannedBooking, room_types: Mapping[int, CatalogRoomType]) -> list[FolioLine]:
    """A room charge per night per room, the board basis per night per room (included in the
    rate, so amount 0), then the payment if any."""
    lines = []
    for room in booking.rooms:
        for night in booking.stay_nights():
            lines.append(FolioLine(room.index, "ROOM", night, f"Room: {room_types[room.room_type_id].name}",
                                   room.nightly_minor))
            meal = MEAL_LINES.get(room.meal_plan)
            if meal is not None:
                lines.append(FolioLine(room.index, "MEAL", night, f"{meal} (included in the rate)", 0))
    if booking.payment is not None:
        lines.append(FolioLine(None, "PAYMENT", None, f"Payment ({booking.payment.method})",
                               booking.payment.amount_minor))
    return lines
