"""Exact sliding-window counters: a log of (time, amount) per subject, not fixed buckets.

An event at time t counts for every `now` in [t, t + window). Times are monotonic
seconds (the engine's clock), so tests drive them with a fake clock.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WindowState:
    limit: int
    window: float
    used: int
    reset_after: float  # seconds until the oldest counted event leaves; 0 when empty

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


class SlidingWindow:
    __slots__ = ("limit", "window", "_log", "_used")

    def __init__(self, limit: int, window: float) -> None:
        if limit < 0 or window <= 0:
            raise ValueError("a window needs a non-negative limit and a positive length")
        self.limit = limit
        self.window = window
        self._log: deque[tuple[float, int]] = deque()
        self._used = 0

    def _expire(self, now: float) -> None:
        log = self._log
        horizon = now - self.window
        while log and log[0][0] <= horizon:
            _, amount = log.popleft()
            self._used -= amount

    def wait_for(self, now: float, amount: int = 1) -> float | None:
        """None when `amount` fits now; otherwise seconds until it would fit.

        An amount larger than the whole limit never fits; it waits a full window, the
        most honest figure we can give for something that will be refused again.
        """
        self._expire(now)
        if self._used + amount <= self.limit:
            return None
        if amount > self.limit:
            return self.window
        must_free = self._used + amount - self.limit
        freed = 0
        for at, counted in self._log:
            freed += counted
            if freed >= must_free:
                return at + self.window - now
        return self.window  # unreachable while _used matches the log

    def charge(self, now: float, amount: int = 1) -> None:
        if amount <= 0:
            return
        self._expire(now)
        log = self._log
        if log and log[-1][0] == now:
            log[-1] = (now, log[-1][1] + amount)
        else:
            log.append((now, amount))
        self._used += amount

    def state(self, now: float) -> WindowState:
        self._expire(now)
        reset = self._log[0][0] + self.window - now if self._log else 0.0
        return WindowState(self.limit, self.window, self._used, reset)

    def is_empty(self, now: float) -> bool:
        self._expire(now)
        return not self._log


def whole_seconds(seconds: float) -> int:
    """Seconds as the whole number a client should wait: rounded up, at least 1 when positive."""
    if seconds <= 0:
        return 0
    return max(1, math.ceil(seconds - 1e-9))
