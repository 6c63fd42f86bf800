"""Waking the pushers: after each accepted write, at start-up, and on a timer as a safety net."""

from __future__ import annotations

import logging

import trio

from ..engine import Registry
from ..storage.database import Database, StorageUnavailable
from ..storage.properties import properties_with_dirty_cells
from .pushers import Wake

log = logging.getLogger("connectapi.channel")


class PushScheduler:
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

    async def sweep_forever(self, db: Database, every: float) -> None:
        """Dirty marks live in the record: after a restart, or a missed wake, this finds them."""
        while True:
            try:
                for property_id in await properties_with_dirty_cells(db):
                    await self.wake(property_id, True, True)
            except StorageUnavailable as exc:
                log.warning("push sweep could not read the record: %s", exc)
            await trio.sleep(every)
