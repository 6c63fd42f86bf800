"""The rates and restrictions call's values (actors.pushers.restriction_values): a
per-person plan's prices as one multi-occupancy value a range (issue 44)."""

from __future__ import annotations

from datetime import date, timedelta

from connectapi.actors.pushers import restriction_values
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
