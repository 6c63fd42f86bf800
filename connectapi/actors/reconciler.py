"""Reading the channel manager's grid back, one property at a time, oldest check first.

Within the account's read budget (the ChannelManagerActor paces every read), the grid of
a property's writable horizon is compared with the cells the record believes are in
sync; any cell the channel manager holds differently is marked dirty again, and the
pushers put the record's value back.
"""

from __future__ import annotations

import logging
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Final, TypeVar, cast
from zoneinfo import ZoneInfo

from ..channel.client import AvailabilityGrid, RestrictionFields, RestrictionsGrid
from ..domain.ari_write import HORIZON_DAYS
from ..domain.channel_values import NEUTRAL, rate_text, restriction_fields
from ..domain.sell_modes import ROOM_PRICE
from ..engine import ActorError, Clock, Mailbox, NextRound, RoundsActor
from ..storage import properties, pushes
from ..storage.database import RECORD_AWAY, RECORD_BUSY, Database
from .channel_manager import CALL_ASK_TIMEOUT
from .messages.channel_manager import ChannelMessage, ReadGrid
from .messages.reconciler import Checked, CheckProperty, ReconcilerMessage
from .wakeups import Wakeups

log = logging.getLogger("connectapi.channel")


class Reconciler(RoundsActor[ReconcilerMessage]):
    name = "reconciler"
    interval = 60.0  # nothing to check: look again after this
    # The record away, or the channel-manager actor restarting: look again soon.
    waits_out = (*RECORD_AWAY, ActorError)
    waits_out_briefly = RECORD_BUSY
    # A property is compared again at most this often: the account's read budget (ten a
    # minute) is shared by every property, and by the operator's channel-grid reads.
    RECHECK_AFTER = timedelta(minutes=15)

    def __init__(self, db: Database, channel: Mailbox[ChannelMessage], wakeups: Wakeups, clock: Clock,
                 automatic: bool = True) -> None:
        self._automatic = automatic  # False: only the checks asked for (CONNECTAPI_RECONCILE=off)
        self._db = db
        self._channel = channel
        self._wakeups = wakeups
        self._clock = clock
        self._told_unread: set[int] = set()  # properties whose per-person prices read back without `rates`

    async def round(self) -> NextRound:
        if not self._automatic:
            return NextRound()
        oldest = await pushes.next_to_check(self._db)
        if oldest is None:
            return NextRound()
        property_id, checked_at = oldest
        if checked_at is not None:
            due_in = (checked_at + self.RECHECK_AFTER - self._clock.now()).total_seconds()
            if due_in > 0:
                return NextRound(due_in=due_in)
        checked = await self.check(property_id)
        if checked.retry_at is not None:  # the read budget, shared with the operator's grid reads
            return NextRound(due_in=checked.retry_at - self._clock.monotonic())
        if checked.error is not None:
            log.warning("reconciler: %s", checked.error)
            # Its turn is taken all the same: a property whose grid cannot be read must not
            # keep every other property from being compared.
            await pushes.record_check(self._db, property_id, self._clock.now())
            return NextRound()  # the channel manager did not answer: after the interval
        return NextRound(more=True)  # the next property at once: the read budget paces us

    async def handle_message(self, message: ReconcilerMessage) -> Any:
        if isinstance(message, CheckProperty):
            return await self.check(message.property_id)
        return await super().handle_message(message)

    async def check(self, property_id: int) -> Checked:
        """Compare one property; how many cells of each resource were marked dirty."""
        ids = await properties.channel_ids(self._db, property_id)
        prop = await properties.get_property(self._db, property_id)
        if ids is None or ids.property_id is None or prop is None:
            return Checked({})
        if ids.mode != "live":
            # A test record's channel is the test sandbox, not this channel manager (whose
            # grid under the live ids is the live record's): it is not checked.
            return Checked({})
        first = self._clock.today(ZoneInfo(prop.timezone))
        last = first + timedelta(days=HORIZON_DAYS)
        read_availability = await self._channel.ask(ReadGrid("availability", ids.property_id, first, last),
                                                    CALL_ASK_TIMEOUT)
        if read_availability.retry_at is not None:
            return Checked({}, retry_at=read_availability.retry_at)
        read_restrictions = await self._channel.ask(ReadGrid("restrictions", ids.property_id, first, last),
                                                    CALL_ASK_TIMEOUT)
        if read_restrictions.retry_at is not None:
            return Checked({}, retry_at=read_restrictions.retry_at)
        if read_availability.grid is None or read_restrictions.grid is None:
            return Checked({}, f"could not read the grid of property {property_id}: "
                               f"{read_availability.error or read_restrictions.error}")
        # Each read answers the kind it was asked for (ReadGrid's `kind`).
        held_availability = cast(AvailabilityGrid, read_availability.grid)
        held_restrictions = cast(RestrictionsGrid, read_restrictions.grid)
        ours = await pushes.in_sync_cells(self._db, property_id, first, last)

        wrong_availability = [c for c in ours["availability"]
                              if _held(held_availability, ids.room_types.get(c.entity_id), c.night) != c.value]
        wrong_rates = []
        unread = 0
        for cell in ours["rates"]:
            fields = _held(held_restrictions, ids.rate_plans.get(cell.entity_id), cell.night) or {}
            primary = (ids.occupancies.get(cell.entity_id) or [ROOM_PRICE])[-1]
            held = _held_price(fields, cell.occupancy, primary)
            if held is UNREAD:
                unread += 1
            elif not _same_rate(held, rate_text(cell.value, ids.currency)):
                wrong_rates.append(cell)
        if unread and property_id not in self._told_unread:
            self._told_unread.add(property_id)
            log.info("reconciler: the channel manager reads property %s's per-person plans back without their "
                     "occupancies' prices (rates): only the primary occupancy's price is compared", property_id)
        wrong_restrictions = []
        for cell in ours["restrictions"]:
            fields = _held(held_restrictions, ids.rate_plans.get(cell.entity_id), cell.night) or {}
            # A field the channel manager does not show holds its neutral value.
            if any(fields.get(name, NEUTRAL[name]) != value for name, value in restriction_fields(cell.value).items()):
                wrong_restrictions.append(cell)
        marked = {
            "availability": await pushes.mark_dirty_again(self._db, property_id, "availability", wrong_availability),
            "rates": await pushes.mark_dirty_again(self._db, property_id, "rates", wrong_rates),
            "restrictions": await pushes.mark_dirty_again(self._db, property_id, "restrictions", wrong_restrictions),
        }
        await pushes.record_check(self._db, property_id, self._clock.now())
        if any(marked.values()):
            log.warning("reconciler: property %s differed from the channel manager: %s", property_id, marked)
            await self._wakeups.cells_dirty(property_id, bool(marked["availability"]),
                                    bool(marked["rates"] or marked["restrictions"]))
        return Checked(marked)


