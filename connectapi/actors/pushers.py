"""Per property: the InventoryDrain (availability) and the AriProjector (rates and restrictions).

A wake starts a short gathering window (GATHER_QUIET after the last wake, GATHER_MAX
after the first at most): an integrator's change sent as the contract splits it (PUT
/rates, then PUT /restrictions at once) is one call, as Channex's certification counts.
Each round then drops dirty cells of nights that became past (Channex refuses them),
reads the rest, drops those equal to what the channel manager already holds, coalesces
the rest into one call, sends it through the ChannelManagerActor, then marks exactly the
versions it read as pushed, except those the channel manager refused in its 200 (meta.
warnings): those stay dirty, marked refused with what it said, and are offered again
with backoff (channel_refusals). A failure leaves the cells dirty and the round is tried
again when the property's pause ends; with the record away, when it is back (tried every
few seconds).

One process at a time pushes a property: rounds run under the property's push lease
(actors.push_leases), which both pushers of this process share. A pusher that finds it
held by another process leaves the cells to that process and looks again when its lease
would run out (the holder died: the pusher takes the property over).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import ContextManager, cast
from zoneinfo import ZoneInfo

from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from ..domain import emails
from ..domain.channel_values import (AvailabilityValue, ChannelValues, OccupancyRateValue, RestrictionSetting,
                                     RestrictionValue, rate_text, restriction_fields)
from ..domain.coalesce import RangeValue, coalesce
from ..domain.refusals import refused_cells, said
from ..domain.sell_modes import ROOM_PRICE
from ..engine import Actor, ActorError, AskTimeout, Clock, RoundsActor, Wake
from ..metrics import CM_PAST_DROPPED, CM_REFUSED_CELLS
from ..storage import channel_refusals, properties, pushes
from ..storage.database import RECORD_AWAY, Database, RecordBusy
from ..storage.properties import ChannelIds
from ..storage.pushes import DirtyCell
from ..tracing import spans
from .channel_manager import CALL_ASK_TIMEOUT, ChannelManagerActor
from .channel_routes import ChannelRoutes
from .messages.channel_manager import CallKind, Push, PushOutcome
from .wakeups import Wakeups
from .push_leases import CALL_NEEDS, LOOK_AGAIN_AFTER, PushLeases

log = logging.getLogger("connectapi.channel")
MAX_CELLS_PER_PUSH = 50_000  # a year of 20 room types is 7,320: this bounds a body, not a workload
RETRY_UNMAPPED = 60.0
RETRY_CHANNEL_ACTOR = 5.0  # the channel-manager actor restarting: its restart backoff is shorter
OUTAGE_WAIT_MAX = 5.0  # the record away: look again this often at most
# A call is asked to be over this long before the lease runs out.
LEASE_MARGIN = 1.0
# The gathering window (seconds): a round starts GATHER_QUIET after the last wake, and at
# most GATHER_MAX after the first (CONNECTAPI_CM_GATHER_MS sets the most; the quiet is a
# third of it). 0 sends at once.
GATHER_MAX = 1.0
# Refused cells are offered again after a minute, doubling with each refusal in a row, up
# to an hour (a refusal can clear: a rate plan re-enabled on the channel).
REFUSAL_RETRY_FIRST = timedelta(minutes=1)
REFUSAL_RETRY_MAX = timedelta(hours=1)


def refusal_backoff(tries: int) -> timedelta:
    wait: timedelta = min(REFUSAL_RETRY_MAX, REFUSAL_RETRY_FIRST * 2 ** min(tries - 1, 16))
    return wait


@dataclass(frozen=True, slots=True)
class Round:
    sent_cells: int
    dropped_cells: int
    outcome: PushOutcome | None  # None when nothing needed sending
    lost: bool = False  # the lease went to another process before the call: nothing was sent
    # Everything to push was read (no read hit its limit) and the call went through: no
    # need to read again before giving the lease back, whose statement says whether a
    # write landed meanwhile (and wakes the pushers then).
    complete: bool = False


LOST = Round(0, 0, None, lost=True)


class _Pusher(Actor[Wake]):
    """Wake messages only: told, never asked (a mailbox of one; one queued wake is as good
    as many)."""

    # What the pusher pushes, in its logs and in its part of the push lease.
    name = "availability"
    # The channel manager's call it makes: the name stored and shown for it (CallKind).
    call: CallKind = "availability"

    def __init__(self, property_id: int, db: Database, routes: ChannelRoutes, clock: Clock,
                 leases: PushLeases, gather: float = GATHER_MAX, wakeups: Wakeups | None = None) -> None:
        self.property_id = property_id
        self._db = db
        self._routes = routes
        self._clock = clock
        self._leases = leases
        self._gather = max(0.0, gather)
        self._wakeups = wakeups  # told when cells are marked pushed (a batch's waiters look again)

    _retry_at: float | None = None  # monotonic; a failed round is tried again then
    _counted = True  # the round's property is live: the metrics count what it sends
    _watching = False  # the retry is a look at a lease another process holds
    _gathering_since: float | None = None  # monotonic: the first wake of the window open now
    _outage: float = 0.0
    _busy_in_a_row: int = 0

    async def on_start(self) -> None:
        # A crashed incarnation's part in the lease is no work of this one's.
        self._leases.forget(self.property_id, self.name)

    async def handle(self, message: Wake) -> None:
        # While a retry is pending its timer runs the next round; once its time has come, a
        # wake may run it (queued wakes are served before a due timer). A wake while another
        # process holds the lease looks at it again: it may have been given back since.
        # Otherwise a wake opens, or stretches, the gathering window: its timer runs the round.
        now = self._clock.monotonic()
        if self._gathering_since is not None:
            self._retry_at = min(self._gathering_since + self._gather, now + self._gather / 3)
            return
        if self._retry_at is None or self._watching or self._retry_at <= now:
            if self._gather > 0 and not self._watching:
                self._gathering_since = now
                self._retry_at = now + self._gather / 3
                return
            self._retry_at = None
            await self._rounds()

    def wake_in(self) -> float | None:
        return None if self._retry_at is None else max(0.0, self._retry_at - self._clock.monotonic())

    async def on_timer(self) -> None:
        self._retry_at = None
        self._gathering_since = None
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
                elsewhere = await self._leases.take(self.property_id, self.name)
                if elsewhere is not None:
                    self._retry_at = self._clock.monotonic() + elsewhere + LOOK_AGAIN_AFTER
                    self._watching = True
                    return
                done = await self.push_round()
                if done is None:  # nothing left to push (refused cells wait for the sweeper at their retry)
                    await self._leases.leave(self.property_id, self.name)
                    return
            except RECORD_AWAY as exc:
                # The cells stay dirty in the record; push them once it answers again. A
                # refusal for now that never clears is a bug: a crash after as many tries as
                # the background rounds give one.
                self._busy_in_a_row = self._busy_in_a_row + 1 if isinstance(exc, RecordBusy) else 0
                if self._busy_in_a_row > RoundsActor.brief_rounds:
                    raise
                if self._busy_in_a_row:
                    log.warning("%s of property %d refused for now (%d in a row): %s", self.name, self.property_id,
                                self._busy_in_a_row, exc)
                elif not self._outage:
                    log.warning("%s of property %d waits for the record: %s", self.name, self.property_id, exc)
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
            if done.complete:
                await self._leases.leave(self.property_id, self.name)
                return

    async def push_round(self) -> Round | None:
        raise NotImplementedError

    async def _send(self, kind: CallKind, values: ChannelValues, ids: ChannelIds) -> PushOutcome | None:
        """The call, under the lease, to the channel manager of the property's mode; None
        when the lease went to another process (nothing sent). `ids.next_attempt_at`: the
        property's pause after a failure, as the record has it."""
        paused_until = ids.next_attempt_at
        if paused_until is not None and (wait := (paused_until - self._clock.now()).total_seconds()) > 0:
            # A failure recorded by this process or the one that pushed the property before.
            spans.event("paused after a failure", {"connectapi.paused_seconds": wait})
            return PushOutcome(False, retry_at=self._clock.monotonic() + wait, deferred=True)
        lease_until = await self._leases.ensure(self.property_id, CALL_NEEDS)
        if lease_until is None:
            return None
        try:
            channel, mode = self._routes.for_push(ids)
            outcome = await channel.ask(Push(self.property_id, kind, values, lease_until - LEASE_MARGIN, ids.failures,
                                             mode=mode),
                                        CALL_ASK_TIMEOUT)
        except ActorError as exc:
            # Not answered: the call may have gone out and failed (an ask that timed out), and
            # the actor keeps no pause of its own: Channex's minute, not counted as a failure
            # in a row. An actor that could not take it (restarting) is asked again sooner.
            wait = ChannelManagerActor.FAILURE_PAUSE if isinstance(exc, AskTimeout) else RETRY_CHANNEL_ACTOR
            outcome = PushOutcome(False, error=f"the channel-manager actor could not take the call ({exc})",
                                  retry_at=self._clock.monotonic() + wait, failures=ids.failures)
        if outcome.deferred or outcome.ok:
            # Pacing: nothing was sent, nothing to record; the round is tried then. A 200:
            # the round records it once it knows which cells were refused.
            return outcome
        now = self._clock.now()
        retry_in = 0.0 if outcome.retry_at is None else max(0.0, outcome.retry_at - self._clock.monotonic())
        await pushes.record_outcome(self._db, self.property_id, now, "failed", outcome.error,
                                    now + timedelta(seconds=retry_in) if retry_in > 0 else None, outcome.failures)
        return outcome

    async def _unmapped(self, what: str) -> Round:
        error = f"not mapped to the channel manager: {what}"
        await pushes.record_outcome(self._db, self.property_id, self._clock.now(), "failed", error)
        return Round(0, 0, PushOutcome(False, error=error, retry_at=self._clock.monotonic() + RETRY_UNMAPPED))


