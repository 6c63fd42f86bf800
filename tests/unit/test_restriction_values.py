"""The rates and restrictions call's values (actors.pushers.restriction_values): a
per-person plan's prices as one multi-occupancy value a range (issue 44)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from connectapi.actors.pushers import restriction_values
from connectapi.domain.dates import WEEKDAY_CODES
from connectapi.storage.properties import ChannelIds
from connectapi.storage.pushes import DirtyCell

IDS = ChannelIds("cm-prop", "EUR", {}, {1: "cm-pp", 2: "cm-room"}, occupancies={1: [1, 2, 3, 4]})
WEEK = [date(2026, 12, 1) + timedelta(days=n) for n in range(7)]


def rate(plan: int, night: date, minor: int, occupancy: int = 0) -> DirtyCell:
    return DirtyCell(plan, night, 1, minor, None, occupancy=occupancy)


def test_a_week_of_four_occupancies_is_one_value_listing_each() -> None:
    cells = [rate(1, night, 10000 + 2000 * n, n) for night in WEEK for n in (4, 1, 3, 2)]
    assert restriction_values(IDS, cells, []) == [{
        "property_id": "cm-prop", "rate_plan_id": "cm-pp", "date_from": "2026-12-01", "date_to": "2026-12-07",
        "rates": [{"occupancy": 1, "rate": "120.00"}, {"occupancy": 2, "rate": "140.00"},
                  {"occupancy": 3, "rate": "160.00"}, {"occupancy": 4, "rate": "180.00"}]}]


def test_only_the_occupancies_that_changed_go_and_ranges_split_where_they_differ() -> None:
    cells = [rate(1, WEEK[0], 9000, 2), rate(1, WEEK[1], 9000, 2), rate(1, WEEK[1], 7000, 1),
             rate(2, WEEK[0], 25000)]
    restrictions = [DirtyCell(1, WEEK[0], 2, {"stopSell": True}, None)]
    values = sorted(restriction_values(IDS, cells, restrictions), key=lambda v: (v["rate_plan_id"], v["date_from"]))
    assert values == [
        {"property_id": "cm-prop", "rate_plan_id": "cm-pp", "date_from": "2026-12-01", "date_to": "2026-12-01",
         "rates": [{"occupancy": 2, "rate": "90.00"}], "stop_sell": True, "closed_to_arrival": False,
         "closed_to_departure": False, "min_stay_arrival": 1, "min_stay_through": 1, "max_stay": 0},
        {"property_id": "cm-prop", "rate_plan_id": "cm-pp", "date_from": "2026-12-02", "date_to": "2026-12-02",
         "rates": [{"occupancy": 1, "rate": "70.00"}, {"occupancy": 2, "rate": "90.00"}]},
        # A per-room plan's one price goes as `rate`, as always.
        {"property_id": "cm-prop", "rate_plan_id": "cm-room", "date_from": "2026-12-01", "date_to": "2026-12-01",
         "rate": "250.00"}]


def applied(values: list[Any]) -> dict[date, dict[str, Any]]:
    """What the channel manager holds after the values, applied as it applies them: in order,
    field by field, a per-person plan's `rates` occupancy by occupancy."""
    held: dict[date, dict[str, Any]] = {}
    for value in values:
        night, last = date.fromisoformat(value["date_from"]), date.fromisoformat(value["date_to"])
        while night <= last:
            if "days" not in value or WEEKDAY_CODES[night.weekday()] in value["days"]:
                fields = held.setdefault(night, {})
                for name, setting in value.items():
                    if name == "rates":
                        fields.setdefault("rates", {}).update({e["occupancy"]: e["rate"] for e in setting})
                    elif name not in ("property_id", "rate_plan_id", "date_from", "date_to", "days"):
                        fields[name] = setting
            night += timedelta(days=1)
    return held


def test_a_weekday_pattern_never_leaves_an_occupancy_on_nights_that_did_not_get_it() -> None:
    """Occupancy 1 every night of a fortnight, occupancy 2 on weekdays only: a pattern whose
    first value (both) went over the weekends too would put occupancy 2's price there."""
    monday = date(2026, 11, 30)
    fortnight = [monday + timedelta(days=n) for n in range(14)]
    cells = [rate(1, night, 10000, 1) for night in fortnight]
    cells += [rate(1, night, 15000, 2) for night in fortnight if night.weekday() < 5]
    held = applied(restriction_values(IDS, cells, []))
    assert {night: fields["rates"] for night, fields in held.items()} == {
        night: {1: "100.00", **({2: "150.00"} if night.weekday() < 5 else {})} for night in fortnight}


def test_a_pattern_still_goes_out_when_every_override_sets_what_the_first_value_does() -> None:
    monday = date(2026, 11, 30)
    fortnight = [monday + timedelta(days=n) for n in range(14)]
    cells = [rate(2, night, 15000 if night.weekday() >= 5 else 12000) for night in fortnight]
    values = restriction_values(IDS, cells, [])
    assert [(v["date_from"], v["date_to"], v.get("days"), v["rate"]) for v in values] == [
        ("2026-11-30", "2026-12-13", None, "120.00"), ("2026-11-30", "2026-12-13", ["sa", "su"], "150.00")]
    assert {night: fields["rate"] for night, fields in applied(values).items()} == {
        night: "150.00" if night.weekday() >= 5 else "120.00" for night in fortnight}
