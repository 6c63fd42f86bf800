"""The pure rules of a PMS booking."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, timedelta

import pytest

from connectapi.domain.booking_models import BookingIn
from connectapi.domain.bookings import (
    PlannedPayment,
    check_stay,
    first_short_night,
    folio,
    money,
    normalise_phone,
    plan_booking,
    plan_guest_change,
    stay_nights_of,
    to_minor,
)
from connectapi.domain.errors import ApiError

TODAY = date(2026, 11, 22)


@dataclass(frozen=True)
class Room:
    id: int
    name: str
    max_adults: int
    max_occupancy: int
    rooms: int


@dataclass(frozen=True)
class Plan:
    id: int
    room_type_id: int
    meal_plan: str


ROOMS = {1: Room(1, "Double", 2, 3, 8), 2: Room(2, "Suite", 4, 4, 2)}
PLANS = {10: Plan(10, 1, "CP"), 20: Plan(20, 2, "RO")}


def body(**changes: object) -> BookingIn:
    raw: dict[str, object] = {"externalReference": "WEB-1", "checkIn": "2026-12-01", "checkOut": "2026-12-03", "currency": "EUR",
           "guest": {"name": "Ana", "phone": "+351 912 345 678"},
           "rooms": [{"roomTypeId": 1, "ratePlanId": 10, "adults": 2, "nightlyRate": "100.25"},
                     {"roomTypeId": 2, "ratePlanId": 20, "adults": 3, "children": 1, "nightlyRate": "200"}]}
    raw.update(changes)
    return BookingIn.model_validate_json(json.dumps(raw))  # as the route reads it: JSON mode


def test_phone_normalisation() -> None:
    assert normalise_phone("+351 912-345 678") == "+351912345678"
    assert normalise_phone("(021) 555.0101") == "0215550101"


@pytest.mark.parametrize(("amount", "exponent", "minor"), [
    ("120.50", 2, 12050), ("120", 0, 120), ("120.5", 0, None), ("1.25", 3, 1250), ("0.01", 2, 1)])
def test_amounts_in_minor_units(amount: str, exponent: int, minor: int | None) -> None:
    assert to_minor(amount, exponent) == minor


def test_amounts_are_written_with_two_decimals() -> None:
    assert (money(12050, 2), money(1500, 0), money(1250, 3)) == ("120.50", "1500.00", "1.25")


@pytest.mark.parametrize(("check_in", "nights", "ok"), [
    (TODAY, 1, True), (TODAY - timedelta(days=1), 1, False), (TODAY + timedelta(days=365), 1, True),
    (TODAY + timedelta(days=366), 1, False), (TODAY, 90, True), (TODAY, 91, False), (TODAY, 0, False)])
def test_stay_bounds(check_in: date, nights: int, ok: bool) -> None:
    if ok:
        check_stay(check_in, check_in + timedelta(days=nights), TODAY)
    else:
        with pytest.raises(ApiError) as refused:
            check_stay(check_in, check_in + timedelta(days=nights), TODAY)
        assert refused.value.code == "STAY_INVALID"


def test_a_past_arrival_names_today() -> None:
    with pytest.raises(ApiError) as refused:
        check_stay(TODAY - timedelta(days=1), TODAY + timedelta(days=1), TODAY)
    assert isinstance(refused.value.details, dict) and refused.value.details["today"] == "2026-11-22"


def test_a_plan_totals_the_nights_of_every_room() -> None:
    planned = plan_booking(body(), "EUR", TODAY, ["bookings:write"], ROOMS, PLANS)
    assert planned.nights == 2 and planned.total_minor == (10025 + 20000) * 2
    assert planned.guest_phone == "+351912345678"
    assert planned.rooms_needed() == {1: 1, 2: 1}
    assert [r.meal_plan for r in planned.rooms] == ["CP", "RO"]


def test_a_guest_change_keeps_the_stay_as_booked_and_asks_no_rule_of_it() -> None:
    booked = plan_booking(body(), "EUR", TODAY, ["bookings:write"], ROOMS, PLANS)
    later = TODAY + timedelta(days=20)  # the arrival has passed, and the catalog is gone
    renamed = plan_guest_change(body(guest={"name": " Ana Lima ", "phone": "+351 913 000 000"}), "EUR",
                                booked.rooms)
    assert (renamed.rooms, renamed.total_minor) == (booked.rooms, booked.total_minor)
    assert (renamed.guest_name, renamed.guest_phone) == ("Ana Lima", "+351913000000")
    with pytest.raises(ApiError):
        plan_booking(body(), "EUR", later, ["bookings:write"], {}, {})


def test_the_first_refusal_in_the_contract_s_order_wins() -> None:
    # wrong currency and a past stay and an unknown room: the currency is named
    bad = body(currency="USD", checkIn="2026-11-01", checkOut="2026-11-02",
               rooms=[{"roomTypeId": 99, "ratePlanId": 10, "adults": 9, "nightlyRate": "1"}])
    with pytest.raises(ApiError) as refused:
        plan_booking(bad, "EUR", TODAY, [], ROOMS, PLANS)
    assert refused.value.code == "CURRENCY_MISMATCH"


def test_payments_need_the_scope_and_fit_the_total() -> None:
    paid = body(payment={"amount": "600.50", "method": "CARD"})
    with pytest.raises(ApiError) as refused:
        plan_booking(paid, "EUR", TODAY, ["bookings:write"], ROOMS, PLANS)
    assert refused.value.code == "PAYMENT_NOT_ALLOWED"
    assert plan_booking(paid, "EUR", TODAY, ["bookings:payments"], ROOMS, PLANS).payment == PlannedPayment(
        60050, "CARD", None)
    over = body(payment={"amount": "600.51", "method": "CARD"})
    with pytest.raises(ApiError) as refused:
        plan_booking(over, "EUR", TODAY, ["bookings:payments"], ROOMS, PLANS)
    assert refused.value.details == {"amount": "600.51", "total": "600.50"}


def test_the_first_short_night_is_the_earliest_then_the_lowest_room_type() -> None:
    nights = stay_nights_of(date(2026, 12, 1), date(2026, 12, 4))
    held = {(1, date(2026, 12, 3)): 0, (2, date(2026, 12, 2)): 1}
    short = first_short_night({1: 1, 2: 2}, nights, held, ROOMS)
    assert short is not None and short.details() == {"roomTypeId": 2, "date": "2026-12-02", "available": 1,
                                                     "requested": 2}
    assert first_short_night({1: 8}, nights, {}, ROOMS) is None  # no cell: the room type's full count


def test_the_folio_charges_each_night_of_each_room() -> None:
    planned = plan_booking(body(payment={"amount": "10", "method": "ONLINE"}), "EUR", TODAY, ["bookings:payments"],
                           ROOMS, PLANS)
    lines = folio(planned, ROOMS)
    assert [(line.kind, line.room_index, line.amount_minor) for line in lines] == [
        ("ROOM", 0, 10025), ("MEAL", 0, 0), ("ROOM", 0, 10025), ("MEAL", 0, 0),
        ("ROOM", 1, 20000), ("ROOM", 1, 20000), ("PAYMENT", None, 1000)]
    assert sum(line.amount_minor for line in lines if line.kind != "PAYMENT") == planned.total_minor
