"""Time, injected: wall time for records and dates, monotonic time for windows and timers.

Monotonic time is Trio's clock, so `trio.testing.MockClock` drives windows, idle stops
and retry schedules in tests without anyone sleeping for real.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

import trio


class Clock(Protocol):
    def now(self) -> datetime:
        """Aware UTC wall time."""
        ...

    def monotonic(self) -> float:
        """Seconds on Trio's clock."""
        ...

    def today(self, zone: ZoneInfo) -> date:
        """The calendar date now in `zone`."""
        ...

    def shared_time(self) -> float | None:
        """Seconds since the epoch for counts shared by every process (the budgets), or
        None for the database server's own clock: the one clock every process and
        machine reads alike. Fake clocks give theirs, so tests drive shared windows."""
        ...


# The largest step back the clock is held through rather than taken (see SystemClock.now).
HOLD_AT_MOST = timedelta(seconds=1)


class SystemClock:
    """The host's clock, set to follow the database server's (`follow`): every host then
    dates records, pauses and retries alike, whatever its own clock says (the service's
    clock follower measures the offset: actors.clock_follower)."""

    def __init__(self) -> None:
        self._offset = timedelta(0)
        self._last: datetime | None = None  # the latest instant given

    def follow(self, offset_seconds: float) -> None:
        """From now on, wall time is the host's plus `offset_seconds` (the database's minus the host's)."""
        self._offset = timedelta(seconds=offset_seconds)

    @property
    def offset(self) -> float:
        return self._offset.total_seconds()

    def now(self) -> datetime:
        """Later than any instant given before, when the step back is small: a new offset a
        little behind the last (one measure's error: the follower trusts a measure over up
        to half a second) or the host's clock slewed back would otherwise date a later
        record before an earlier one (a client's three bookings listed newest first came
        back out of order); the clock is held for that moment instead. A larger step back
        is a wrong clock put right (a host minutes ahead of the database): followed at once."""
        found = datetime.now(UTC) + self._offset
        last = self._last
        if last is not None and last - HOLD_AT_MOST < found <= last:
            found = last + timedelta(microseconds=1)
        self._last = found
        return found

    def monotonic(self) -> float:
        return trio.current_time()

    def today(self, zone: ZoneInfo) -> date:
        return self.now().astimezone(zone).date()

    def shared_time(self) -> float | None:
        return None


class FakeClock:
    """Wall time that starts at `start` and moves with Trio's (mock) clock.

    Create it inside `trio.run`; jumping the MockClock moves both kinds of time together.
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock needs an aware start time")
        self._start = start.astimezone(UTC)
        self._origin = trio.current_time()

    def now(self) -> datetime:
        return self._start + timedelta(seconds=trio.current_time() - self._origin)

    def monotonic(self) -> float:
        return trio.current_time()

    def today(self, zone: ZoneInfo) -> date:
        return self.now().astimezone(zone).date()

    def shared_time(self) -> float | None:
        return self.now().timestamp()
