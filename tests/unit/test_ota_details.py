"""What an OTA booking carries beyond its stay (issue 42), read from a revision: told as sent,
never made to add up, a detail that cannot be told dropped (never the booking refused), no
card number in any free text, and a booking told before these members compared fairly."""

from __future__ import annotations

import copy
from typing import Any

from connectapi.domain.bookings import money
from connectapi.domain.ota_bookings import OtaBooking, changes_between, in_currency_of, normalise, parse_revision, told
from connectapi.domain.text import without_card_numbers

from .test_ota_revisions import MAPPING, raw

NIGHTS = {"2026-12-10": "100.00", "2026-12-11": "100.00", "2026-12-12": "100.00"}


def booking(**overrides: Any) -> OtaBooking:
    revision = raw(**{k: v for k, v in overrides.items() if k != "room"})
    revision["rooms"][0] = {**revision["rooms"][0], "days": dict(NIGHTS), **overrides.get("room", {})}
    found = normalise(parse_revision(revision), MAPPING)
    assert isinstance(found, OtaBooking)
    return found


def test_the_amounts_add_up_any_documented_way_and_are_named_when_they_do_not() -> None:
    assert booking().disagreements == ()
    # The room's extras within its amount, or beside it; a tax not included within the total.
    breakfast = [{"name": "Breakfast", "total_price": "30.00"}]
    assert booking(amount="330.00", room={"amount": "330.00", "services": breakfast}).disagreements == ()
    assert booking(amount="330.00", room={"services": breakfast}).disagreements == ()
    city_tax = [{"name": "City tax", "type": "city_tax", "is_inclusive": False, "total_price": "6.00"}]
    assert booking(amount="306.00", room={"taxes": city_tax}).disagreements == ()
    assert booking(amount="300.00", room={"taxes": city_tax}).disagreements == ()
    assert booking(room={"days": {**NIGHTS, "2026-12-12": "90.00"}}).disagreements == (
        "the nights of room 1 add up to 290.00 EUR, its amount is 300.00 EUR",)
    assert booking(amount="310.00").disagreements == (
        "the rooms and extras add up to 300.00 EUR, the total is 310.00 EUR",)
    # A cancellation's total is the fee the guest still owes.
    assert booking(amount="100.00", status="cancelled").disagreements == ()


def test_amounts_are_told_in_the_currencys_places_and_a_rounding_is_said() -> None:
    yen = booking(currency="JPY", amount="30001", room={"amount": "30001", "days": {
        "2026-12-10": "10000.5", "2026-12-11": "10000.5", "2026-12-12": "10000"}})
    room = told(yen, "PMS-1-000001", "UPCOMING")["rooms"][0]
    assert [n["amount"] for n in room["nights"]] == ["10001.00", "10001.00", "10000.00"]
    # What the receiver adds up is what was checked: the nights as told are 30002.
    assert yen.disagreements == ("the nights of room 1 add up to 30002 JPY, its amount is 30001 JPY",)
    assert "amounts with more decimals than the 0 told: rounded half up" in yen.cut
    assert booking().cut == ()


def test_a_three_decimal_currency_is_told_rounded_half_up() -> None:
    # An outside review: 100.125 KWD was told as 100.12 (to the even cent), not 100.13.
    dinar = booking(currency="KWD", amount="300.125", ota_commission="0.125", room={
        "amount": "300.125", "days": {"2026-12-10": "100.125", "2026-12-11": "100.000", "2026-12-12": "100.000"}})
    said = told(dinar, "PMS-1-000001", "UPCOMING")
    room = said["rooms"][0]
    assert (said["amounts"]["total"], room["amount"], said["amounts"]["commission"]) == ("300.13", "300.13", "0.13")
    assert [n["amount"] for n in room["nights"]] == ["100.13", "100.00", "100.00"]
    assert "amounts with more decimals than the 2 told: rounded half up" in dinar.cut


def test_a_booking_in_another_currency_than_the_propertys_is_said() -> None:
    dollars = booking(currency="USD")
    assert in_currency_of(dollars, "EUR").disagreements == ("its amounts are in USD, the property's currency is EUR",)
    assert in_currency_of(booking(), "EUR ").disagreements == ()  # as the record pads it
    assert in_currency_of(dollars, "USD") is dollars


