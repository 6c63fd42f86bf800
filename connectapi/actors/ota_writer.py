"""Applying an OTA booking revision to the record: one transaction, under the property's lock.

Run by the property's writer (every change to a property's inventory goes through it), so
a revision is applied between the property's API bookings and ARI writes, never beside
them. One process at a time runs the intake (its lease); should two rounds ever overlap
(a holder stalled past its lease), the row lock on the property and the revision's own
lock still keep each revision to one apply, or one refusal, and one set of events.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import date, datetime

import trio

from ..domain import emails
from ..domain import ota_bookings as ota_rules
from ..domain.ota_bookings import Mapping, MalformedRevision, OtaBooking, Revision
from ..domain.revision_screen import lost_in_keeping
from ..domain.text import one_line
from ..domain.webhook_body import ChangedFields, WebhookBooking
from ..domain.webhook_events import PropertyFacts, new_event
from ..storage import ari, notifications, ota, webhooks
from ..storage.bookings import log_activity
from ..storage.database import LOCK_NOT_AVAILABLE, QUERY_CANCELED, Database, RecordBusy, Tx
from ..storage.records import PropertyLock
from .messages.property_writer import RevisionSettled

log = logging.getLogger("connectapi.intake")


# How long an apply, or a refusal, may wait for its property's lock (another transaction of
# the property: a write, a booking, a push's cell updates) before it gives way for this
# round. Waiting is no fault of the revision's: it is not counted as a try.
LOCK_WAIT = 10.0


async def apply_revision(db: Database, item: ota.Received, now: datetime, within: float,
                         shared: float | None) -> RevisionSettled:
    """Apply the revision, checked first (domain.revision_screen) before the property is
    locked: one it refuses never takes the lock. Once it holds the lock, the apply is
    rolled back if it runs past `within` seconds (RecordBusy, QUERY_CANCELED: the intake
    counts it as a try), so that no revision holds the property's lock, and its writes and
    bookings, for longer; waiting for the lock past LOCK_WAIT gives way (RecordBusy,
    LOCK_NOT_AVAILABLE: not counted)."""
    lost = lost_in_keeping(item.cuts)
    if lost is not None:
        return await refuse_revision(db, item, lost, now)
    try:
        revision = ota_rules.parse_revision(item.payload)
    except MalformedRevision as exc:
        return await refuse_revision(db, item, f"it could not be read ({exc})", now, note=str(exc))
    if item.clash_of is not None:
        if await ota.repeats_ids_of_its_clash(db, item.clash_of, item.id, _system_id(item)):
            return await refuse_revision(db, item, "its id or system id is an earlier revision's, of another booking "
                                         "or property: kept for review, not applied", now)
        return await refuse_revision(db, item, "its booking is another property's (the channel manager's booking id "
                                     "is known there): kept for review, not applied", now)
    ahead = ota_rules.dated_ahead(item.revised_at, now)
    if ahead is not None:
        return await refuse_revision(db, item, ahead, now)
    facts = await ota.screening_facts(db, item.property_id, now)
    assert facts is not None, "a revision is stored under a property of the record"
    why = ota_rules.screened(revision, facts[1])
    if why is not None:
        return await refuse_revision(db, item, why, now)

    async def work(tx: Tx, locked: Callable[[], None]) -> RevisionSettled:
        prop = await ari.lock_property(tx, item.property_id)
        locked()
        if not await ota.lock_received(tx, item.seq):
            # Another process applied it while this one waited for the lock.
            return RevisionSettled("already settled")
        # The mapping as it is now, under the lock (the screen read it before).
        applied = await _apply_revision(tx, prop, item, revision, await ota.mapping_in(tx, prop.id), now, shared)
        await ota.settle(tx, item.seq, applied.state, applied.note, applied.booking_id, now)
        return applied

    return await _under_the_lock(db, work, within, f"its apply ran past {within:g} s and was rolled back")


def _system_id(item: ota.Received) -> str:
    try:
        return ota_rules.revision_key(item.payload)[1]
    except MalformedRevision:
        return item.id  # kept as it came, so read before; as the intake files one with none


async def refuse_revision(db: Database, item: ota.Received, why: str, now: datetime,
                          note: str | None = None) -> RevisionSettled:
    """A revision the screen or the record refused (or a bug of ours) must not hold up the
    ones behind it, round after round: it is kept, marked refused (`note`, or `why`), the
    owner told why, and it is acknowledged with the others."""
    async def work(tx: Tx, locked: Callable[[], None]) -> RevisionSettled:
        prop = await ari.lock_property(tx, item.property_id)
        locked()
        if not await ota.lock_received(tx, item.seq):
            # Settled meanwhile (another round applied it): neither overwritten nor told twice.
            return RevisionSettled("already settled")
        mails = await _tell_owner(tx, prop, None, emails.owner_ota_unapplied(
            prop.name, one_line(str(item.payload.get("ota_reservation_code", "?")), 60),
            one_line(str(item.payload.get("ota_name", "the OTA")), 40), why), now)
        await ota.settle(tx, item.seq, "refused", note or why, None, now)
        return RevisionSettled("refused", note or why, mails=mails)

    return await _under_the_lock(db, work, REFUSE_WITHIN, f"its refusal ran past {REFUSE_WITHIN:g} s")


REFUSE_WITHIN = 10.0


async def _under_the_lock(db: Database, work: Callable[[Tx, Callable[[], None]], Awaitable[RevisionSettled]],
                          within: float, past: str) -> RevisionSettled:
    """`work` in one transaction: LOCK_WAIT for the property's lock (with the connection),
    then `within` once `work` says it holds it. Either deadline rolls it back and drops the
    connection (the record ends a statement whose client is gone: decision 0126)."""
    held = False
    with trio.move_on_after(LOCK_WAIT) as bounded:
        def locked() -> None:
            # Called from the transaction (asyncio, through trio-asyncio, on this thread and
            # this run): from now on the bound is the time the lock may be held.
            nonlocal held
            held = True
            bounded.deadline = trio.current_time() + within

        # Bounded here, both ways: not also by the command timeout, whose 10 s counted from
        # the connection would end a lock held `within` before it is up, as "the record away".
        return await db.transaction(lambda tx: work(tx, locked), within=math.inf)
    if held:
        raise RecordBusy(past, QUERY_CANCELED)
    raise RecordBusy(f"waited {LOCK_WAIT:g} s for the property's lock", LOCK_NOT_AVAILABLE)


async def _apply_revision(tx: Tx, prop: PropertyLock, item: ota.Received, revision: Revision, mapping: Mapping,
                          now: datetime, shared: float | None) -> RevisionSettled:
    normal = ota_rules.normalise(revision, mapping)
    if isinstance(normal, list):
        what = ", ".join(normal)
        mails = await _tell_owner(tx, prop, None, emails.owner_ota_unapplied(
            prop.name, one_line(revision.reservation_code, ota_rules.CODE_MAX),
            one_line(revision.ota_name, ota_rules.CHANNEL_MAX),
            f"it names what this property does not map to the channel manager ({what})"), now)
        return RevisionSettled("unmapped", f"not mapped: {what}", mails=mails)
    normal = ota_rules.in_currency_of(normal, prop.currency)
    known = await ota.known_booking(tx, prop.id, item.cm_booking_id)
    if known is None:
        return await _create(tx, prop, item, normal, now, shared)
    if not ota_rules.is_newer(item.revised_at, item.seq, known.last_revision_at, known.last_revision_seq):
        return RevisionSettled("stale", "older than the revision applied last", known.booking_id)
    return await _revise(tx, prop, item, normal, known, now, shared)


async def _create(tx: Tx, prop: PropertyLock, item: ota.Received, normal: OtaBooking,
                  now: datetime, shared: float | None) -> RevisionSettled:
    booking_id, reference = await ota.next_booking(tx, prop.id, prop.live_id, prop.mode)
    status = "CANCELLED" if normal.cancelled else "UPCOMING"
    told = ota_rules.told(normal, reference, status)
    await ota.insert_booking(tx, prop.id, booking_id, reference, item.cm_booking_id, normal, status,
                             item.revised_at, item.seq, told, now)
    moved, mails = await _move(tx, prop, booking_id, reference, normal, Counter(),
                               Counter() if normal.cancelled else normal.rooms_per_night(), now)
    await log_activity(tx, prop.id, booking_id, None, "ota.booking.created",
                       f"{normal.channel} booking {normal.reservation_code} arrived as {reference}", now)
    # A booking first heard of as cancelled (its earlier revisions never reached us) is told
    # as cancelled: receivers reconcile on the reference either way.
    kind = "channel.booking.cancelled" if normal.cancelled else "channel.booking.created"
    events = await _emit(tx, prop, kind, told, None, None, now, shared)
    mails += await _amounts_flagged(tx, prop, booking_id, reference, normal, now)
    return RevisionSettled("applied", _noted(normal), booking_id, moved, events, mails)


async def _revise(tx: Tx, prop: PropertyLock, item: ota.Received, normal: OtaBooking,
                  known: ota.Known, now: datetime, shared: float | None) -> RevisionSettled:
    if normal.cancelled and known.status == "CHECKED_IN":
        mails = await _tell_owner(tx, prop, known.booking_id, emails.owner_ota_unapplied(
            prop.name, normal.reservation_code, normal.channel,
            f"it cancels {known.reference}, which is checked in"), now)
        return RevisionSettled("refused", "the booking is checked in", known.booking_id, mails=mails)
    if normal.cancelled:
        status = "CANCELLED"
    else:
        status = "CHECKED_IN" if known.status == "CHECKED_IN" else "UPCOMING"
    told = ota_rules.told(normal, known.reference, status)
    await ota.update_booking(tx, known.booking_id, normal, status, item.revised_at, item.seq, told, now)
    moved, mails = await _move(tx, prop, known.booking_id, known.reference, normal,
                               await ota.rooms_held(tx, known.booking_id),
                               Counter() if normal.cancelled else normal.rooms_per_night(), now)
    changes, previous = ota_rules.changes_between(known.told, told)
    events = 0
    if normal.cancelled and known.status != "CANCELLED":
        await log_activity(tx, prop.id, known.booking_id, None, "ota.booking.cancelled",
                           f"{normal.channel} cancelled {normal.reservation_code} ({known.reference})", now)
        events = await _emit(tx, prop, "channel.booking.cancelled", told, None, None, now, shared)
    elif changes:
        await log_activity(tx, prop.id, known.booking_id, None, "ota.booking.modified",
                           f"{normal.channel} changed {', '.join(changes)} of {normal.reservation_code} "
                           f"({known.reference})", now)
        events = await _emit(tx, prop, "channel.booking.modified", told, changes, previous, now, shared)
    if "amounts" in changes or "rooms" in changes or known.status != status:
        mails += await _amounts_flagged(tx, prop, known.booking_id, known.reference, normal, now)
    return RevisionSettled("applied", _noted(normal, None if events else "nothing told changed"), known.booking_id,
                           moved, events, mails)


def _noted(normal: OtaBooking, *said: str | None) -> str | None:
    """An applied revision's note: what it left as it was, what of it was cut or dropped, and
    what of its amounts does not add up."""
    disagree = [f"amounts do not add up: {'; '.join(normal.disagreements)}"] if normal.disagreements else []
    return "; ".join(part for part in (*said, *normal.cut, *disagree) if part) or None


async def _amounts_flagged(tx: Tx, prop: PropertyLock, booking_id: int, reference: str, normal: OtaBooking,
                           now: datetime) -> int:
    """The owner told of amounts that do not add up (told as the OTA sent them all the same:
    the service never mends an OTA's money)."""
    if not normal.disagreements:
        return 0
    log.warning("intake: an OTA booking of property %d has amounts that do not add up", prop.id)
    return await _tell_owner(tx, prop, booking_id, emails.owner_ota_amounts(
        prop.name, normal.reservation_code, normal.channel, reference, list(normal.disagreements)), now)


async def _move(tx: Tx, prop: PropertyLock, booking_id: int, reference: str,
                normal: OtaBooking, held: Counter[tuple[int, date]], wanted: Counter[tuple[int, date]],
                now: datetime) -> tuple[bool, int]:
    """On a property with the PMS, take or give back rooms as a desk booking would; answers
    whether cells moved and how many e-mails were queued."""
    if not prop.pms:
        return False, 0
    cells = set(held) | set(wanted)
    if not cells:
        return False, 0
    available = await ota.availability_of(tx, prop.id, cells)
    moves = ota_rules.inventory_moves(held, wanted, available)
    await ota.move_cells(tx, prop.id, booking_id, moves, "ota.booking", now)
    short = sorted({night.isoformat() for (_, night), move in moves.items() if move.short})
    mails = 0
    if short:
        log.warning("intake: an OTA booking of property %d was sold on nights with no room left", prop.id)
        mails = await _tell_owner(tx, prop, booking_id, emails.owner_ota_overbooked(
            prop.name, normal.reservation_code, normal.channel, reference, short), now)
    return any(move.delta for move in moves.values()), mails


async def _emit(tx: Tx, prop: PropertyLock, kind: str, booking: WebhookBooking,
                changes: ChangedFields | None, previous: ChangedFields | None, now: datetime,
                shared: float | None) -> int:
    facts = PropertyFacts(prop.live_id, prop.name, prop.currency, prop.timezone, prop.mode)
    event = new_event(kind, facts, {"booking": booking}, now, changes, previous)
    await webhooks.record_event(tx, prop.id, event, None, now, shared)
    return 1


async def _tell_owner(tx: Tx, prop: PropertyLock, booking_id: int | None, mail: emails.Email,
                      now: datetime) -> int:
    if not prop.owner_email:
        return 0
    await notifications.enqueue(tx, prop.id, booking_id, mail.kind, prop.owner_email, mail.subject,
                                mail.body, now)
    return 1
