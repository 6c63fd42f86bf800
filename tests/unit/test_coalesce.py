from __future__ import annotations

from datetime import date, timedelta

from hypothesis import given
from hypothesis import strategies as st

from connectapi.domain.coalesce import RangeValue, coalesce, expand

START = date(2026, 11, 23)  # a Monday


def nights(count: int, start: date = START) -> list[date]:
    return [start + timedelta(days=i) for i in range(count)]


def test_a_year_of_one_value_is_one_value() -> None:
    cells = {night: 100 for night in nights(366)}
    assert coalesce(7, cells, weekday_masks=True) == [RangeValue(7, START, START + timedelta(days=365), 100)]


def test_weekend_pattern_becomes_two_values() -> None:
    cells = {n: (150 if n.weekday() in (4, 5) else 100) for n in nights(364)}
    values = coalesce(1, cells, weekday_masks=True)
    assert values == [RangeValue(1, START, START + timedelta(days=363), 100),
                      RangeValue(1, START, START + timedelta(days=363), 150, ("fr", "sa"))]
    # availability takes no masks: runs it is
    assert len(coalesce(1, cells, weekday_masks=False)) == 105  # 52 weekends, 51 weeks between, both ends


def test_gaps_split_blocks_and_runs_merge_neighbours() -> None:
    cells = {START: 1, START + timedelta(days=1): 1, START + timedelta(days=2): 2, START + timedelta(days=5): 2}
    assert coalesce(3, cells, weekday_masks=True) == [
        RangeValue(3, START, START + timedelta(days=1), 1),
        RangeValue(3, START + timedelta(days=2), START + timedelta(days=2), 2),
        RangeValue(3, START + timedelta(days=5), START + timedelta(days=5), 2),
    ]


@given(st.dictionaries(st.integers(0, 60), st.sampled_from([1, 2, 3]), max_size=61), st.booleans())
def test_applying_the_values_in_order_gives_back_the_cells(offsets: dict[int, int], masks: bool) -> None:
    cells = {START + timedelta(days=k): v for k, v in offsets.items()}
    values = coalesce(9, cells, weekday_masks=masks)
    assert expand(values) == {(9, night): value for night, value in cells.items()}
    assert len(values) <= max(1, len(cells))
    if not masks:
        assert all(v.days is None for v in values)