def _said_of(outcome: PushOutcome) -> str:
    """A push's outcome in a word, for its span."""
    if outcome.ok:
        return "refusals" if outcome.answer is not None and outcome.answer.refusals else "ok"
    return "deferred" if outcome.deferred else "failed"


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


class _CellPusher(_Pusher):
    """One round of a pipe: its resources' dirty cells to one call (see the module's doc).
    A subclass says which resources, how to read them and how to make the call's values."""

    resources: tuple[str, ...] = ()
    id_field = ""

    async def dirty(self, resource: str, now: datetime) -> list[DirtyCell]:
        raise NotImplementedError

    def entity_ids(self, ids: ChannelIds) -> dict[int, str]:
        raise NotImplementedError

    def values(self, ids: ChannelIds, send: dict[str, list[DirtyCell]]) -> ChannelValues:
        raise NotImplementedError

    async def push_round(self) -> Round | None:
        now = self._clock.now()
        cells = {r: await self.dirty(r, now) for r in self.resources}
        if not any(cells.values()):
            return None
        read_all = all(len(found) < MAX_CELLS_PER_PUSH for found in cells.values())
        ids = await properties.channel_ids(self._db, self.property_id)
        # The operator's metrics count the channel manager's cells: not a test record's.
        self._counted = ids is None or ids.mode == "live"
        today = self._clock.today(ZoneInfo(ids.timezone)) if ids is not None else date.min
        if any(c.night < today for found in cells.values() for c in found):
            # Channex refuses past dates: nights that became past before they were sent
            # are dropped (they stop being dirty), counted, and never sent.
            dropped_past = await pushes.drop_past(self._db, self.property_id, self.call, today)
            if self._counted:
                CM_PAST_DROPPED.inc(dropped_past)
            log.info("%s of property %d: %d dirty cell(s) of past nights dropped, never sent", self.name,
                     self.property_id, dropped_past)
            cells = {r: [c for c in found if c.night >= today] for r, found in cells.items()}
            if not any(cells.values()):
                return Round(0, dropped_past, None)
        # Refused cells are read only once their retry is due (pushes.pushable): these go again.
        offered_refused = any(c.refused for found in cells.values() for c in found)
        split = {r: _split(found) for r, found in cells.items()}
        send = {r: sent for r, (sent, _) in split.items()}
        dropped = sum(len(d) for _, d in split.values())
        outcome = None
        refused: dict[tuple[int, date], str] = {}
        if any(send.values()):
            known = self.entity_ids(ids) if ids is not None else {}
            missing = sorted({c.entity_id for sent in send.values() for c in sent} - set(known))
            if ids is None or ids.property_id is None or missing:
                what = "room types" if self.call == "availability" else "rate plans"
                return await self._unmapped(f"{what} {missing}" if ids and ids.property_id else "property")
            with await self._push_span(send) as pushed:
                outcome = await self._send(self.call, self.values(ids, send), ids)
                if outcome is None:
                    pushed.set_attribute("connectapi.outcome", "lease lost")
                    return LOST
                pushed.set_attribute("connectapi.outcome", _said_of(outcome))
                if not outcome.ok:
                    return Round(0, 0, outcome)
                refused = await self._settle(outcome, known, send, now, today, offered_refused)
                if outcome.answer is not None:
                    pushed.set_attribute("channex.task_ids", list(outcome.answer.task_ids))
                pushed.set_attribute("connectapi.cells_refused", len(refused))
        for resource, found in cells.items():
            taken = [c for c in found if (c.entity_id, c.night) not in refused]
            if resource == "availability":
                await pushes.mark_availability_pushed(self._db, self.property_id, taken)
            elif resource == "rates":
                await pushes.mark_rates_pushed(self._db, self.property_id, taken)
            else:
                await pushes.mark_restrictions_pushed(self._db, self.property_id, taken)
        if self._wakeups is not None:
            self._wakeups.cells_pushed(self.property_id)
        return Round(sum(len(sent) for sent in send.values()), dropped, outcome,
                     complete=read_all and outcome is not None)

    async def _push_span(self, send: dict[str, list[DirtyCell]]) -> ContextManager[Span]:
        """The span of the call that carries these cells: under the request that wrote
        them when they are one batch's, linked to each request when several's."""
        if not spans.enabled():
            return spans.span("")
        batches = {c.batch for cells in send.values() for c in cells if c.batch is not None}
        kept = await pushes.trace_parents(self._db, batches)
        parents = [found for text in kept.values() if (found := spans.from_traceparent(text)) is not None]
        attributes: dict[str, AttributeValue] = {
            "connectapi.property_id": self.property_id, "connectapi.call": self.call,
            "connectapi.batch_ids": sorted(str(b) for b in batches),
            "connectapi.cells": sum(len(cells) for cells in send.values())}
        if len(parents) == 1 and len(batches) == 1:
            return spans.span(f"push {self.call}", parent=parents[0], attributes=attributes)
        return spans.span(f"push {self.call}", links=parents, attributes=attributes)

    async def _settle(self, outcome: PushOutcome, known: dict[int, str], send: dict[str, list[DirtyCell]],
                      now: datetime, today: date, offered_refused: bool) -> dict[tuple[int, date], str]:
        """After a 200: mark what the channel manager refused, record the call's task ids on
        the batches whose cells it carried, and the outcome. Answers the refused cells.
        `offered_refused`: the call carried cells refused before (their retry was due)."""
        answer = outcome.answer
        sent = [c for cells in send.values() for c in cells]
        refusals = answer.refusals if answer is not None else ()
        refused = refused_cells(((r.value, r.fields) for r in refusals), self.id_field,
                                {cm: ours for ours, cm in known.items()},
                                {(c.entity_id, c.night) for c in sent}) if refusals else {}
        for resource, cells in send.items():
            await channel_refusals.mark_refused(
                self._db, self.property_id, resource, [(c, refused[(c.entity_id, c.night)]) for c in cells
                                     if (c.entity_id, c.night) in refused])
        if answer is not None:
            batches: set[uuid.UUID] = {c.batch for c in sent if c.batch is not None}
            await pushes.record_tasks(self._db, self.call, now, answer.task_ids, batches)
        if not refused:
            await pushes.record_outcome(self._db, self.property_id, now, "ok", None)
            if offered_refused:
                # The cells refused before went with this call, and none was refused: the
                # backoff starts over next time.
                await channel_refusals.cleared(self._db, self.property_id, self.call)
            return refused
        count = sum(1 for c in sent if (c.entity_id, c.night) in refused)
        if self._counted:
            CM_REFUSED_CELLS.inc(count)
        example = said(next(iter(refused.values())))
        request = f" (x-request-id {answer.request_id})" if answer is not None and answer.request_id else ""
        error = f"the channel manager refused {count} cell(s): {example}{request}"
        log.warning("%s of property %d: %s", self.name, self.property_id, error)
        await channel_refusals.refused_again(self._db, self.property_id, self.call, now, offered_refused,
                                             refusal_backoff)
        await pushes.record_outcome(self._db, self.property_id, now, "refused", error)
        await channel_refusals.tell_owner_once(self._db, self.property_id, today, now,
                                               lambda name: emails.owner_channel_refused(name, count, example))
        return refused


