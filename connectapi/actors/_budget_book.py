"""A set of named sliding windows charged all-or-nothing."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from ..domain.budgets import Budgets
from ..domain.errors import ApiError
from ..domain.sliding_window import SlidingWindow, WindowState, whole_seconds

Subject = tuple[str, Hashable]  # (budget name, whose: an address, a key id, the property)


class BudgetBook:
    def __init__(self, budgets: Budgets) -> None:
        self._budgets = budgets
        self._windows: dict[Subject, SlidingWindow] = {}

    def window(self, name: str, whose: Hashable, limit: int | None = None) -> SlidingWindow:
        subject = (name, whose)
        window = self._windows.get(subject)
        budget = self._budgets.get(name)
        if window is None:
            window = SlidingWindow(budget.limit, budget.window)
            self._windows[subject] = window
        if limit is not None:
            window.limit = limit
        return window

    def charge_all(self, now: float, charges: Sequence[tuple[SlidingWindow, str, int]]) -> None:
        """Charge every (window, name, amount) or none: the first that does not fit refuses."""
        for window, name, amount in charges:
            wait = window.wait_for(now, amount)
            if wait is not None:
                seconds = whole_seconds(wait)
                raise ApiError(
                    "RATE_LIMITED",
                    f"the {name} budget is used up; retry in {seconds}s",
                    scope=name,
                    retry_after_seconds=seconds,
                )
        for window, _, amount in charges:
            window.charge(now, amount)

    def state(self, name: str, whose: Hashable, now: float) -> WindowState:
        return self.window(name, whose).state(now)

    def sweep(self, now: float) -> None:
        """Forget windows with nothing left in them; they are recreated on demand."""
        for subject in [s for s, w in self._windows.items() if w.is_empty(now)]:
            del self._windows[subject]

    def is_empty(self, now: float) -> bool:
        self.sweep(now)
        return not self._windows

    def __len__(self) -> int:
        return len(self._windows)
