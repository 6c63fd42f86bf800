"""The one place that calls the channel manager: pacing, Retry-After, backoff, fairness.

Every call goes through here. Per property and kind (availability, restrictions) there
is a lane: one call in flight at a time, paced against that property's write budget at
the channel manager, so that in steady state it never has to answer 429. Reads share the
account-wide read budget. A 429 pauses the property for its Retry-After (a minute when
absent); a 5xx or a timeout backs it off exponentially with jitter.

Fairness comes from the lanes: a property flooding its own lane waits on its own budget
and never holds another property's call. (A single mailbox served one message at a
time would put every property behind whichever call is in flight; this is why this
actor serves its callers concurrently, lane by lane, instead.)
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

import trio

from ..channel.client import ChannelManagerClient, ChannelManagerError, Rejected, Throttled, Unavailable
from ..domain.sliding_window import SlidingWindow
from ..engine import Clock

from ..metrics import CM_CALLS

log = logging.getLogger("connectapi.channel")
Kind = Literal["availability", "restrictions"]
# Our windows run a little longer than the channel manager's: it counts a call when it
# arrives, we when we send, and a call that travels faster than the one ten calls before
# it would otherwise land inside the channel manager's minute (seen under load as 429s
# with Retry-After: 1).
PACING_WINDOW = 60.0 + 2.0


@dataclass(frozen=True, slots=True)
class PushOutcome:
    ok: bool
    warnings: tuple[str, ...] = ()
    error: str | None = None
    retry_at: float | None = None  # monotonic time before which the property is paused


@dataclass(frozen=True, slots=True)
class ChannelBudgets:
    """The channel manager's budgets. Pacing uses them as they are: at most this many calls."""

    availability_per_minute: int = 10
    restrictions_per_minute: int = 10
    reads_per_minute: int = 10


@dataclass
class _PropertyState:
    windows: dict[str, SlidingWindow] = field(default_factory=dict)
    lanes: dict[str, trio.Lock] = field(default_factory=dict)
    paused_until: float = 0.0
    failures: int = 0


class ChannelManagerActor:
    THROTTLE_PAUSE = 60.0  # when a 429 names no Retry-After (the channel manager's own advice)
    BACKOFF_BASE = 2.0
    BACKOFF_MAX = 300.0

    def __init__(self, client: ChannelManagerClient, clock: Clock, budgets: ChannelBudgets | None = None,
                 jitter: Callable[[], float] = random.random) -> None:
        self._client = client
        self._clock = clock
        self._budgets = budgets or ChannelBudgets()
        self._jitter = jitter
        self._properties: dict[int, _PropertyState] = {}
        self._reads = SlidingWindow(self._budgets.reads_per_minute, PACING_WINDOW)
        self._read_lock = trio.Lock()
        self.calls = 0
        self.throttled = 0

    def _state(self, property_id: int) -> _PropertyState:
        state = self._properties.get(property_id)
        if state is None:
            state = self._properties[property_id] = _PropertyState()
        return state

    def paused_until(self, property_id: int) -> float:
        return self._state(property_id).paused_until

    def failures(self, property_id: int) -> int:
        """Failed calls in a row for the property (429s excluded: those are pacing, not failure)."""
        return self._state(property_id).failures

    async def push(self, property_id: int, kind: Kind, values: list[dict[str, Any]]) -> PushOutcome:
        """Send one call for the property, when its lane, its pause and its budget allow."""
        state = self._state(property_id)
        lane = state.lanes.setdefault(kind, trio.Lock())
        limit = self._budgets.availability_per_minute if kind == "availability" else self._budgets.restrictions_per_minute
        window = state.windows.setdefault(kind, SlidingWindow(limit, PACING_WINDOW))
        async with lane:
            await self._wait_for_slot(state, window)
            window.charge(self._clock.monotonic())
            self.calls += 1
            try:
                if kind == "availability":
                    warnings = await self._client.push_availability(values)
                else:
                    warnings = await self._client.push_restrictions(values)
            except ChannelManagerError as exc:
                CM_CALLS.labels(kind, "throttled" if isinstance(exc, Throttled) else "failed").inc()
                return self._failed(state, exc)
        CM_CALLS.labels(kind, "ok").inc()
        state.failures = 0
        return PushOutcome(True, tuple(warnings))

    async def create_property(self, title: str, currency: str) -> str:
        self.calls += 1
        return await self._client.create_property(title, currency)

    async def create_room_type(self, cm_property_id: str, title: str, rooms: int) -> str:
        self.calls += 1
        return await self._client.create_room_type(cm_property_id, title, rooms)

    async def create_rate_plan(self, cm_property_id: str, cm_room_type_id: str, title: str) -> str:
        self.calls += 1
        return await self._client.create_rate_plan(cm_property_id, cm_room_type_id, title)

    async def read(self, property_id: int, kind: Kind, cm_property_id: str, first: date, last: date) -> Any:
        """A read within the account-wide read budget (the reconciler's)."""
        async with self._read_lock:
            await self._wait_for_slot(_PropertyState(), self._reads)
            self._reads.charge(self._clock.monotonic())
            self.calls += 1
            CM_CALLS.labels(f"read-{kind}", "made").inc()
            if kind == "availability":
                return await self._client.read_availability(cm_property_id, first, last)
            return await self._client.read_restrictions(cm_property_id, first, last)

    async def _wait_for_slot(self, state: _PropertyState, window: SlidingWindow) -> None:
        while True:
            now = self._clock.monotonic()
            wait = max(state.paused_until - now, window.wait_for(now) or 0.0)
            if wait <= 0:
                return
            await trio.sleep(wait)

    def _failed(self, state: _PropertyState, exc: ChannelManagerError) -> PushOutcome:
        now = self._clock.monotonic()
        if isinstance(exc, Throttled):
            self.throttled += 1
            pause = exc.retry_after if exc.retry_after is not None else self.THROTTLE_PAUSE
        else:
            state.failures += 1
            base = min(self.BACKOFF_MAX, self.BACKOFF_BASE * 2 ** (state.failures - 1))
            pause = base * (0.5 + self._jitter() / 2)  # jitter in [base/2, base)
            if isinstance(exc, Rejected):
                pause = self.BACKOFF_MAX  # our fault: retrying soon will not help
        state.paused_until = max(state.paused_until, now + pause)
        log.warning("channel manager call failed (%s); property paused %.1fs", exc, pause)
        return PushOutcome(False, error=str(exc), retry_at=state.paused_until)


__all__ = ["ChannelBudgets", "ChannelManagerActor", "Kind", "PushOutcome", "Unavailable"]
