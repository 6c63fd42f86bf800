"""OTA revisions: reading, normalising to the property's ids, what changed, and how an OTA
booking moves the inventory."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from connectapi.domain.ota_bookings import (
    CellMove, Mapping, MalformedRevision, OtaBooking, changes_between, inventory_moves, is_newer, normalise,
    parse_revision, revision_key, told, without_card,
)
from tests.channex_documented import (
    BOOKING_COM_CANCELLED, BOOKING_COM_MODIFIED, BOOKING_COM_NEW, EXPEDIA_NEW, as_revision, attributes,
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


# The documented Booking.com examples' ids, mapped as a property of ours would map them.
BDC_ROOM, BDC_PLAN = "e2a15383-7843-4240-adda-736608d72eca", "785360cd-6ddb-430b-b31e-be3a2e9662a1"
BDC_MAPPING = Mapping({BDC_ROOM: 7}, {BDC_PLAN: 12}, {12: "BB"})
CARD_TEXTS = ("411111******1111", "CARDHOLDER NAME", "Expedia VirtualCard", "11/2021", "08/2025", "card_number",
              "cardholder_name", "expiration_date", "cvv", "virtual_card")


@pytest.mark.parametrize(("document", "status", "guest", "total"), [
    (BOOKING_COM_NEW, "new", "Name Surname", 15300),
    (BOOKING_COM_MODIFIED, "modified", "New Customer Name New Customer Surname", 15300),
    (BOOKING_COM_CANCELLED, "cancelled", "Name Surname", 7650),
])
def test_the_documented_booking_com_messages_as_they_are(document: dict[str, Any], status: str, guest: str,
                                                         total: int) -> None:
    revision = parse_revision(attributes(document))
    # A booking as documented: `id` is the booking's, `revision_id` the revision's.
    assert (revision.id, revision.cm_booking_id, revision.system_id) == (
        "2399140e-4673-427a-bb40-0074d917d21f", "3e029821-d446-45e9-8394-42d78a3aa1b1",
        "2399140e-4673-427a-bb40-0074d917d21f")
    assert revision.status == status and revision.reservation_code == "3333333333"
    # `inserted_at` comes without a zone: the channel manager's time is UTC.
    assert revision.revised_at == datetime(2020, 11, 12, 11, 39, 50, 111087, tzinfo=UTC)
    booking = normalise(revision, BDC_MAPPING)
    assert isinstance(booking, OtaBooking)
    assert booking.cancelled == (status == "cancelled")
    assert (booking.check_in, booking.check_out, booking.total_minor, booking.currency) == (
        date(2020, 11, 13), date(2020, 11, 15), total, "GBP")
    [room] = booking.rooms
    assert (room.room_type_id, room.rate_plan_id, room.meal_plan, room.adults, room.children) == (7, 12, "BB", 2, 0)
    assert room.nightly_minor == 7650
    # The surname is kept; "Custom Phone" holds no number.
    assert (booking.guest_name, booking.guest_email, booking.guest_phone, booking.guest_country) == (
        guest, "customer_email@guest.booking.com", None, "GB")
    assert (booking.channel, booking.reservation_code) == ("BookingCom", "3333333333")


def test_the_documented_messages_as_the_feed_hands_them_out() -> None:
    revision = parse_revision(as_revision(BOOKING_COM_MODIFIED, "rev-2", "2020-11-12T12:00:00.5", system_id="s-2"))
    assert (revision.id, revision.cm_booking_id, revision.system_id, revision.status) == (
        "rev-2", "3e029821-d446-45e9-8394-42d78a3aa1b1", "s-2", "modified")
    expedia = normalise(parse_revision(attributes(EXPEDIA_NEW)),
                        Mapping({"e2b23183-7843-4240-adda-736608d7becb": 7}, {}, {}))
    # Its rate plan is one we do not map, so it is unmapped like any other.
    assert expedia == ["rate plan b835066b-233d-4c8f-a134-f291662fa34a"]


def test_a_booking_whose_booking_id_is_its_id_is_keyed_by_its_revision_id() -> None:
    # The documented Goibibo message: a booking that repeats its id as `booking_id`.
    assert revision_key({"id": "bk", "booking_id": "bk", "revision_id": "rv", "property_id": "p"}) == (
        "rv", "rv", "p", "bk")
    assert revision_key({"id": "rv", "booking_id": "bk", "revision_id": "rv", "property_id": "p",
                         "system_id": 12331233123}) == ("rv", "12331233123", "p", "bk")
    lacking: tuple[dict[str, object], ...] = (
        {"id": None, "booking_id": "bk", "property_id": "p"}, {"id": "rv", "property_id": "p"},
        {"id": "rv", "booking_id": "bk", "property_id": ""})
    for missing in lacking:
        with pytest.raises(MalformedRevision):
            revision_key(missing)


def test_rooms_the_channel_manager_left_unmapped() -> None:
    room = attributes(BOOKING_COM_NEW)["rooms"][0]
    no_room_type = parse_revision({**attributes(BOOKING_COM_NEW), "rooms": [{**room, "room_type_id": None}]})
    assert normalise(no_room_type, BDC_MAPPING) == ["a room the channel manager has not mapped to a room type"]
    # Without a rate plan the room is still a room of a known type: applied, room only.
    no_plan = normalise(parse_revision({**attributes(BOOKING_COM_NEW), "rooms": [{**room, "rate_plan_id": None}]}),
                        BDC_MAPPING)
    assert isinstance(no_plan, OtaBooking)
    assert (no_plan.rooms[0].rate_plan_id, no_plan.rooms[0].meal_plan) == (None, "RO")
    with pytest.raises(MalformedRevision):  # the id missing altogether is not a room we can read
        parse_revision({**attributes(BOOKING_COM_NEW), "rooms": [{k: v for k, v in room.items()
                                                                  if k != "room_type_id"}]})


def test_occupancy_with_ages_and_nulls_where_the_documentation_has_them() -> None:
    room = {**attributes(BOOKING_COM_NEW)["rooms"][0], "guests": None, "meta": None,
            "occupancy": {"adults": 1, "children": 1, "infants": 0, "ages": [5]}}
    booking = normalise(parse_revision({**attributes(BOOKING_COM_NEW), "rooms": [room], "guarantee": None,
                                        "arrival_hour": "14:30", "notes": None, "ota_commission": None}),
                        BDC_MAPPING)
    assert isinstance(booking, OtaBooking)
    assert (booking.rooms[0].adults, booking.rooms[0].children) == (1, 1)


def test_no_card_data_is_left_in_a_revision() -> None:
    came = attributes(BOOKING_COM_NEW)
    came["rooms"][0]["meta"]["virtual_card_number"] = "5555444433332222"  # a card anywhere else, too
    kept = without_card(came)
    assert kept["guarantee"] == {"is_virtual": False, "card_type": "VI"}  # the brand, no cardholder data
    assert "virtual_card_number" not in kept["rooms"][0]["meta"]
    text = json.dumps(kept)
    assert not any(card in text for card in (*CARD_TEXTS, "5555444433332222"))
    assert came["guarantee"]["card_number"] == "411111******1111"  # the caller's copy is not changed
    # Everything else is as it came, the surname and the room's days included.
    assert {k: v for k, v in kept.items() if k not in ("guarantee", "rooms")} == {
        k: v for k, v in came.items() if k not in ("guarantee", "rooms")}
    assert kept["rooms"][0]["days"] == came["rooms"][0]["days"] and kept["customer"]["surname"] == "Surname"

    assert without_card(attributes(EXPEDIA_NEW))["guarantee"] == {"is_virtual": True, "card_type": "MC"}
    virtual_with_meta = {"card_number": "411111******1111", "card_type": "MC", "is_virtual": True,
                         "meta": {"virtual_card_currency_code": "EUR", "virtual_card_current_balance": "6755"}}
    assert without_card({"guarantee": virtual_with_meta}) == {"guarantee": {"is_virtual": True, "card_type": "MC"}}
    # A "brand" that is anything but a short code (a number put there) is dropped.
    for odd in ("4111111111111111", "VI 4111", "V", "x" * 21, 4111):
        assert without_card({"guarantee": {"card_type": odd}}) == {"guarantee": {}}
    assert without_card({"guarantee": None}) == {"guarantee": None}
    assert without_card({"guarantee": "4111 1111 1111 1111"}) == {"guarantee": {}}
    assert without_card({"status": "new"}) == {"status": "new"}


def test_the_told_booking_of_a_documented_message_names_no_channel_manager_id_nor_card() -> None:
    came = attributes(BOOKING_COM_NEW)
    booking = normalise(parse_revision(without_card(came)), BDC_MAPPING)
    assert isinstance(booking, OtaBooking)
    text = json.dumps(told(booking, "PMS-1-000001", "UPCOMING"))
    cm_ids = (came["id"], came["revision_id"], came["property_id"], BDC_ROOM, BDC_PLAN,
              came["rooms"][0]["booking_room_id"])
    assert not any(cm_id in text for cm_id in cm_ids)
    assert not any(card in text for card in CARD_TEXTS)
