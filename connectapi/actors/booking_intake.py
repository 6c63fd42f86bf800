"""BookingIntake: OTA booking revisions in from the channel manager's feed.

A round pulls the feed, stores each revision as it came, applies what is stored and not
yet applied (one transaction each, under the property's lock), and only then acknowledges
what is settled. A crash anywhere loses nothing: what was stored is applied next round,
and an unacknowledged revision is offered again by the channel manager and is a no-op.

Rounds run when the channel manager notifies us (a trigger only: its notification carries
no data we trust) and on a timer, as a safety net for a notification that never came.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date, datetime

import asyncpg

from ..channel.client import FEED_MAX_PAGES, ChannelManagerClient, ChannelManagerError, Feed, Rejected
from ..domain import emails
from ..domain import ota_bookings as ota_rules
from ..domain.ota_bookings import MalformedRevision, OtaBooking
from ..domain.webhook_events import PropertyFacts, new_event
from ..engine import Clock
from ..storage import ari, notifications, ota, webhooks
from ..storage.bookings import log_activity, pms_reference
from ..storage.database import Database, StorageUnavailable
from ._wakeup import WakeUp

log = logging.getLogger("connectapi.intake")


@dataclass
class Round:
    """What a round did: revisions stored, applied, acknowledged, and what needs telling."""

    stored: int = 0
    settled: dict[str, int] = field(default_factory=Counter)
    acknowledged: int = 0
    inventory_moved: set[int] = field(default_factory=set)  # property ids
    events: int = 0
    mails: int = 0


@dataclass(frozen=True, slots=True)
class _Applied:
    state: str
    note: str | None = None
    booking_id: int | None = None
    inventory_moved: bool = False
    events: int = 0
    mails: int = 0


Settled = Callable[[Round], Awaitable[None]]
ROUND_BATCH = 500  # revisions a round applies, and acknowledges, at most


class BookingIntake:
    def __init__(self, db: Database, clock: Clock, client: ChannelManagerClient, settled: Settled,
                 sweep_seconds: float = 60.0, feed_pages: int = FEED_MAX_PAGES, batch: int = ROUND_BATCH) -> None:
        self._db = db
        self._clock = clock
        self._client = client
        self._settled = settled
        self._sweep = sweep_seconds
        self._feed_pages = feed_pages
        self._batch = batch
        self._wake = WakeUp()
        self._unknown_properties: set[str] = set()

    def wake(self) -> None:
        self._wake.set()

    async def run_forever(self) -> None:
        while True:
            try:
                await self.pull()
            except StorageUnavailable as exc:
                log.warning("intake: the record is unreachable: %s", exc)
            except Exception:
                # The revisions wait in the channel manager's feed or in the record: the
                # next round takes them up again.
                log.exception("intake: a round failed")
            await self._wake.wait(self._sweep)

    async def pull(self) -> Round:
        done = Round()
        try:
            feed = await self._client.booking_feed(max_pages=self._feed_pages)
        except ChannelManagerError as exc:
            log.warning("intake: could not read the booking feed: %s", exc)
            feed = Feed([], complete=True)
        await self._store(feed.revisions, done)
        waiting = await ota.received(self._db, self._batch)
        for item in waiting:
            try:
                applied = await self._apply(item)
            except StorageUnavailable:
                raise  # the record is away: the round ends, the revision waits for the next
            except Exception as exc:
                # A revision the record refuses (or a bug of ours) must not hold up the ones
                # behind it, round after round: it is kept, marked refused, and the owner told.
                log.exception("intake: revision %s could not be applied", item.id)
                applied = await self._refuse(item, f"could not be applied ({type(exc).__name__})")
            done.settled[applied.state] += 1
            done.events += applied.events
            done.mails += applied.mails
            if applied.inventory_moved:
                done.inventory_moved.add(item.property_id)
        acked = 0
        for revision_id in await ota.unacknowledged(self._db, self._batch):
            if not await self._ack(revision_id):
                break  # the rest wait for a later round
            acked += 1
        done.acknowledged += acked
        if done.inventory_moved or done.events or done.mails:
            await self._settled(done)
        took_something = bool(done.stored or done.acknowledged)
        if not feed.complete and not took_something:
            log.warning("intake: the pages of the booking feed a round reads hold nothing it can take")
        if len(waiting) == self._batch or acked == self._batch or (not feed.complete and took_something):
            self._wake.set()  # more is left than a round takes: the next round starts at once
        return done

    async def _store(self, feed: list[dict[str, object]], done: Round) -> None:
        properties = await ota.property_ids_by_cm(self._db)
        for raw in feed:
            try:
                revision_id, system_id, cm_property, cm_booking = ota_rules.revision_key(raw)
                revised_at = ota_rules.revised_at(raw)
            except MalformedRevision as exc:
                # Nothing to file it under: leave it in the feed (the channel manager tells the
                # property after 30 minutes) and say so in the log.
                log.error("intake: a revision in the feed cannot be stored: %s", exc)
                continue
            property_id = properties.get(cm_property)
            if property_id is None:
                if cm_property not in self._unknown_properties:
                    self._unknown_properties.add(cm_property)
                    log.warning("intake: revisions for a channel-manager property we do not map are left alone")
                continue
            if await ota.store_revision(self._db, revision_id, system_id, property_id, cm_booking, revised_at,
                                        raw, self._clock.now()):
                done.stored += 1
            elif not await self._still_to_apply(revision_id):
                # Offered again (our acknowledgement was lost) or a repeat under a new id:
                # nothing to apply, only the acknowledgement to give.
                if await self._ack(revision_id):
                    done.acknowledged += 1

    async def _still_to_apply(self, revision_id: str) -> bool:
        return await ota.still_to_apply(self._db, revision_id)

    async def _ack(self, revision_id: str) -> bool:
        try:
            await self._client.ack_booking_revision(revision_id)
        except Rejected as exc:
            # The channel manager does not know it (a 4xx): there is nothing left to
            # acknowledge, and asking again every round would hold up the others.
            log.warning("intake: the channel manager refused an acknowledgement: %s", exc)
        except ChannelManagerError as exc:
            log.warning("intake: could not acknowledge a revision: %s", exc)
            return False
        await ota.acknowledged(self._db, revision_id, self._clock.now())
        return True

    async def _refuse(self, item: ota.Received, why: str) -> _Applied:
        now = self._clock.now()

        async def work(conn: asyncpg.Connection) -> _Applied:
            prop = await ari.lock_property(conn, item.property_id)
            mails = await _tell_owner(conn, prop, None, emails.owner_ota_unapplied(
                prop["name"], str(item.payload.get("ota_reservation_code", "?"))[:60],
                str(item.payload.get("ota_name", "the OTA"))[:40], why), now)
            await ota.settle(conn, item.seq, "refused", why, None, now)
            return _Applied("refused", why, mails=mails)

        return await self._db.transaction(work)

    async def _apply(self, item: ota.Received) -> _Applied:
        now = self._clock.now()

        async def work(conn: asyncpg.Connection) -> _Applied:
            prop = await ari.lock_property(conn, item.property_id)
            if not await ota.lock_received(conn, item.seq):
                # Another process applied it while this one waited for the lock.
                return _Applied("already settled")
            applied = await _apply_revision(conn, prop, item, now)
            await ota.settle(conn, item.seq, applied.state, applied.note, applied.booking_id, now)
            return applied

        return await self._db.transaction(work)


async def _apply_revision(conn: asyncpg.Connection, prop: asyncpg.Record, item: ota.Received,
                          now: datetime) -> _Applied:
    try:
        revision = ota_rules.parse_revision(item.payload)
    except MalformedRevision as exc:
        mails = await _tell_owner(conn, prop, None, emails.owner_ota_unapplied(
            prop["name"], str(item.payload.get("ota_reservation_code", "?"))[:60],
            str(item.payload.get("ota_name", "the OTA"))[:40], f"it could not be read ({exc})"), now)
        return _Applied("refused", str(exc), mails=mails)
    normal = ota_rules.normalise(revision, await ota.mapping_in(conn, prop["id"]))
    if isinstance(normal, list):
        what = ", ".join(normal)
        mails = await _tell_owner(conn, prop, None, emails.owner_ota_unapplied(
            prop["name"], revision.reservation_code, revision.ota_name,
            f"it names what this property does not map to the channel manager ({what})"), now)
        return _Applied("unmapped", f"not mapped: {what}", mails=mails)
    known = await ota.known_booking(conn, prop["id"], item.cm_booking_id)
    if known is None:
        return await _create(conn, prop, item, normal, now)
    if not ota_rules.is_newer(item.revised_at, item.seq, known.last_revision_at, known.last_revision_seq):
        return _Applied("stale", "older than the revision applied last", known.booking_id)
    return await _revise(conn, prop, item, normal, known, now)


async def _create(conn: asyncpg.Connection, prop: asyncpg.Record, item: ota.Received, normal: OtaBooking,
                  now: datetime) -> _Applied:
    booking_id = await ota.next_booking_id(conn)
    reference = pms_reference(prop["id"], booking_id)
    status = "CANCELLED" if normal.cancelled else "UPCOMING"
    told = ota_rules.told(normal, reference, status)
    await ota.insert_booking(conn, prop["id"], booking_id, reference, item.cm_booking_id, normal, status,
                             item.revised_at, item.seq, told, now)
    moved, mails = await _move(conn, prop, booking_id, reference, normal, Counter(),
                               Counter() if normal.cancelled else normal.rooms_per_night(), now)
    await log_activity(conn, prop["id"], booking_id, None, "ota.booking.created",
                       f"{normal.channel} booking {normal.reservation_code} arrived as {reference}", now)
    # A booking first heard of as cancelled (its earlier revisions never reached us) is told
    # as cancelled: receivers reconcile on the reference either way.
    kind = "channel.booking.cancelled" if normal.cancelled else "channel.booking.created"
    events = await _emit(conn, prop, kind, told, None, None, now)
    return _Applied("applied", None, booking_id, moved, events, mails)


async def _revise(conn: asyncpg.Connection, prop: asyncpg.Record, item: ota.Received, normal: OtaBooking,
                  known: ota.Known, now: datetime) -> _Applied:
    if normal.cancelled and known.status == "CHECKED_IN":
        mails = await _tell_owner(conn, prop, known.booking_id, emails.owner_ota_unapplied(
            prop["name"], normal.reservation_code, normal.channel,
            f"it cancels {known.reference}, which is checked in"), now)
        return _Applied("refused", "the booking is checked in", known.booking_id, mails=mails)
    if normal.cancelled:
        status = "CANCELLED"
    else:
        status = "CHECKED_IN" if known.status == "CHECKED_IN" else "UPCOMING"
    told = ota_rules.told(normal, known.reference, status)
    await ota.update_booking(conn, known.booking_id, normal, status, item.revised_at, item.seq, told, now)
    moved, mails = await _move(conn, prop, known.booking_id, known.reference, normal,
                               await ota.rooms_held(conn, known.booking_id),
                               Counter() if normal.cancelled else normal.rooms_per_night(), now)
    changes, previous = ota_rules.changes_between(known.told, told)
    events = 0
    if normal.cancelled and known.status != "CANCELLED":
        await log_activity(conn, prop["id"], known.booking_id, None, "ota.booking.cancelled",
                           f"{normal.channel} cancelled {normal.reservation_code} ({known.reference})", now)
        events = await _emit(conn, prop, "channel.booking.cancelled", told, None, None, now)
    elif changes:
        await log_activity(conn, prop["id"], known.booking_id, None, "ota.booking.modified",
                           f"{normal.channel} changed {', '.join(changes)} of {normal.reservation_code} "
                           f"({known.reference})", now)
        events = await _emit(conn, prop, "channel.booking.modified", told, changes, previous, now)
    return _Applied("applied", None if events else "nothing told changed", known.booking_id, moved, events, mails)


async def _move(conn: asyncpg.Connection, prop: asyncpg.Record, booking_id: int, reference: str,
                normal: OtaBooking, held: Counter[tuple[int, date]], wanted: Counter[tuple[int, date]],
                now: datetime) -> tuple[bool, int]:
    """On a property with the PMS, take or give back rooms as a desk booking would; answers
    whether cells moved and how many e-mails were queued."""
    if not prop["pms"]:
        return False, 0
    cells = set(held) | set(wanted)
    if not cells:
        return False, 0
    available = await ota.availability_of(conn, prop["id"], cells)
    moves = ota_rules.inventory_moves(held, wanted, available)
    await ota.move_cells(conn, prop["id"], booking_id, moves, "ota.booking", now)
    short = sorted({night.isoformat() for (_, night), move in moves.items() if move.short})
    mails = 0
    if short:
        log.warning("intake: an OTA booking of property %d was sold on nights with no room left", prop["id"])
        mails = await _tell_owner(conn, prop, booking_id, emails.owner_ota_overbooked(
            prop["name"], normal.reservation_code, normal.channel, reference, short), now)
    return any(move.delta for move in moves.values()), mails


async def _emit(conn: asyncpg.Connection, prop: asyncpg.Record, kind: str, booking: dict[str, object],
                changes: dict[str, object] | None, previous: dict[str, object] | None, now: datetime) -> int:
    facts = PropertyFacts(prop["id"], prop["name"], prop["currency"].strip(), prop["timezone"])
    event = new_event(kind, facts, {"booking": booking}, now, changes, previous)
    await webhooks.record_event(conn, prop["id"], event, None, now)
    return 1


async def _tell_owner(conn: asyncpg.Connection, prop: asyncpg.Record, booking_id: int | None, mail: emails.Email,
                      now: datetime) -> int:
    if not prop["owner_email"]:
        return 0
    await notifications.enqueue(conn, prop["id"], booking_id, mail.kind, prop["owner_email"], mail.subject,
                                mail.body, now)
    return 1
