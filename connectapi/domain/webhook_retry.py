"""When a failed webhook delivery is tried again: a schedule that spans one day.

Attempts are made at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and a last one
24 h after the first; each wait gets up to 10% of jitter either way so endpoints that
failed together are not retried together. A `Retry-After` longer than the schedule's wait
is honoured up to an hour (within the day). After the last attempt fails the endpoint is
paused.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

# Waits after the 1st, 2nd, … failed attempt; they add up to 24 hours.
SCHEDULE: tuple[timedelta, ...] = (
    timedelta(seconds=5), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2), timedelta(hours=5),
    timedelta(hours=10), timedelta(hours=6, minutes=24, seconds=55),
)
DAY = timedelta(hours=24)
JITTER = 0.10
# What a receiver may ask for at most: its answer is the outside's to write, and a wait of
# 10^20 s overflowed timedelta (issue 16).
RETRY_AFTER_MAX = timedelta(hours=1)


def attempts() -> int:
    """How many attempts a delivery gets before its endpoint is paused."""
    return len(SCHEDULE) + 1


def next_wait(failed_attempts: int, since_first: timedelta, retry_after: float | None,
              jitter: Callable[[], float]) -> timedelta | None:
    """The wait before the next attempt after `failed_attempts` failures, `since_first` after
    the first attempt; None when the day of attempts is over (pause the endpoint).

    `jitter()` answers a number in [0, 1). `retry_after` may be anything a receiver wrote
    (infinite, not a number, negative): past RETRY_AFTER_MAX it counts as that.
    """
    if failed_attempts < 1 or failed_attempts > len(SCHEDULE):
        return None
    planned = SCHEDULE[failed_attempts - 1]
    wait = planned * (1 + JITTER * (2 * jitter() - 1))
    if retry_after is not None and retry_after > wait.total_seconds():  # False for NaN
        wait = max(wait, timedelta(seconds=min(retry_after, RETRY_AFTER_MAX.total_seconds())))
    left = DAY - since_first
    if left <= timedelta(0):
        return None
    return min(wait, left)
