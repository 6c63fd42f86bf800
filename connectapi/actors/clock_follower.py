"""Keeps this process's wall clock on the database server's: hosts whose clocks disagree
then date what they record alike (a push's time, a pause after a failure and when it
ends, which nights are past), as leases and budgets already are (they are judged in the
database: storage.leases)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from ..engine import NextRound, RoundsActor, SystemClock, Wake
from ..storage.clock import database_offset
from ..storage.database import RECORD_AWAY, RECORD_BUSY, Database

log = logging.getLogger("connectapi.clock")
FOLLOW_EVERY = 60.0
# An offset this large is worth a line in the log (an NTP-kept host is within milliseconds).
TOLD_BEYOND = 1.0
# A measure over a longer round trip is not trusted: its error could be as large. Until one
# is trusted, the closest yet is followed all the same (off by its round trip at most, where
# the host's own clock may be off by minutes: a process started on a loaded host must not
# date what it records by that clock for a minute or more) and the next is taken soon.
TRUSTED_ROUND_TRIP = 0.5
MEASURE_AGAIN_SOON = 1.0
Measure = Callable[[Database], Awaitable[tuple[float, float]]]


class ClockFollower(RoundsActor[Wake]):
    name = "clock-follower"
    waits_out = RECORD_AWAY
    waits_out_briefly = RECORD_BUSY

    def __init__(self, db: Database, clock: SystemClock, every: float = FOLLOW_EVERY,
                 measure: Measure = database_offset) -> None:
        self._db = db
        self._clock = clock
        self.interval = every
        self._measure = measure
        self._told = False
        self._followed_over: float | None = None  # the round trip of the measure followed last

    async def round(self) -> NextRound:
        offset, round_trip = await self._measure(self._db)
        trusted = round_trip <= TRUSTED_ROUND_TRIP
        followed = self._followed_over
        if not trusted and followed is not None and round_trip >= followed:
            # No closer than the offset followed now: kept, and measured again soon until trusted.
            return NextRound(due_in=None if followed <= TRUSTED_ROUND_TRIP else MEASURE_AGAIN_SOON)
        self._clock.follow(offset)
        self._followed_over = round_trip
        if abs(offset) > TOLD_BEYOND and not self._told:
            log.warning("this host's clock is %.1f s off the database's: the service keeps the database's time",
                        -offset)
            self._told = True
        elif abs(offset) <= TOLD_BEYOND:
            self._told = False
        return NextRound(due_in=None if trusted else MEASURE_AGAIN_SOON)
