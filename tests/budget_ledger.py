"""The budgets' rules in memory, for one process: what the record's statement
(`connectapi_charge_budgets`, migration 0016) does, in Python.

The service never counts here: a second process would not see these counts. This is the
oracle the unit tests hold the statement to, and the in-memory figure `bench.scale`
compares the shared counts with.
"""

from __future__ import annotations

from collections.abc import Sequence

from connectapi.budgets.charges import Charge, Counted, Verdict
from connectapi.budgets.window import SlidingWindow


class BudgetLedger:
    def __init__(self) -> None:
        self._windows: dict[str, SlidingWindow] = {}

    def _window(self, charge: Charge) -> SlidingWindow:
        window = self._windows.get(charge.subject)
        if window is None:
            window = self._windows[charge.subject] = SlidingWindow(charge.limit, charge.window)
        window.limit = charge.limit  # a limit may be raised (the owner's bookings a day)
        return window

    def charge(self, now: float, charges: Sequence[Charge]) -> list[Counted]:
        windows = [self._window(c) for c in charges]
        verdicts = [Verdict.UNCHECKED] * len(charges)
        waits: list[float | None] = [None] * len(charges)
        i = 0
        while i < len(charges):
            stage, start, refused = charges[i].stage, i, False
            while i < len(charges) and charges[i].stage == stage:
                c, w = charges[i], windows[i]
                if c.need is None or w.wait_for(now, c.need) is None:
                    verdicts[i] = Verdict.CHARGED
                elif c.fallback is not None and w.wait_for(now, c.fallback) is None:
                    verdicts[i] = Verdict.DEFERRED
                else:
                    # Until the smallest need that lets the request on fits.
                    smallest = c.fallback if c.fallback is not None else c.need
                    verdicts[i], waits[i], refused = Verdict.REFUSED, w.wait_for(now, smallest), True
                    break
                i += 1
            if refused:
                for j in range(start, len(charges)):
                    if verdicts[j] is not Verdict.REFUSED:
                        verdicts[j] = Verdict.UNCHECKED
                break
            for j in range(start, i):
                if verdicts[j] is Verdict.CHARGED:
                    windows[j].charge(now, charges[j].amount)
        return [Counted(v, w.state(now), wait) for v, w, wait in zip(verdicts, windows, waits, strict=True)]
