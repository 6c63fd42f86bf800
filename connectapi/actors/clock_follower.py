"""Keeps this process's wall clock on the database server's: hosts whose clocks disagree
then date what they record alike (a push's time, a pause after a failure and when it
ends, which nights are past), as leases and budgets already are (they are judged in the
database: storage.leases)."""

from __future__ import annotations

import logging

from ..engine import NextRound, RoundsActor, SystemClock, Wake
from ..storage.clock import database_offset
from ..storage.database import RECORD_AWAY, RECORD_BUSY, Database

log = logging.getLogger("connectapi.clock")
FOLLOW_EVERY = 60.0
# An offset this large is worth a line in the log (an NTP-kept host is within milliseconds).
TOLD_BEYOND = 1.0
# A measure over a longer round trip is not taken: its error could be as large.
TRUSTED_ROUND_TRIP = 0.5


class ClockFollower(RoundsActor[Wake]):
    name = "clock-follower"
    waits_out = RECORD_AWAY
    waits_out_briefly = RECORD_BUSY

    def __init__(self, db: Database, clock: SystemClock, every: float = FOLLOW_EVERY) -> None:
        self._db = db
        self._clock = clock
        self.interval = every
        self._told = False

    async def round(self) -> NextRound:
        offset, round_trip = await database_offset(self._db)
        if round_trip > TRUSTED_ROUND_TRIP:
            return NextRound()
        self._clock.follow(offset)
        if abs(offset) > TOLD_BEYOND and not self._told:
            log.warning("this host's clock is %.1f s off the database's: the service keeps the database's time",
                        -offset)
            self._told = True
        elif abs(offset) <= TOLD_BEYOND:
            self._told = False
        return NextRound()