Held = TypeVar("Held")


def _held(grid: dict[str, dict[str, Held]], cm_id: str | None, night: date) -> Held | None:
    """What the channel manager's grid holds for an entity (by its id there) on a night."""
    return grid.get(cm_id or "", {}).get(night.isoformat())


# A per-person cell's price the channel manager's read does not show (see _held_price).
UNREAD: Final = object()


def _held_price(fields: RestrictionFields, occupancy: int, primary: int) -> str | None | object:
    """The price the channel manager holds for a cell's occupancy: a per-room plan's `rate`,
    a per-person plan's entry of `rates` (its `rate` is the primary occupancy's). Channex
    documents no read of a per-person night (decision 0136): a night read with a `rate` and
    no `rates` shows the primary's price alone, and the others' are UNREAD (not compared,
    rather than pushed again every check); a night read with neither holds nothing."""
    if occupancy == ROOM_PRICE:
        return fields.get("rate")
    if "rates" in fields:
        return next((held["rate"] for held in fields["rates"] if held["occupancy"] == occupancy), None)
    if "rate" in fields:
        return fields["rate"] if occupancy == primary else UNREAD
    return None


def _same_rate(held: Any, ours: str) -> bool:
    """A rate the channel manager holds equals ours; anything unreadable differs (and is
    put back)."""
    if held is None:
        return False
    try:
        return Decimal(str(held)) == Decimal(ours)
    except (InvalidOperation, ValueError):
        return False