def test_money_is_two_decimals_rounded_half_up() -> None:
    assert [money(m, 3) for m in (100125, 100115, 125, 5, 4, 0, -125)] == [
        "100.13", "100.12", "0.13", "0.01", "0.00", "0.00", "-0.13"]
    assert [money(m, 2) for m in (12345, 5, -5, 10**15)] == ["123.45", "0.05", "-0.05", "10000000000000.00"]
    assert [money(m, 0) for m in (1200, 0)] == ["1200.00", "0.00"]


def test_a_detail_that_cannot_be_told_is_dropped_and_the_booking_kept() -> None:
    odd = booking(room={"taxes": [{"name": "VAT", "total_price": None}, {"name": "Fee", "total_price": "76,50"},
                                  {"name": "Ok", "total_price": "5.00"}, "not an object"],
                        "services": [{"name": "Discount", "total_price": "-10.00"}],
                        "days": {**NIGHTS, "2026-12-20": "50.00", "20261210": "100.00", "x": "1"}},
                  services=[{"name": f"s{i}", "total_price": "1.00"} for i in range(60)], taxes={},
                  ota_commission="NaN")
    room = odd.rooms[0].details
    assert [t.name for t in room.taxes] == ["Ok"] and room.services == ()
    assert [night.isoformat() for night, _ in room.days] == list(NIGHTS)
    assert len(odd.details.services) == 50 and odd.details.taxes == () and odd.details.commission is None
    said = "; ".join(odd.cut)
    for drop in ("rooms[0].taxes[0].total_price dropped", "rooms[0].taxes[1].total_price dropped",
                 "rooms[0].taxes[3] dropped", "rooms[0].services[0].total_price dropped",
                 "a night dropped (not a night of the stay, or given twice)",
                 "services beyond the first 50 dropped (60 in all)", "taxes dropped (not a list)",
                 "ota_commission dropped"):
        assert drop in said, drop


def test_no_card_number_is_told_from_the_free_text_and_no_brand_but_a_brand() -> None:
    card = "4111 1111 1111 1111"
    found = booking(notes=f"Charge card {card} exp 11/27, call +351 912 345 678",
                    customer={"name": "Ana", "address": f"Rua {card}", "company": {"title": "Lda",
                                                                                   "number": "4111111111111111"}},
                    guarantee={"card_type": "JOHNSMITH", "is_virtual": False})
    text = str(told(found, "PMS-1-000001", "UPCOMING"))
    assert "4111" not in text and "[card number removed]" in text and "+351 912 345 678" in text
    assert found.details.guarantee is not None and found.details.guarantee.card_type is None
    assert booking(guarantee={"card_type": "visa"}).details.guarantee.card_type == "VISA"  # type: ignore[union-attr]
    assert without_card_numbers("order 1234567890123 and vat PT123456789")[1] == 0  # no Luhn, no card


def test_invisible_characters_are_taken_out_of_the_guests_requests_and_lines_kept() -> None:
    notes = booking(notes="A quiet\u200b room,\ufeff please.\nAnd a cot.").details.notes
    assert notes == "A quiet room, please.\nAnd a cot."


def test_a_booking_told_before_the_new_members_is_compared_on_what_it_had() -> None:
    now = told(booking(), "PMS-1-000001", "UPCOMING")
    before = copy.deepcopy(now)
    # Each a member the booking's type has as NotRequired: mypy refuses to delete any other.
    del before["taxes"], before["services"], before["arrivalHour"], before["notes"]
    for room in before["rooms"]:
        del room["nights"], room["taxes"], room["services"], room["childrenAges"], room["infants"]
    del before["guest"]["language"], before["guest"]["address"], before["guest"]["company"]
    amounts = before["amounts"]
    del amounts["commission"], amounts["paymentCollect"], amounts["paymentType"], amounts["guarantee"]
    assert changes_between(before, now) == ({}, {})
    moved = told(booking(amount="320.00", room={"amount": "320.00"}), "PMS-1-000001", "UPCOMING")
    changes, previous = changes_between(before, moved)
    assert set(changes) == {"rooms", "amounts"} and changes["rooms"] == moved["rooms"]
    assert previous["amounts"] == before["amounts"] and "nights" not in previous["rooms"][0]
