"""The retry schedule of webhook deliveries, and what a receiver's Retry-After can do to it."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectapi.domain.webhook_retry import DAY, SCHEDULE, next_wait


def no_jitter() -> float:
    return 0.5


@pytest.mark.parametrize("retry_after", [99999999999999999999.0, 1e308, math.inf])
def test_an_absurd_retry_after_is_read_as_an_hour(retry_after: float) -> None:
    """Issue 16: 10^20 s overflowed timedelta, and the attempt's record never got written."""
    assert next_wait(1, timedelta(0), retry_after, no_jitter) == timedelta(hours=1)
    assert next_wait(4, timedelta(minutes=40), retry_after, no_jitter) == SCHEDULE[3]  # the schedule asks for more


def test_a_retry_after_within_the_hour_is_honoured() -> None:
    assert next_wait(1, timedelta(0), 60.0, no_jitter) == timedelta(seconds=60)
    assert next_wait(1, timedelta(0), math.nan, no_jitter) == SCHEDULE[0]
    assert next_wait(1, timedelta(0), -5.0, no_jitter) == SCHEDULE[0]


@given(st.integers(1, len(SCHEDULE)), st.integers(0, int(DAY.total_seconds()) - 1),
       st.none() | st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 1, exclude_max=True))
def test_whatever_a_receiver_writes_the_wait_is_within_the_day(
        failed: int, since_first: int, retry_after: float | None, jitter: float) -> None:
    wait = next_wait(failed, timedelta(seconds=since_first), retry_after, lambda: jitter)
    assert wait is not None and timedelta(0) < wait <= max(SCHEDULE[failed - 1] * 1.1, timedelta(hours=1))
    assert since_first + wait.total_seconds() <= DAY.total_seconds()
