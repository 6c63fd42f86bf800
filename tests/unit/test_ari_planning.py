"""Planning ARI writes without I/O: masks, limits, ranges, horizon, last write wins."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectapi.domain import dates
from connectapi.domain.ari_write import Resource, WriteCatalog, check_write, merge, plan_write
from connectapi.domain.errors import ApiError

TODAY = date(2026, 11, 22)  # a Sunday


def rates(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"updates": [{"ratePlanId": 1, "currency": "EUR", "rate": 100, **e} for e in entries]}


def refused(resource: Resource, payload: Any) -> ApiError:
    with pytest.raises(ApiError) as info:
        plan_write(resource, payload, TODAY)
    return info.value


@given(st.dates(date(2026, 1, 1), date(2027, 12, 31)), st.integers(0, 40),
       st.sets(st.integers(0, 6), min_size=1))
def test_count_nights_matches_the_expansion(first: date, span: int, mask: set[int]) -> None:
    last = first + timedelta(days=span)
    listed = list(dates.nights(first, last, frozenset(mask)))
    assert dates.count_nights(first, last, frozenset(mask)) == len(listed)
    assert all(n.weekday() in mask for n in listed)
    assert dates.first_masked(first, last, frozenset(mask)) == (listed[0] if listed else None)
    assert dates.last_masked(first, last, frozenset(mask)) == (listed[-1] if listed else None)


def test_weekday_mask_expands_to_those_weekdays() -> None:
    plan = plan_write(Resource.RATES, rates({"dateFrom": "2026-11-23", "dateTo": "2026-12-06", "days": ["fr", "sa"]}),
                      TODAY)
    assert plan.entries[0].nights == (date(2026, 11, 27), date(2026, 11, 28), date(2026, 12, 4), date(2026, 12, 5))
    assert plan.requested_cells == 4


def test_range_and_horizon_refusals() -> None:
    err = refused(Resource.RATES, rates({"dateFrom": "2026-11-25", "dateTo": "2026-11-24"}))
    assert err.code == "RANGE_INVALID"
    err = refused(Resource.RATES, rates({"dateFrom": "2026-11-23", "dateTo": "2026-11-24", "days": ["sa"]}))
    assert err.code == "RANGE_INVALID"  # the mask leaves no night
    err = refused(Resource.RATES, rates({"dateFrom": "2026-11-21", "dateTo": "2026-11-24"}))
    assert err.code == "RANGE_INVALID" and isinstance(err.details, dict) and err.details["today"] == "2026-11-22"
    # a past day the mask skips is not a past night
    plan = plan_write(Resource.RATES, rates({"dateFrom": "2026-11-20", "dateTo": "2026-11-24", "days": ["mo"]}), TODAY)
    assert plan.entries[0].nights == (date(2026, 11, 23),)
    last = TODAY + timedelta(days=365)
    assert plan_write(Resource.RATES, rates({"dateFrom": str(last), "dateTo": str(last)}), TODAY).requested_cells == 1
    err = refused(Resource.RATES, rates({"dateFrom": str(last), "dateTo": str(last + timedelta(days=1))}))
    assert err.code == "HORIZON" and isinstance(err.details, dict) and err.details["lastNight"] == str(last)


def test_limits() -> None:
    entry = {"dateFrom": "2026-11-23", "dateTo": "2026-11-23"}
    assert refused(Resource.RATES, rates(*[entry] * 1001)).code == "TOO_MANY_UPDATES"
    assert plan_write(Resource.RATES, rates(*[entry] * 1000), TODAY).requested_cells == 1000
    year = {"dateFrom": "2026-11-23", "dateTo": "2027-11-22"}  # 365 nights
    err = refused(Resource.RATES, rates(*[year] * 14))  # 5110 cells
    assert err.code == "TOO_MANY_CELLS" and err.details == {"max": 5000, "got": 5110}
    assert plan_write(Resource.RATES, rates(*[year] * 13, *[entry] * 255), TODAY).requested_cells == 5000


def test_last_write_wins_and_restrictions_merge_by_field() -> None:
    plan = plan_write(Resource.RATES, rates(
        {"dateFrom": "2026-11-23", "dateTo": "2026-11-25", "rate": 100},
        {"dateFrom": "2026-11-24", "dateTo": "2026-11-24", "rate": 150},
    ), TODAY)
    assert merge(Resource.RATES, plan.entries) == {  # a per-room plan's one price: occupancy 0
        (1, date(2026, 11, 23)): {0: 100}, (1, date(2026, 11, 24)): {0: 150}, (1, date(2026, 11, 25)): {0: 100}}
    # A per-person plan's prices merge occupancy by occupancy: the last write to each wins.
    plan = plan_write(Resource.RATES, rates(
        {"dateFrom": "2026-11-23", "dateTo": "2026-11-24", "rate": 100, "occupancy": 1},
        {"dateFrom": "2026-11-23", "dateTo": "2026-11-24", "rate": 140, "occupancy": 2},
        {"dateFrom": "2026-11-24", "dateTo": "2026-11-24", "rate": 90, "occupancy": 1},
    ), TODAY)
    assert plan.requested_cells == 5  # a cell is a plan, a night and an occupancy, counted as named
    assert merge(Resource.RATES, plan.entries) == {
        (1, date(2026, 11, 23)): {1: 100, 2: 140}, (1, date(2026, 11, 24)): {1: 90, 2: 140}}
    plan = plan_write(Resource.RESTRICTIONS, {"updates": [
        {"ratePlanId": 1, "dateFrom": "2026-11-23", "dateTo": "2026-11-24", "stopSell": True, "maxStay": 5},
        {"ratePlanId": 1, "dateFrom": "2026-11-24", "dateTo": "2026-11-24", "stopSell": False, "minStayArrival": 2},
    ]}, TODAY)
    merged = merge(Resource.RESTRICTIONS, plan.entries)
    assert merged[(1, date(2026, 11, 24))] == {"stopSell": False, "maxStay": 5, "minStayArrival": 2}
    assert merged[(1, date(2026, 11, 23))] == {"stopSell": True, "maxStay": 5}


CATALOG = WriteCatalog(version=7, currency="EUR", room_types=frozenset({10}),
                       policies={1: (50, 300), 2: (None, None)})


def test_a_write_is_checked_against_the_catalog_the_writer_holds() -> None:
    def checked(resource: Resource, *entries: dict[str, Any], catalog: WriteCatalog = CATALOG) -> Any:
        return check_write(plan_write(resource, {"updates": list(entries)}, TODAY), catalog)

    night = {"dateFrom": "2026-11-23", "dateTo": "2026-11-24"}
    unknown = checked(Resource.AVAILABILITY, {"roomTypeId": 11, "available": 1, **night})
    assert (unknown.refusal.code, unknown.refusal.details, unknown.values) == (
        "UNKNOWN_ROOM_TYPE", {"roomTypeIds": [11]}, {})
    assert checked(Resource.RESTRICTIONS, {"ratePlanId": 3, "stopSell": True, **night}).refusal.code == \
        "UNKNOWN_RATE_PLAN"
    dollars = checked(Resource.RATES, {"ratePlanId": 2, "rate": 100, "currency": "USD", **night})
    assert (dollars.refusal.code, dollars.refusal.details) == ("CURRENCY_MISMATCH", {"expected": "EUR", "got": "USD"})
    # Outside its plan's policy: that entry refused whole, the others written, in minor units.
    mixed = checked(Resource.RATES, {"ratePlanId": 1, "rate": 40, "currency": "EUR", **night},
                    {"ratePlanId": 2, "rate": 40, "currency": "EUR", **night})
    assert mixed.refusal is None
    assert [(r.index, r.cells) for r in mixed.rejected] == [(0, 2)]
    assert mixed.values == {(2, date(2026, 11, 23)): {0: 4000}, (2, date(2026, 11, 24)): {0: 4000}}
    yen = WriteCatalog(version=1, currency="JPY", room_types=frozenset(), policies={2: (None, None)})
    assert checked(Resource.RATES, {"ratePlanId": 2, "rate": 900, "currency": "JPY", **night},
                   catalog=yen).values[(2, date(2026, 11, 23))] == {0: 900}
    nothing = checked(Resource.RATES, {"ratePlanId": 1, "rate": 301, "currency": "EUR", **night})
    assert nothing.refusal.code == "NOTHING_ACCEPTED"
    assert checked(Resource.AVAILABILITY, {"roomTypeId": 10, "available": 4, **night}).values == {
        (10, date(2026, 11, 23)): 4, (10, date(2026, 11, 24)): 4}


PER_PERSON = WriteCatalog(version=3, currency="EUR", room_types=frozenset({10}),
                          policies={1: (50, 300), 2: (None, None)}, occupancies={2: frozenset({1, 2})})


def test_an_occupancy_is_required_by_a_per_person_plan_and_refused_by_a_per_room_one() -> None:
    def checked(*entries: dict[str, Any]) -> Any:
        return check_write(plan_write(Resource.RATES, {"updates": list(entries)}, TODAY), PER_PERSON)

    night = {"dateFrom": "2026-11-23", "dateTo": "2026-11-23", "currency": "EUR"}
    both = checked({"ratePlanId": 2, "rate": 80, "occupancy": 1, **night},
                   {"ratePlanId": 2, "rate": 95, "occupancy": 2, **night},
                   {"ratePlanId": 1, "rate": 99, **night})
    assert both.refusal is None
    assert both.values == {(2, date(2026, 11, 23)): {1: 8000, 2: 9500}, (1, date(2026, 11, 23)): {0: 9900}}
    # Each misfit named by its entry, all at once, before the currency is looked at.
    wrong = checked({"ratePlanId": 2, "rate": 80, **night},
                    {"ratePlanId": 2, "rate": 80, "occupancy": 3, **night},
                    {"ratePlanId": 1, "rate": 99, "occupancy": 2, **night},
                    {"ratePlanId": 2, "rate": 80, "occupancy": 1, **night, "currency": "USD"})
    assert wrong.refusal.code == "VALIDATION" and wrong.values == {}
    assert [(issue["path"], issue["message"]) for issue in wrong.refusal.details] == [
        ("updates[0].occupancy", "rate plan 2 is sold per person: name the occupancy priced, one of [1, 2]"),
        ("updates[1].occupancy", "rate plan 2 prices occupancies [1, 2], not 3"),
        ("updates[2].occupancy", "rate plan 1 is sold per room: its one price takes no occupancy")]
    # Unknown plans come first, as before.
    assert checked({"ratePlanId": 9, "rate": 80, "occupancy": 1, **night}).refusal.code == "UNKNOWN_RATE_PLAN"
    # The schema's bounds: a whole number from 1 to 18.
    for occupancy in (0, 19, "2", 1.5, True):
        err = refused(Resource.RATES, {"updates": [{"ratePlanId": 2, "rate": 80, "occupancy": occupancy, **night}]})
        assert err.code == "VALIDATION" and isinstance(err.details, list)
        assert "updates[0].occupancy" in [d["path"] for d in err.details]


@pytest.mark.parametrize(("entry", "path"), [
    ({"available": "5"}, "updates[0].available"),
    ({"available": 5.5}, "updates[0].available"),
    ({"available": True}, "updates[0].available"),
    ({"available": -1}, "updates[0].available"),
    ({"available": 1, "days": ["mo"]}, "updates[0].days"),
    ({"available": 1, "dateFrom": "2026-13-01"}, "updates[0].dateFrom"),
    ({"available": 1, "extra": 1}, "updates[0].extra"),
])
def test_availability_validation(entry: dict[str, Any], path: str) -> None:
    body = {"updates": [{"roomTypeId": 1, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", **entry}]}
    err = refused(Resource.AVAILABILITY, body)
    assert err.code == "VALIDATION" and isinstance(err.details, list) and path in [d["path"] for d in err.details]


@pytest.mark.parametrize("rate", ["\u0661\u0662\u0660", "\uff11\uff12\uff10", "\u0661\u0662\u0660.00", "1\u0662\u0660",
                                  "\u00a0120"])
def test_a_rate_in_digits_other_than_ascii_is_refused(rate: str) -> None:
    # An outside review: Arabic-Indic and fullwidth "120" were read as 120 and written.
    body = {"updates": [{"ratePlanId": 1, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", "rate": rate,
                         "currency": "EUR"}]}
    err = refused(Resource.RATES, body)
    assert err.code == "VALIDATION" and isinstance(err.details, list)
    assert "updates[0].rate" in [d["path"] for d in err.details]


@pytest.mark.parametrize("rate", ["120", "120.00", " 120.00 ", "120.", 120])
def test_a_rate_in_ascii_digits_is_read(rate: Any) -> None:
    body = {"updates": [{"ratePlanId": 1, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", "rate": rate,
                         "currency": "EUR"}]}
    plan = plan_write(Resource.RATES, body, date(2026, 11, 22))
    assert plan.requested_cells == 1 and [e.value for e in plan.entries] == [120]  # whole major units