class InventoryDrain(_CellPusher):
    name = "availability"
    call = "availability"
    resources = ("availability",)
    id_field = "room_type_id"

    async def dirty(self, resource: str, now: datetime) -> list[DirtyCell]:
        return await pushes.dirty_availability(self._db, self.property_id, MAX_CELLS_PER_PUSH, now)

    def entity_ids(self, ids: ChannelIds) -> dict[int, str]:
        return ids.room_types

    def values(self, ids: ChannelIds, send: dict[str, list[DirtyCell]]) -> list[AvailabilityValue]:
        assert ids.property_id is not None
        return [
            AvailabilityValue(property_id=ids.property_id, room_type_id=ids.room_types[v.entity_id],
                              date_from=v.first.isoformat(), date_to=v.last.isoformat(),
                              availability=cast(int, v.value))  # a count: coalesced from the cells
            for entity, cells in _by_entity([(c.entity_id, c.night, c.value) for c in send["availability"]]).items()
            for v in coalesce(entity, cells, weekday_masks=False)
        ]


class AriProjector(_CellPusher):
    name = "rates-and-restrictions"
    call = "restrictions"  # Channex's restrictions call carries the rates too
    resources = ("rates", "restrictions")
    id_field = "rate_plan_id"

    async def dirty(self, resource: str, now: datetime) -> list[DirtyCell]:
        if resource == "rates":
            return await pushes.dirty_rates(self._db, self.property_id, MAX_CELLS_PER_PUSH, now)
        return await pushes.dirty_restrictions(self._db, self.property_id, MAX_CELLS_PER_PUSH, now)

    def entity_ids(self, ids: ChannelIds) -> dict[int, str]:
        return ids.rate_plans

    def values(self, ids: ChannelIds, send: dict[str, list[DirtyCell]]) -> list[RestrictionValue]:
        return restriction_values(ids, send["rates"], send["restrictions"])


