import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectapi.budgets.window import SlidingWindow, whole_seconds


def test_event_counts_until_exactly_one_window_later() -> None:
    w = SlidingWindow(limit=2, window=60)
    w.charge(100.0)
    w.charge(110.0)
    assert w.wait_for(159.999) == pytest.approx(0.001)
    assert w.wait_for(160.0) is None  # the event at 100 leaves at 160, not a moment later
    w.charge(160.0)
    assert w.wait_for(169.999) is not None
    assert w.wait_for(170.0) is None


def test_wait_is_until_enough_has_left_for_an_amount() -> None:
    w = SlidingWindow(limit=10, window=60)
    w.charge(0.0, 4)
    w.charge(10.0, 4)
    w.charge(20.0, 2)
    assert w.wait_for(30.0, 1) == 30.0  # the 4 at t=0 must leave
    assert w.wait_for(30.0, 5) == 40.0  # needs the 4 at t=0 and the 4 at t=10 gone
    assert w.wait_for(30.0, 11) == 60.0  # never fits: a whole window


def test_state_reports_remaining_and_reset() -> None:
    w = SlidingWindow(limit=5, window=60)
    assert w.state(0).remaining == 5 and w.state(0).reset_after == 0
    w.charge(1.0)
    w.charge(2.0, 2)
    s = w.state(31.0)
    assert (s.used, s.remaining, s.reset_after) == (3, 2, 30.0)
    assert w.state(61.0).used == 2
    assert w.is_empty(62.0)


def test_whole_seconds_rounds_up() -> None:
    assert [whole_seconds(x) for x in (0, -1, 0.001, 1.0, 1.2, 59.9, 60)] == [0, 0, 1, 1, 2, 60, 60]


@given(st.lists(st.tuples(st.floats(0, 1000, allow_nan=False), st.integers(1, 5)), max_size=60))
def test_never_admits_more_than_the_limit_in_any_window(events: list[tuple[float, int]]) -> None:
    """Property: whatever the arrivals, what was admitted in any 60 s span stays within the limit."""
    w = SlidingWindow(limit=7, window=60)
    admitted: list[tuple[float, int]] = []
    for at, amount in sorted(events):
        if w.wait_for(at, amount) is None:
            w.charge(at, amount)
            admitted.append((at, amount))
    for start, _ in admitted:
        assert sum(n for t, n in admitted if start <= t < start + 60) <= 7
