"""Reading the channel manager's grid back, one property at a time, oldest check first.

Within the account's read budget (the ChannelManagerActor paces every read), the grid of
a property's writable horizon is compared with the cells the record believes are in
sync; any cell the channel manager holds differently is marked dirty again, and the
pushers put the record's value back.
"""

from __future__ import annotations

import logging
from datetime import date, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import trio

from ..channel.client import ChannelManagerError
from ..domain.ari_write import HORIZON_DAYS
from ..domain.channel_values import NEUTRAL, rate_text, restriction_fields
from ..engine import Clock
from ..storage import properties, pushes
from ..storage.database import Database, StorageUnavailable
from .channel_manager import ChannelManagerActor
from .push_scheduler import PushScheduler

log = logging.getLogger("connectapi.channel")


class Reconciler:
    IDLE = 60.0  # nothing to check: look again after this
    # A property is compared again at most this often: the account's read budget (ten a
    # minute) is shared by every property, and by the operator's channel-grid reads.
    RECHECK_AFTER = timedelta(minutes=15)

    def __init__(self, db: Database, channel: ChannelManagerActor, pushes_: PushScheduler, clock: Clock) -> None:
        self._db = db
        self._channel = channel
        self._pushes = pushes_
        self._clock = clock

    async def run_forever(self) -> None:
        while True:
            try:
                oldest = await pushes.next_to_check(self._db)
                if oldest is None:
                    await trio.sleep(self.IDLE)
                    continue
                property_id, checked_at = oldest
                if checked_at is not None:
                    due_in = (checked_at + self.RECHECK_AFTER - self._clock.now()).total_seconds()
                    if due_in > 0:
                        await trio.sleep(min(due_in, self.IDLE))
                        continue
                await self.check(property_id)
            except (StorageUnavailable, ChannelManagerError) as exc:
                log.warning("reconciler: %s", exc)
                await trio.sleep(self.IDLE)

    async def check(self, property_id: int) -> dict[str, int]:
        """Compare one property; returns how many cells of each resource were marked dirty."""
        ids = await properties.channel_ids(self._db, property_id)
        prop = await properties.get_property(self._db, property_id)
        if ids is None or ids.property_id is None or prop is None:
            return {}
        first = self._clock.today(ZoneInfo(prop.timezone))
        last = first + timedelta(days=HORIZON_DAYS)
        held_availability = await self._channel.read(property_id, "availability", ids.property_id, first, last)
        held_restrictions = await self._channel.read(property_id, "restrictions", ids.property_id, first, last)
        ours = await pushes.in_sync_cells(self._db, property_id, first, last)

        def held(grid: dict[str, Any], cm_id: str | None, night: date) -> Any:
            return grid.get(cm_id or "", {}).get(night.isoformat())

        wrong_availability = [c for c in ours["availability"]
                              if held(held_availability, ids.room_types.get(c.entity_id), c.night) != c.value]
        wrong_rates = []
        for cell in ours["rates"]:
            fields = held(held_restrictions, ids.rate_plans.get(cell.entity_id), cell.night) or {}
            if fields.get("rate") is None or Decimal(fields["rate"]) != Decimal(rate_text(cell.value, ids.currency)):
                wrong_rates.append(cell)
        wrong_restrictions = []
        for cell in ours["restrictions"]:
            fields = held(held_restrictions, ids.rate_plans.get(cell.entity_id), cell.night) or {}
            # A field the channel manager does not show holds its neutral value.
            if any(fields.get(name, NEUTRAL[name]) != value for name, value in restriction_fields(cell.value).items()):
                wrong_restrictions.append(cell)
        marked = {
            "availability": await pushes.mark_dirty_again(self._db, "availability", wrong_availability),
            "rates": await pushes.mark_dirty_again(self._db, "rates", wrong_rates),
            "restrictions": await pushes.mark_dirty_again(self._db, "restrictions", wrong_restrictions),
        }
        await pushes.record_check(self._db, property_id, self._clock.now())
        if any(marked.values()):
            log.warning("reconciler: property %s differed from the channel manager: %s", property_id, marked)
            await self._pushes.wake(property_id, bool(marked["availability"]),
                                    bool(marked["rates"] or marked["restrictions"]))
        return marked