def restriction_values(ids: ChannelIds, rates: list[DirtyCell], restrictions: list[DirtyCell]) -> list[RestrictionValue]:
    """The cells to send as the fewest range values: one value per plan and night holds its
    rate (a per-person plan's: each occupancy that changed, as `rates`) and the
    restrictions that changed; equal neighbouring nights make one range (coalesce)."""
    assert ids.property_id is not None
    merged: dict[tuple[int, date], dict[str, ChannelField]] = {}
    per_person: dict[tuple[int, date], dict[int, str]] = {}
    for cell in rates:
        price = rate_text(cell.value, ids.currency)
        if cell.occupancy == ROOM_PRICE:
            merged.setdefault((cell.entity_id, cell.night), {})["rate"] = price
        else:
            per_person.setdefault((cell.entity_id, cell.night), {})[cell.occupancy] = price
    for cell_of, prices in per_person.items():
        merged.setdefault(cell_of, {})["rates"] = tuple(sorted(prices.items()))
    for cell in restrictions:
        merged.setdefault((cell.entity_id, cell.night), {}).update(restriction_fields(cell.value))
    frozen = [(plan, night, tuple(sorted(fields.items()))) for (plan, night), fields in merged.items()]
    return [_restriction_value(ids.property_id, ids.rate_plans[v.entity_id], v)
            for plan, cells in _by_entity(frozen).items()
            for v in coalesce(plan, cells, weekday_masks=True, covers=_covers)]


