"""Waking the pushers: after each accepted write (PushScheduler), and at start-up and on a
timer as a safety net (PushSweeper, an actor of rounds)."""

from __future__ import annotations

import logging

from ..engine import Clock, NextRound, Registry, RoundsActor, Wake
from ..storage.database import RECORD_AWAY, RECORD_BUSY, Database
from ..storage.properties import properties_with_dirty_cells

log = logging.getLogger("connectapi.channel")


class PushScheduler:
    """Tells a property's pushers that cells may be dirty. Not an actor: it holds no state
    but the registries, and a wake is a `try_tell` (one queued wake is as good as many)."""

    def __init__(self, drains: Registry[int, Wake], projectors: Registry[int, Wake], paused: bool) -> None:
        self._drains = drains
        self._projectors = projectors
        self.paused = paused

    async def wake(self, property_id: int, availability: bool, rates_or_restrictions: bool) -> None:
        if self.paused:
            return
        if availability:
            await self._drains.try_tell(property_id, Wake())
        if rates_or_restrictions:
            await self._projectors.try_tell(property_id, Wake())


class PushSweeper(RoundsActor[Wake]):
    """Dirty marks live in the record: after a restart, or a missed wake, this finds them."""

    name = "push-sweep"
    waits_out = RECORD_AWAY
    waits_out_briefly = RECORD_BUSY

    def __init__(self, db: Database, scheduler: PushScheduler, every: float, clock: Clock) -> None:
        self._db = db
        self._scheduler = scheduler
        self.interval = every
        self._clock = clock

    async def round(self) -> NextRound:
        # Cells the channel manager refused are found here once their retry is due: the
        # pusher that sent them has given its lease back and waits for no timer of its own.
        for property_id in await properties_with_dirty_cells(self._db, self._clock.now()):
            await self._scheduler.wake(property_id, True, True)
        return NextRound()
