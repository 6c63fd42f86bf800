"""Per property: the InventoryDrain (availability) and the AriProjector (rates and restrictions).

Each round reads the property's dirty cells, drops those equal to what the channel
manager already holds, coalesces the rest into one call, sends it through the
ChannelManagerActor, then marks exactly the versions it read as pushed. A failure leaves
the cells dirty and the round is tried again when the property's pause ends; with the
record away, when it is back (tried every few seconds).

One process at a time pushes a property: rounds run under the property's push lease
(actors.push_leases), which both pushers of this process share. A pusher that finds it
held by another process leaves the cells to that process and looks again when its lease
would run out (the holder died: the pusher takes the property over).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from ..domain.channel_values import rate_text, restriction_fields
from ..domain.coalesce import RangeValue, coalesce
from ..engine import Actor, ActorError, Clock, Mailbox, RoundsActor, Wake
from ..storage import properties, pushes
from ..storage.database import RECORD_AWAY, Database, RecordBusy
from ..storage.pushes import DirtyCell
from .channel_manager import CALL_ASK_TIMEOUT
from .messages.channel_manager import ChannelMessage, Kind, Push, PushOutcome
from .push_leases import CALL_NEEDS, LOOK_AGAIN_AFTER, PushLeases

log = logging.getLogger("connectapi.channel")
MAX_CELLS_PER_PUSH = 50_000  # a year of 20 room types is 7,320: this bounds a body, not a workload
RETRY_UNMAPPED = 60.0
RETRY_CHANNEL_ACTOR = 5.0  # the channel-manager actor restarting: its restart backoff is shorter
OUTAGE_WAIT_MAX = 5.0  # the record away: look again this often at most
# A call is asked to be over this long before the lease runs out.
LEASE_MARGIN = 1.0


@dataclass(frozen=True, slots=True)
class Round:
    sent_cells: int
    dropped_cells: int
    outcome: PushOutcome | None  # None when nothing needed sending
    lost: bool = False  # the lease went to another process before the call: nothing was sent


LOST = Round(0, 0, None, lost=True)


class _Pusher(Actor[Wake]):
    """Wake messages only: told, never asked (a mailbox of one; one queued wake is as good
    as many)."""

    kind = ""

    def __init__(self, property_id: int, db: Database, cm: Mailbox[ChannelMessage], clock: Clock,
                 leases: PushLeases) -> None:
        self.property_id = property_id
        self._db = db
        self._cm = cm
        self._clock = clock
        self._leases = leases

    _retry_at: float | None = None  # monotonic; a failed round is tried again then
    _watching = False  # the retry is a look at a lease another process holds
    _outage: float = 0.0
    _busy_in_a_row: int = 0

    async def on_start(self) -> None:
        # A crashed incarnation's part in the lease is no work of this one's.
        self._leases.forget(self.property_id, self.kind)

    async def handle(self, message: Wake) -> None:
        # While a retry is pending its timer runs the next round; once its time has come, a
        # wake may run it (queued wakes are served before a due timer). A wake while another
        # process holds the lease looks at it again: it may have been given back since.
        if self._retry_at is None or self._watching or self._retry_at <= self._clock.monotonic():
            self._retry_at = None
            await self._rounds()

    def wake_in(self) -> float | None:
        return None if self._retry_at is None else max(0.0, self._retry_at - self._clock.monotonic())

    async def on_timer(self) -> None:
        self._retry_at = None
        await self._rounds()

    def may_stop_when_idle(self) -> bool:
        return self._retry_at is None

    async def _rounds(self) -> None:
        """Push until nothing is dirty, under the property's lease, then give it back; after
        a failure, leave the cells dirty, keep the lease and set the time to try again
        (waiting between messages, so a shutdown never waits on it). With the lease held by
        another process, set the time to look at it again."""
        self._watching = False
        while True:
            try:
                elsewhere = await self._leases.take(self.property_id, self.kind)
                if elsewhere is not None:
                    self._retry_at = self._clock.monotonic() + elsewhere + LOOK_AGAIN_AFTER
                    self._watching = True
                    return
                done = await self.push_round()
                if done is None:  # nothing dirty left
                    await self._leases.leave(self.property_id, self.kind)
                    return
            except RECORD_AWAY as exc:
                # The cells stay dirty in the record; push them once it answers again. A
                # refusal for now that never clears is a bug: a crash after as many tries as
                # the background rounds give one.
                self._busy_in_a_row = self._busy_in_a_row + 1 if isinstance(exc, RecordBusy) else 0
                if self._busy_in_a_row > RoundsActor.brief_rounds:
                    raise
                if self._busy_in_a_row:
                    log.warning("%s of property %d refused for now (%d in a row): %s", self.kind, self.property_id,
                                self._busy_in_a_row, exc)
                elif not self._outage:
                    log.warning("%s of property %d waits for the record: %s", self.kind, self.property_id, exc)
                self._outage = min(OUTAGE_WAIT_MAX, max(1.0, self._outage * 2))
                self._retry_at = self._clock.monotonic() + self._outage
                return
            self._outage = 0.0
            self._busy_in_a_row = 0
            if done.lost:
                continue  # taken over: the next take says by whom, and until when
            if done.outcome is not None and not done.outcome.ok:
                self._retry_at = max(done.outcome.retry_at or 0.0, self._clock.monotonic())
                return

    async def push_round(self) -> Round | None:
        raise NotImplementedError

    async def _send(self, kind: Kind, values: list[dict[str, Any]]) -> PushOutcome | None:
        """The call, under the lease; None when the lease went to another process (nothing sent)."""
        paused_until = await pushes.next_attempt(self._db, self.property_id)
        if paused_until is not None and (wait := (paused_until - self._clock.now()).total_seconds()) > 0:
            # A failure recorded by this process or the one that pushed the property before.
            return PushOutcome(False, retry_at=self._clock.monotonic() + wait, deferred=True)
        lease_until = await self._leases.ensure(self.property_id, CALL_NEEDS)
        if lease_until is None:
            return None
        try:
            outcome = await self._cm.ask(Push(self.property_id, kind, values, lease_until - LEASE_MARGIN),
                                         CALL_ASK_TIMEOUT)
        except ActorError as exc:
            outcome = PushOutcome(False, error=f"the channel-manager actor could not take the call ({exc})",
                                  retry_at=self._clock.monotonic() + RETRY_CHANNEL_ACTOR)
        if outcome.deferred:
            return outcome  # pacing: nothing was sent, nothing to record; the round is tried then
        now = self._clock.now()
        if outcome.ok and outcome.warnings:
            error = f"the channel manager dropped {len(outcome.warnings)} value(s): {outcome.warnings[0]}"
            await pushes.record_outcome(self._db, self.property_id, now, "partial", error)
        elif outcome.ok:
            await pushes.record_outcome(self._db, self.property_id, now, "ok", None)
        else:
            retry_in = 0.0 if outcome.retry_at is None else max(0.0, outcome.retry_at - self._clock.monotonic())
            await pushes.record_outcome(self._db, self.property_id, now, "failed", outcome.error,
                                        now + timedelta(seconds=retry_in) if retry_in > 0 else None,
                                        outcome.failures)
        return outcome

    async def _unmapped(self, what: str) -> Round:
        error = f"not mapped to the channel manager: {what}"
        await pushes.record_outcome(self._db, self.property_id, self._clock.now(), "failed", error)
        return Round(0, 0, PushOutcome(False, error=error, retry_at=self._clock.monotonic() + RETRY_UNMAPPED))


def _split(cells: list[DirtyCell]) -> tuple[list[DirtyCell], list[DirtyCell]]:
    """(to send, to drop): a cell equal to what the channel manager holds is only marked."""
    send = [c for c in cells if c.value != c.pushed]
    drop = [c for c in cells if c.value == c.pushed]
    return send, drop


def _by_entity(cells: Sequence[tuple[int, date, Hashable]]) -> dict[int, dict[date, Hashable]]:
    grouped: dict[int, dict[date, Hashable]] = {}
    for entity, night, value in cells:
        grouped.setdefault(entity, {})[night] = value
    return grouped


class InventoryDrain(_Pusher):
    kind = "availability"

    async def push_round(self) -> Round | None:
        dirty = await pushes.dirty_availability(self._db, self.property_id, MAX_CELLS_PER_PUSH)
        if not dirty:
            return None
        send, drop = _split(dirty)
        outcome = None
        if send:
            ids = await properties.channel_ids(self._db, self.property_id)
            missing = sorted({c.entity_id for c in send} - set(ids.room_types if ids else {}))
            if ids is None or ids.property_id is None or missing:
                return await self._unmapped(f"room types {missing}" if ids and ids.property_id else "property")
            values = [
                {"property_id": ids.property_id, "room_type_id": ids.room_types[v.entity_id],
                 "date_from": v.first.isoformat(), "date_to": v.last.isoformat(), "availability": v.value}
                for entity, cells in _by_entity([(c.entity_id, c.night, c.value) for c in send]).items()
                for v in coalesce(entity, cells, weekday_masks=False)
            ]
            outcome = await self._send("availability", values)
            if outcome is None:
                return LOST
            if not outcome.ok:
                return Round(0, 0, outcome)
        await pushes.mark_availability_pushed(self._db, dirty)
        return Round(len(send), len(drop), outcome)


class AriProjector(_Pusher):
    kind = "restrictions"

    async def push_round(self) -> Round | None:
        rates = await pushes.dirty_rates(self._db, self.property_id, MAX_CELLS_PER_PUSH)
        restrictions = await pushes.dirty_restrictions(self._db, self.property_id, MAX_CELLS_PER_PUSH)
        if not rates and not restrictions:
            return None
        send_rates, drop_rates = _split(rates)
        send_restrictions, drop_restrictions = _split(restrictions)
        outcome = None
        if send_rates or send_restrictions:
            ids = await properties.channel_ids(self._db, self.property_id)
            plans = {c.entity_id for c in send_rates + send_restrictions}
            missing = sorted(plans - set(ids.rate_plans if ids else {}))
            if ids is None or ids.property_id is None or missing:
                return await self._unmapped(f"rate plans {missing}" if ids and ids.property_id else "property")
            # One value per plan and night: the rate and the restrictions that changed.
            merged: dict[tuple[int, date], dict[str, Any]] = {}
            for cell in send_rates:
                merged.setdefault((cell.entity_id, cell.night), {})["rate"] = rate_text(cell.value, ids.currency)
            for cell in send_restrictions:
                merged.setdefault((cell.entity_id, cell.night), {}).update(restriction_fields(cell.value))
            frozen = [(plan, night, tuple(sorted(fields.items()))) for (plan, night), fields in merged.items()]
            values = [
                {"property_id": ids.property_id, "rate_plan_id": ids.rate_plans[v.entity_id],
                 "date_from": v.first.isoformat(), "date_to": v.last.isoformat(),
                 **({"days": list(v.days)} if v.days else {}), **dict(v.value)}  # type: ignore[call-overload]
                for plan, cells in _by_entity(frozen).items()
                for v in coalesce(plan, cells, weekday_masks=True)
            ]
            outcome = await self._send("restrictions", values)
            if outcome is None:
                return LOST
            if not outcome.ok:
                return Round(0, 0, outcome)
        await pushes.mark_rates_pushed(self._db, rates)
        await pushes.mark_restrictions_pushed(self._db, restrictions)
        return Round(len(send_rates) + len(send_restrictions), len(drop_rates) + len(drop_restrictions), outcome)


__all__ = ["AriProjector", "InventoryDrain", "RangeValue", "Round"]