# A field of a night's value as the run holds it (hashable, so equal nights coalesce): a
# rate, a restriction, or a per-person plan's prices as ((occupancy, rate), ...).
ChannelField = str | RestrictionSetting | tuple[tuple[int, str], ...]


def _covers(first: Hashable, other: Hashable) -> bool:
    """A night's value `other` sets every field `first` does, and every occupancy of its
    `rates`: laid over `first` (the channel manager applies field by field), it leaves
    nothing of `first` behind (coalesce's weekday pattern)."""
    base = dict(cast(tuple[tuple[str, ChannelField], ...], first))
    over = dict(cast(tuple[tuple[str, ChannelField], ...], other))
    if not set(base) <= set(over):
        return False
    prices = cast(tuple[tuple[int, str], ...], base.get("rates", ()))
    return {n for n, _ in prices} <= {n for n, _ in cast(tuple[tuple[int, str], ...], over.get("rates", ()))}


def _restriction_value(cm_property: str, cm_rate_plan: str, run: RangeValue) -> RestrictionValue:
    value = RestrictionValue(property_id=cm_property, rate_plan_id=cm_rate_plan, date_from=run.first.isoformat(),
                             date_to=run.last.isoformat())
    if run.days:
        value["days"] = list(run.days)
    # The run's value: the channel manager's own fields and values (rate_text, restriction_fields).
    fields = dict(cast(tuple[tuple[str, ChannelField], ...], run.value))
    prices = cast(tuple[tuple[int, str], ...] | None, fields.pop("rates", None))
    if prices is not None:
        value["rates"] = [OccupancyRateValue(occupancy=n, rate=rate) for n, rate in prices]
    return cast(RestrictionValue, {**value, **fields})


__all__ = ["AriProjector", "InventoryDrain", "RangeValue", "Round", "restriction_values"]
