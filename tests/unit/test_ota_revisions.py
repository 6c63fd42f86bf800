"""OTA revisions: reading, normalising to the property's ids, what changed, and how an OTA
booking moves the inventory."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from connectapi.domain.ota_bookings import (
    CellMove, Mapping, MalformedRevision, OtaBooking, changes_between, inventory_moves, is_newer, normalise,
    parse_revision, told,
)

MAPPING = Mapping({"cm-double": 7, "cm-suite": 8}, {"cm-flex": 12}, {12: "BB"})


def raw(**overrides: Any) -> dict[str, Any]:
    revision = {
        "id": "rev-1", "booking_id": "bk-1", "property_id": "cm-prop", "unique_id": "BOO-1", "system_id": "BOO-1-1",
        "ota_reservation_code": "BOO-1", "ota_name": "BookingCom", "status": "new",
        "arrival_date": "2026-12-10", "departure_date": "2026-12-13", "amount": "300.00", "currency": "EUR",
        "customer": {"name": "Ana", "surname": "Lima", "mail": "ana@example.com", "phone": "+351 912 345 678",
                     "country": "PT"},
        "rooms": [{"room_type_id": "cm-double", "rate_plan_id": "cm-flex", "checkin_date": "2026-12-10",
                   "checkout_date": "2026-12-13", "amount": "300.00", "occupancy": {"adults": 2, "children": 1}}],
        "notes": None, "inserted_at": "2026-11-22T10:00:00+00:00",
    }
    return {**revision, **overrides}


def normal(**overrides: Any) -> OtaBooking:
    found = normalise(parse_revision(raw(**overrides)), MAPPING)
    assert isinstance(found, OtaBooking)
    return found


def test_a_revision_in_the_property_ids() -> None:
    booking = normal()
    assert (booking.check_in, booking.check_out, booking.total_minor, booking.exponent) == (
        date(2026, 12, 10), date(2026, 12, 13), 30000, 2)
    [room] = booking.rooms
    assert (room.room_type_id, room.rate_plan_id, room.meal_plan, room.adults, room.children) == (7, 12, "BB", 2, 1)
    assert room.nightly_minor == 10000
    assert (booking.guest_name, booking.guest_phone) == ("Ana Lima", "+351912345678")


def test_unmapped_ids_are_named_not_guessed() -> None:
    rooms = [{"room_type_id": "cm-nope", "rate_plan_id": "cm-gone", "amount": "1", "occupancy": {"adults": 1}}]
    found = normalise(parse_revision(raw(rooms=rooms, currency="XXX")), MAPPING)
    assert found == ["currency XXX", "rate plan cm-gone", "room type cm-nope"]


@pytest.mark.parametrize("broken", [
    {"rooms": []}, {"status": "pending"}, {"departure_date": "2026-12-10"}, {"amount": "lots"},
    {"arrival_date": None}, {"rooms": [{"occupancy": {}}]},
])
def test_an_unreadable_revision_is_refused_with_a_reason(broken: dict[str, Any]) -> None:
    with pytest.raises(MalformedRevision):
        parse_revision(raw(**broken))


def test_a_jpy_booking_and_a_fraction_of_a_cent() -> None:
    assert normal(currency="JPY", amount="12000").total_minor == 12000
    assert normal(amount="100.005").total_minor == 10001  # half up: not worth refusing a booking over


def test_changes_hold_whole_changed_fields_new_and_old() -> None:
    before = told(normal(), "PMS-1-000001", "UPCOMING")
    after = told(normal(departure_date="2026-12-14", amount="400.00"), "PMS-1-000001", "UPCOMING")
    changes, previous = changes_between(before, after)
    assert set(changes) == {"stay", "amounts"} == set(previous)
    assert (changes["stay"]["nights"], previous["stay"]["nights"]) == (4, 3)
    assert changes_between(before, before) == ({}, {})


def test_told_booking_carries_no_channel_manager_id() -> None:
    text = str(told(normal(), "PMS-1-000001", "UPCOMING"))
    assert not any(cm in text for cm in ("cm-double", "cm-flex", "cm-prop", "bk-1", "rev-1"))


def test_newer_by_time_then_by_arrival() -> None:
    at = datetime(2026, 11, 22, tzinfo=UTC)
    assert is_newer(at + timedelta(seconds=1), 1, at, 5)
    assert not is_newer(at - timedelta(seconds=1), 9, at, 5)
    assert is_newer(at, 6, at, 5) and not is_newer(at, 5, at, 5)


NIGHT = date(2026, 12, 10)


def test_a_new_booking_takes_what_there_is_and_reports_the_rest() -> None:
    wanted = Counter({(7, NIGHT): 2, (7, NIGHT + timedelta(days=1)): 2})
    moves = inventory_moves(Counter(), wanted, {(7, NIGHT): 1, (7, NIGHT + timedelta(days=1)): 5})
    assert moves == {(7, NIGHT): CellMove(-1, 1), (7, NIGHT + timedelta(days=1)): CellMove(-2, 0)}


def test_a_change_gives_back_what_it_took_and_takes_the_new_nights() -> None:
    held = Counter({(7, NIGHT): 1, (7, NIGHT + timedelta(days=1)): 1})
    wanted = Counter({(7, NIGHT + timedelta(days=1)): 1, (7, NIGHT + timedelta(days=2)): 1})
    available = {(7, NIGHT): 3, (7, NIGHT + timedelta(days=1)): 3, (7, NIGHT + timedelta(days=2)): 0}
    moves = inventory_moves(held, wanted, available)
    # The night kept is not touched; the night with no room left is short, not refused.
    assert moves == {(7, NIGHT): CellMove(1, 0), (7, NIGHT + timedelta(days=2)): CellMove(0, 1)}


def test_a_cancellation_gives_back_only_what_was_taken() -> None:
    held = Counter({(7, NIGHT): 1})  # it was short one room that night: it took only one of two
    assert inventory_moves(held, Counter(), {(7, NIGHT): 0}) == {(7, NIGHT): CellMove(1, 0)}
