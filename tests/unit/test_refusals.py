"""Tying the values the channel manager refused (in its 200's meta.warnings) to our cells."""

from __future__ import annotations

import json
from datetime import date

from connectapi.domain.refusals import REFUSAL_MAX, fields_of, kept, refused_cells, said

OURS = {"plan-a": 1, "plan-b": 2}
D = date(2026, 12, 1)  # a Tuesday
SENT = {(1, date(2026, 12, d)) for d in range(1, 15)} | {(2, date(2026, 12, d)) for d in range(1, 15)}


def test_a_range_with_weekdays_refuses_exactly_its_nights_of_its_plan() -> None:
    value = {"property_id": "p", "rate_plan_id": "plan-a", "date_from": "2026-12-01", "date_to": "2026-12-10",
             "days": ["tu", "sa"], "rate": "-2"}
    found = refused_cells([(value, {"rate": ["must be greater than 0"]})], "rate_plan_id", OURS, SENT)
    assert set(found) == {(1, date(2026, 12, 1)), (1, date(2026, 12, 5)), (1, date(2026, 12, 8))}
    assert {said(text) for text in found.values()} == {"rate: must be greater than 0"}


def test_a_single_date_refuses_one_night() -> None:
    found = refused_cells([({"rate_plan_id": "plan-b", "date": "2026-12-03"}, {"stop_sell": ["is invalid"]})],
                          "rate_plan_id", OURS, SENT)
    assert set(found) == {(2, date(2026, 12, 3))}


def test_a_refusal_that_names_no_cell_of_ours_refuses_the_whole_call() -> None:
    for value in ({}, {"rate_plan_id": "unknown", "date": "2026-12-03"},
                  {"rate_plan_id": "plan-a", "date": "not a date"},
                  {"rate_plan_id": "plan-a", "date_from": "2026-12-01", "date_to": "2026-12-02", "days": ["xx"]},
                  {"rate_plan_id": "plan-a", "date": "2027-05-01"}):
        found = refused_cells([(value, {"value": ["refused"]})], "rate_plan_id", OURS, SENT)
        assert set(found) == SENT, value


def test_no_refusal_refuses_nothing() -> None:
    assert refused_cells([], "rate_plan_id", OURS, SENT) == {}


def test_what_is_kept_is_bounded_and_reads_back() -> None:
    assert fields_of(kept({"rate": ["must be greater than 0"]})) == {"rate": ["must be greater than 0"]}
    long = kept({f"field{i}": ["x" * 300] * 5 for i in range(20)})
    assert len(long) <= REFUSAL_MAX and json.loads(long)
    assert fields_of("not json") == {"value": ["not json"]}
    assert said(kept({})) == "value: refused"
