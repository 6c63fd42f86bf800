"""A revision from the channel manager checked as input (domain/revision_screen.py): what is
kept of it, the stays, rooms and amounts a property can hold, and the guest's fields
bounded as the contract bounds a booking's."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectapi.domain.ota_bookings import (AHEAD_AT_MOST, MalformedRevision, OtaBooking, dated_ahead, normalise,
                                           parse_revision, revised_at, screened)
from connectapi.domain.revision_screen import (
    BYTES_KEPT, CUTS_LISTED, MEMBERS_KEPT, TEXT_KEPT, Cut, StayFacts, bounded, lost_in_keeping, screen, stored_size,
)
from ..examples import examples
from .test_ota_revisions import MAPPING, raw

TODAY = date(2026, 11, 22)
FACTS = StayFacts(TODAY, {"cm-double": 8, "cm-suite": 2})


def stay(arrival: date, nights: int) -> str | None:
    return screen(arrival, arrival + timedelta(days=nights), [("cm-double", 2, 0)], [Decimal("100")], FACTS)


def test_the_stays_a_property_holds_and_the_first_ones_past() -> None:
    assert stay(TODAY - timedelta(days=365), 1) is None
    assert stay(TODAY - timedelta(days=366), 1) == "its arrival 2025-11-21 is more than a year ago"
    assert stay(TODAY + timedelta(days=395), 90) is None
    assert stay(TODAY + timedelta(days=396), 1) == "its arrival 2027-12-23 is past the horizon (2027-12-22)"
    assert stay(TODAY, 91) == "its stay of 91 nights is longer than 90"
    assert stay(TODAY, 365_242) == "its stay of 365,242 nights is longer than 90"


def rooms(*sold: tuple[str | None, int, int]) -> str | None:
    return screen(TODAY, TODAY + timedelta(days=2), list(sold), [Decimal("100")], FACTS)


def test_rooms_past_what_the_property_has_or_any_booking_holds() -> None:
    assert rooms(*[("cm-double", 2, 0)] * 8, ("cm-suite", 4, 0), ("cm-suite", 4, 0)) is None
    assert rooms(*[("cm-double", 2, 0)] * 9) == "it sells 9 rooms of a room type the property has 8 of"
    assert rooms(*[("cm-suite", 2, 0)] * 3) == "it sells 3 rooms of a room type the property has 2 of"
    # A room type it does not map is not counted here: it is unmapped, kept and told apart.
    assert rooms(*[("cm-other", 2, 0)] * 100) is None
    assert rooms(*[("cm-other", 2, 0)] * 101) == "it sells 101 rooms, more than 100 in one booking"
    assert rooms(("cm-double", 101, 0)) == "a room of 101 adults and 0 children"
    assert rooms(("cm-double", 2, -1)) == "a room of 2 adults and -1 children"
    assert rooms(("cm-double", int("9" * 4000), 0)) == "a room of more than a billion adults and 0 children"


@pytest.mark.parametrize(("amount", "why"), [
    ("0", None), ("9999999999.99", None), ("-0.01", "a negative amount (-0.01)"),
    ("-" + "9" * 3000, "a negative amount (ten or more integer digits)"),
    ("10000000000", "an amount of ten or more integer digits"), ("NaN", "an amount that is not a number"),
    ("sNaN", "an amount that is not a number"), ("-Infinity", "an amount that is not a number"),
])
def test_amounts(amount: str, why: str | None) -> None:
    assert screen(TODAY, TODAY + timedelta(days=1), [], [Decimal("10"), Decimal(amount)], FACTS) == why


def test_strings_are_cut_and_the_cuts_recorded_but_only_structure_lost_refuses() -> None:
    revision = {"id": "r", "customer": {"mail": "m" * (TEXT_KEPT + 5)}, "notes": "fine"}
    kept, cuts = bounded(revision)
    assert kept == {"id": "r", "customer": {"mail": "m" * TEXT_KEPT}, "notes": "fine"}
    assert cuts == (Cut("customer.mail", TEXT_KEPT + 5, "characters"),)
    assert lost_in_keeping(cuts) is None
    kept, cuts = bounded({"rooms": [{"amount": "1"}] * (MEMBERS_KEPT + 1), "days": {str(i): "1" for i in range(401)}})
    assert len(kept["rooms"]) == len(kept["days"]) == MEMBERS_KEPT
    assert cuts == (Cut("rooms", MEMBERS_KEPT + 1, "items"), Cut("days", MEMBERS_KEPT + 1, "members"))
    assert lost_in_keeping(cuts) == "it was too large to keep whole: rooms (401 items), days (401 members)"


def test_a_number_written_as_a_string_cut_refuses_its_revision() -> None:
    # An outside review: "000…0240.00" cut to its first 4,000 characters read as 0.00 and the
    # booking was applied for nothing.
    padded = "0" * (TEXT_KEPT + 100) + "240.00"
    for value in (padded, " " * TEXT_KEPT + "240.00", "1" * (TEXT_KEPT + 1), "2026-12-10" + "0" * TEXT_KEPT,
                  "\u0660" * (TEXT_KEPT + 100) + "\u0662\u0664\u0660.00", "\uff10" * (TEXT_KEPT + 1) + "\uff15"):
        kept, cuts = bounded({"amount": value, "notes": "fine"})
        assert cuts == (Cut("amount", len(value), "digits"),), cuts
        assert lost_in_keeping(cuts) == f"it was too large to keep whole: amount ({len(value):,} digits)"
    # Read in linear time whatever the string: digits then a letter once took minutes.
    for hostile in ("1" * 1_000_000 + "x", "0123456789 " * 100_000 + "ok", "1" * 1_000_000):
        _, cuts = bounded({"notes": hostile})
        assert [c.unit for c in cuts] == ["digits" if hostile.isdigit() else "characters"]
    # A text's tail is only text; the guest's phone is read as one or dropped, never as money.
    _, cuts = bounded({"notes": "late arrival " * 400, "customer": {"phone": "9" * (TEXT_KEPT + 1)},
                       "divider": "-" * (TEXT_KEPT + 1)})
    assert [c.unit for c in cuts] == ["characters"] * 3 and lost_in_keeping(cuts) is None


def test_a_cut_names_its_path_printably_and_briefly() -> None:
    _, cuts = bounded({"a\nb" + "k" * 60: "v" * (TEXT_KEPT + 1)})
    assert cuts == (Cut("a?b" + "k" * 37 + "…", TEXT_KEPT + 1, "characters"),)


def test_a_revision_too_large_once_bounded_is_kept_in_outline() -> None:
    revision = {"id": "r", "status": "new", "rooms": [{"note": "x" * TEXT_KEPT}] * MEMBERS_KEPT}
    kept, cuts = bounded(revision)
    assert kept == {"id": "r", "status": "new"}
    assert [c.unit for c in cuts] == ["bytes"] and cuts[0].size > BYTES_KEPT
    assert lost_in_keeping(cuts) is not None
    # Many top-level strings, each under its bound, non-ASCII (six bytes each as stored):
    # only what names it is kept, each of it bounded.
    wide = {"id": "r" * 300, **{f"k{i}": "é" * TEXT_KEPT for i in range(MEMBERS_KEPT)}}
    kept, cuts = bounded(wide)
    assert kept == {"id": "r" * 200} and stored_size(kept) <= BYTES_KEPT
    assert cuts[-1].unit == "bytes" and cuts[-1].size > 6 * TEXT_KEPT * (MEMBERS_KEPT - 1)  # as stored


def test_many_cuts_are_listed_up_to_a_bound_and_a_lost_structure_is_never_hidden_among_them() -> None:
    revision: dict[str, Any] = {f"s{i}": "y" * (TEXT_KEPT + 1) for i in range(30)}
    revision["z"] = [0] * (MEMBERS_KEPT + 1)
    _, cuts = bounded(revision)
    assert len(cuts) == CUTS_LISTED
    assert cuts[0] == Cut("z", MEMBERS_KEPT + 1, "items") and lost_in_keeping(cuts) is not None
    _, only_text = bounded({f"s{i}": "y" * (TEXT_KEPT + 1) for i in range(30)})
    assert len(only_text) == CUTS_LISTED and lost_in_keeping(only_text) is None
    assert only_text[-1].path == f"{30 - CUTS_LISTED + 1} more parts"


# Long strings and long lists made cheaply (drawn character by character, they cost seconds).
long_text = st.integers(0, TEXT_KEPT * 2).map(lambda n: "é" * n)
long_list = st.integers(0, MEMBERS_KEPT + 3).map(lambda n: [n] * n)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10) | long_text | long_list,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=50), inner, max_size=5),
    max_leaves=80)


@settings(max_examples=examples(40), deadline=None)
@given(st.dictionaries(st.text(max_size=20), json_values, max_size=10))
def test_what_is_kept_is_bounded_whatever_came(revision: dict[str, Any]) -> None:
    kept, cuts = bounded(revision)
    assert stored_size(kept) <= BYTES_KEPT
    assert len(cuts) <= CUTS_LISTED
    if not cuts:
        assert kept == revision


def normal(**customer: Any) -> OtaBooking:
    revision = raw()
    revision["customer"] = {**revision["customer"], **customer}
    found = normalise(parse_revision(revision), MAPPING)
    assert isinstance(found, OtaBooking)
    return found


def test_the_guests_fields_are_bounded_and_what_was_cut_said_by_size_only() -> None:
    assert normal().cut == ()
    hostile = normal(name="N" * 300, surname="\nLima\x00", mail="x" * 300 + "@example.com", phone="9" * 25,
                     country="Portugal")
    assert (hostile.guest_name, hostile.guest_email, hostile.guest_phone, hostile.guest_country) == (
        "N" * 199 + "…", None, None, None)
    assert hostile.cut == ("guest name cut (306 characters)",
                           "guest e-mail dropped (312 characters, not an address)",
                           "guest phone dropped (25 characters, not a number)",
                           "guest country dropped (8 characters, not a two-letter code)")
    assert normal(country="pt").guest_country == "PT"
    assert normal(mail="ana@example").guest_email == "ana@example"  # an address, if an odd one: kept
    assert normal(phone="Custom Phone").cut == ()  # a placeholder with no digit is no phone, as before


def test_a_parsed_revision_is_screened_on_its_total_and_every_room() -> None:
    assert screened(parse_revision(raw()), FACTS) is None
    room = {**raw()["rooms"][0], "amount": "-5"}
    assert screened(parse_revision(raw(rooms=[room])), FACTS) == "a negative amount (-5)"


def test_numbers_no_one_can_hold_are_kept_as_text_and_refuse_their_revision_alone() -> None:
    from connectapi.channel.client import _parse_json

    page = _parse_json(b'{"data": [{"adults": 1e999, "big": ' + b"9" * 5000 + b', "ok": 2, "rate": 120.5, '
                       b'"odd": NaN}]}', items=True)
    assert page == {"data": [{"adults": "1e999", "big": "9" * 5000, "ok": 2, "rate": 120.5, "odd": "NaN"}]}
    for adults in ("1e999", float("inf"), 2.5, True, "9" * 5000):
        room = {**raw()["rooms"][0], "occupancy": {"adults": adults}}
        with pytest.raises(MalformedRevision):
            parse_revision(raw(rooms=[room]))


@pytest.mark.parametrize("inserted_at", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00",
                                         "1970-01-01T00:00:00", "9" * 100, None])
def test_an_instant_off_the_calendar_is_unreadable(inserted_at: Any) -> None:
    with pytest.raises(MalformedRevision):
        revised_at({"inserted_at": inserted_at})


def test_a_revision_dated_far_ahead_of_our_clock_is_not_applied() -> None:
    now = datetime(2026, 11, 22, 10, tzinfo=UTC)
    # Dated in the year 8999 it would make every later revision of its booking stale.
    far = dated_ahead(revised_at({"inserted_at": "8999-01-01T00:00:00"}), now)
    assert far is not None and far.startswith("its inserted_at is 2546510 days ahead")
    soon = dated_ahead(now + AHEAD_AT_MOST + timedelta(minutes=1), now)
    assert soon is not None and soon.startswith("its inserted_at is 61 minutes ahead")
    # A channel manager's clock a little ahead, and any instant before now, are as dated.
    for inserted in (now + AHEAD_AT_MOST, now + timedelta(seconds=2), now, now - timedelta(days=400)):
        assert dated_ahead(inserted, now) is None


def test_the_unmapped_ids_a_note_names_are_few_and_short() -> None:
    rooms = [{**raw()["rooms"][0], "room_type_id": f"{i}" + "x" * 3000} for i in range(100)]
    named = normalise(parse_revision(raw(rooms=rooms)), MAPPING)
    assert isinstance(named, list) and len(named) == 6 and named[-1] == "95 more"
    assert all(len(n) < 80 for n in named)
