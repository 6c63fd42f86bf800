"""Creating, changing and cancelling a PMS booking: one transaction each, under the
property's lock.

Run by the property's writer actor, so a property's bookings and ARI writes are applied
one at a time in this process; the row lock on the property serialises them across
processes. Every refusal inside is an outcome (kept with an idempotency key, if any),
and leaves nothing else written.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import outcome

from ..domain import bookings as rules
from ..domain import emails
from ..domain.booking_models import BookingIn, GuestIn, RoomIn
from ..domain.errors import ApiError
from ..domain.money import currency_exponent
from ..storage import ari, idempotency, notifications
from ..storage import bookings as store
from ..storage.database import Database, StorageError, Tx
from ..storage.properties import catalog_in
from ..storage.records import Booking, BookingRoom
from .messages.property_writer import BookingDone, BookingOutcome, CreateBooking, ModifyBooking, Refused


async def create_booking(db: Database, property_id: int, request: CreateBooking) -> BookingOutcome:
    async def work(tx: Tx) -> BookingOutcome:
        return (await _create_run(tx, property_id, [request]))[0]

    return await db.transaction(work)


async def create_bookings(db: Database, property_id: int,
                          requests: list[CreateBooking]) -> list[outcome.Outcome[BookingOutcome]]:
    """Bookings queued together for the property, in one transaction: one lock, one read,
    one commit.

    Each is still whole or nothing: if the record refuses one of them, the transaction
    takes the others' writes with it, so each is then made again on its own and only the
    failing one fails. Later bookings see the earlier ones (a repeated reference replays,
    sold rooms are gone).
    """
    async def work(tx: Tx) -> list[BookingOutcome]:
        return await _create_run(tx, property_id, requests)

    try:
        return [outcome.Value(made) for made in await db.transaction(work)]
    except StorageError:
        if len(requests) == 1:
            raise
    results: list[outcome.Outcome[BookingOutcome]] = []
    for request in requests:
        try:
            results.append(outcome.Value(await create_booking(db, property_id, request)))
        except StorageError as exc:
            results.append(outcome.Error(exc))
    return results


def _nights_asked(body: BookingIn) -> tuple[date, date]:
    """The first and last night a booking asks for, bounded: an over-long stay is refused by
    the rules anyway."""
    last = min(body.checkOut, body.checkIn + timedelta(days=rules.MAX_NIGHTS)) - timedelta(days=1)
    return body.checkIn, max(body.checkIn, last)


@dataclass(slots=True)
class _Run:
    """A run of bookings under one lock: what was read, and the counts and bookings made so
    far (later bookings of the run see them)."""

    prop: store.LockedProperty
    held: dict[tuple[int, date], int]
    made: dict[str, Booking]


async def _create_run(tx: Tx, property_id: int, requests: list[CreateBooking]) -> list[BookingOutcome]:
    # Each round trip under the lock is paid by every booking queued behind it, so the lock
    # and every read are one statement for the whole run, and each booking one more.
    spans = [_nights_asked(r.body) for r in requests]
    prop = await store.lock_for_bookings(
        tx, property_id, [r.body.externalReference for r in requests],
        sorted({room.roomTypeId for r in requests for room in r.body.rooms}),
        min(first for first, _ in spans), max(last for _, last in spans))
    run = _Run(prop, dict(prop.held), {})
    answers = []
    for request, (booking_id, reference) in zip(requests, prop.next_bookings, strict=True):
        made = await _create(tx, property_id, run, booking_id, reference, request)
        if request.claim is not None:
            await idempotency.finish(tx, property_id, request.claim.route, request.claim.key, made.stored())
        answers.append(made)
    return answers


async def _create(tx: Tx, property_id: int, run: _Run, booking_id: int, reference: str,
                  request: CreateBooking) -> BookingOutcome:
    body, prop = request.body, run.prop
    if body.externalReference in run.made:
        # A repeat of a booking made earlier in this run.
        return BookingDone(run.made[body.externalReference], made=False, replay=True)
    if body.externalReference in prop.earlier:
        # Under the lock: a request that raced past the route's repeat check finds the first here.
        earlier = await store.booking_in(tx, prop.earlier[body.externalReference])
        assert earlier is not None
        return BookingDone(earlier, made=False, replay=True)

    room_types = {r.id: r for r in prop.catalog.room_types}
    rate_plans = {p.id: p for p in prop.catalog.rate_plans}
    today = request.now.astimezone(ZoneInfo(prop.timezone)).date()
    try:
        planned = rules.plan_booking(body, prop.currency, today, request.scopes, room_types, rate_plans)
    except ApiError as refusal:
        return Refused(refusal)

    nights = planned.stay_nights()
    needed = planned.rooms_needed()
    short = rules.first_short_night(needed, nights, run.held, room_types)
    if short is not None:
        return Refused(ApiError("NO_AVAILABILITY", f"no room left on {short.night.isoformat()}", short.details()))

    facts = emails.BookingFacts(prop.name, reference, planned.external_reference, planned.check_in,
                                planned.check_out, len(planned.rooms), planned.guest_name,
                                rules.money(planned.total_minor, planned.exponent), planned.currency)
    mails = []
    if prop.owner_email:
        mails.append(_mail(prop.owner_email, emails.owner_booking_created(facts)))
    if prop.guest_confirmation and planned.guest_email:
        mails.append(_mail(planned.guest_email, emails.guest_confirmation(facts)))
    room_ids = await store.insert_booking(
        tx, property_id, request.key_id, booking_id, reference, planned, body.guest.phone,
        rules.folio(planned, room_types), f"booking {reference} created through the Connect API",
        {"bookingId": booking_id, "reference": reference, "externalReference": planned.external_reference,
         "source": "api"}, mails,
        store.InventoryMove({rt: -n for rt, n in needed.items()}, nights, {rt: room_types[rt].rooms for rt in needed},
                            "booking.created"), request.now)
    for room_type_id, count in needed.items():  # as the statement just moved them
        for night in nights:
            cell = (room_type_id, night)
            run.held[cell] = run.held.get(cell, room_types[room_type_id].rooms) - count
    booking = Booking(
        id=booking_id, property_id=property_id, source="api", reference=reference,
        external_reference=planned.external_reference, status="UPCOMING", check_in=planned.check_in,
        check_out=planned.check_out, currency=planned.currency, guest_name=planned.guest_name,
        guest_phone=body.guest.phone, guest_email=planned.guest_email, total_minor=planned.total_minor,
        paid_minor=planned.payment.amount_minor if planned.payment else 0, created_at=request.now,
        cancelled_at=None, channel_manager=prop.channel_manager, event_recorded=True, revision=1,
        modified_at=request.now, rooms=tuple(BookingRoom(room_ids[r.index], r.room_type_id, r.rate_plan_id, r.meal_plan, r.adults,
                                r.children, r.nightly_minor, "UPCOMING") for r in planned.rooms))
    run.made[body.externalReference] = booking
    return BookingDone(booking, made=True, inventory_moved=True, mails_queued=bool(mails))


async def modify_booking(db: Database, property_id: int, request: ModifyBooking) -> BookingOutcome:
    async def work(tx: Tx) -> BookingOutcome:
        done = await _modify(tx, property_id, request)
        if request.claim is not None:
            await idempotency.finish(tx, property_id, request.claim.route, request.claim.key, done.stored())
        return done

    return await db.transaction(work)


async def _modify(tx: Tx, property_id: int, request: ModifyBooking) -> BookingOutcome:
    """The booking under the property's lock (so every sale of the property waits), then
    the rules of creation on the booking as it would stand, then only the nights it needs
    beyond those it holds are checked, and the cells move by the difference."""
    today_utc = request.now.date()
    prop = await store.lock_for_bookings(tx, property_id, [], [], today_utc, today_utc)
    locked = await store.lock_api_booking(tx, property_id, request.booking_id)
    if locked is None:
        return Refused(ApiError("BOOKING_NOT_FOUND", f"no booking {request.booking_id} on this property"))
    old = locked.booking
    if old.status != "UPCOMING":
        return Refused(ApiError("BOOKING_NOT_MODIFIABLE", "only an upcoming booking can change",
                                {"status": old.status}))
    if request.if_match is not None and old.revision not in request.if_match:
        return Refused(ApiError("BOOKING_REVISION_STALE", f"the booking is at revision {old.revision}",
                                {"revision": old.revision, "etag": f'"{old.revision}"'}))
    patch = request.patch
    current = _as_asked(old, locked)
    asked = rules.patched(current, patch)
    old_ids = [room.id for room in old.rooms]
    kept: list[int | None] = list(old_ids)
    if patch.rooms is not None:
        kept = [room.bookingRoomId for room in patch.rooms]
        foreign = [{"path": f"rooms[{i}].bookingRoomId", "message": "not a room of this booking"}
                   for i, room_id in enumerate(kept) if room_id is not None and room_id not in old_ids]
        if foreign:
            return Refused(ApiError("VALIDATION", "request does not match the schema", foreign))

    # A patch that changes nothing answers the booking as it is, before any rule is asked
    # (a catalog changed since the booking was made must not refuse it).
    exponent = currency_exponent(old.currency)
    before = rules.booking_summary(current, old_ids, exponent)
    after = rules.booking_summary(asked, kept, exponent)
    changed = [name for name in before if before[name] != after[name]]
    if not changed:
        return BookingDone(old, made=False)

    room_types = {r.id: r for r in prop.catalog.room_types}
    rate_plans = {p.id: p for p in prop.catalog.rate_plans}
    today = request.now.astimezone(ZoneInfo(prop.timezone)).date()
    stay_moved = "rooms" in changed or "checkIn" in changed or "checkOut" in changed
    try:
        if stay_moved:
            # No payment is asked for (payments cannot change), so no payment scope is needed.
            planned = rules.plan_booking(asked, prop.currency, today, (), room_types, rate_plans)
            rules.check_paid(old.paid_minor, planned.total_minor, planned.exponent)
        else:
            planned = rules.plan_guest_change(asked, old.currency, _booked(old))
    except ApiError as refusal:
        return Refused(refusal)

    held = rules.rooms_per_night((r.room_type_id for r in old.rooms), rules.stay_nights_of(old.check_in,
                                                                                          old.check_out))
    wanted = rules.rooms_per_night((r.room_type_id for r in planned.rooms), planned.stay_nights())
    deltas = {cell: held[cell] - wanted[cell] for cell in held | wanted if held[cell] != wanted[cell]}
    beyond = {cell: -delta for cell, delta in deltas.items() if delta < 0}
    available = await store.availability_of(tx, property_id, set(beyond)) if beyond else {}
    short = rules.first_short_cell(beyond, available, room_types)
    if short is not None:
        return Refused(ApiError("NO_AVAILABILITY", f"no room left on {short.night.isoformat()}", short.details()))

    await store.change_booking(tx, property_id, old.id, store.BookingChange(
        planned, kept, asked.guest.phone, patch.guest is not None and "notes" in patch.guest.model_fields_set,
        rules.folio(replace(planned, payment=None), room_types) if stay_moved else None), request.now)
    await store.move_cells(tx, property_id, old.id, deltas, "booking.modified", request.now)
    before["totalAmount"] = rules.money(old.total_minor, planned.exponent)
    after["totalAmount"] = rules.money(planned.total_minor, planned.exponent)
    await store.log_activity(tx, property_id, old.id, request.key_id, "booking.modified",
                             f"booking {old.reference} changed through the Connect API: "
                             + "; ".join(f"{name} {_shown(before[name])} -> {_shown(after[name])}"
                                         for name in [*changed, "totalAmount"]), request.now)
    await store.record_domain_event(tx, property_id, old.id, "booking.modified",
                                    {"bookingId": old.id, "reference": old.reference, "revision": old.revision + 1,
                                     "changes": changed, "previous": before, "current": after}, request.now)
    booking = await store.booking_in(tx, old.id)
    assert booking is not None
    if prop.owner_email:
        await _enqueue(tx, property_id, old.id, prop.owner_email, emails.owner_booking_modified(
            _facts(prop.name, old), _facts(prop.name, booking), changed), request.now)
    return BookingDone(booking, made=True, inventory_moved=bool(deltas),
                       mails_queued=bool(prop.owner_email))


def _as_asked(b: Booking, locked: store.LockedBooking) -> BookingIn:
    """The booking as POST /bookings would have asked for it (no payment: it cannot change)."""
    exponent = currency_exponent(b.currency)
    assert b.external_reference is not None, "an API booking has the caller's reference"
    assert all(r.rate_plan_id is not None for r in b.rooms), "an API booking's rooms have their rate plans"
    # Built, not validated: what the record holds was valid when it was written, and a rule
    # tightened since (a character refused today, say) must not make the booking unchangeable
    # (a validation error here crashed the writer). The patch itself was validated.
    return BookingIn.model_construct(
        externalReference=b.external_reference, checkIn=b.check_in, checkOut=b.check_out, currency=b.currency,
        guest=GuestIn.model_construct(name=b.guest_name, phone=b.guest_phone, email=b.guest_email,
                                      notes=locked.guest_notes),
        rooms=[RoomIn.model_construct(roomTypeId=r.room_type_id, ratePlanId=r.rate_plan_id or 0, adults=r.adults,
                                      children=r.children, nightlyRate=rules.money(r.nightly_minor, exponent))
               for r in b.rooms],
        notes=locked.notes, payment=None)


def _booked(b: Booking) -> list[rules.PlannedRoom]:
    """The booking's rooms as planned when it was made, read back from the record."""
    return [rules.PlannedRoom(index, r.room_type_id, r.rate_plan_id or 0, r.meal_plan, r.adults, r.children,
                              r.nightly_minor) for index, r in enumerate(b.rooms)]


def _shown(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _mail(to: str, email: emails.Email) -> store.Mail:
    return store.Mail(email.kind, to, email.subject, email.body)


async def cancel_booking(db: Database, property_id: int, key_id: int, booking_id: int, reason: str | None,
                         now: datetime) -> BookingOutcome:
    async def work(tx: Tx) -> BookingOutcome:
        prop = await ari.lock_property(tx, property_id)
        row = await store.lock_booking(tx, property_id, booking_id)
        if row is None:
            return Refused(ApiError("BOOKING_NOT_FOUND", f"no booking {booking_id}"))
        if row.status == "CANCELLED":
            booking = await store.booking_in(tx, booking_id)
            assert booking is not None
            return BookingDone(booking, made=False, replay=True)
        if row.status != "UPCOMING":
            return Refused(ApiError("BOOKING_NOT_CANCELLABLE", "the booking is checked in or has moved on",
                                    {"status": row.status}))
        given_back = dict(Counter(await store.room_types_of(tx, booking_id)))
        catalog = await catalog_in(tx, property_id)
        full = {r.id: r.rooms for r in catalog.room_types}
        nights = rules.stay_nights_of(row.check_in, row.check_out)
        await store.mark_cancelled(tx, booking_id, reason, now)
        await store.move_availability(tx, property_id, booking_id, store.InventoryMove(
            given_back, nights, {rt: full[rt] for rt in given_back}, "booking.cancelled"), now)
        await store.log_activity(tx, property_id, booking_id, key_id, "booking.cancelled",
                                 f"booking {row.reference} cancelled through the Connect API"
                                 + (f": {reason}" if reason else ""), now)
        await store.record_domain_event(tx, property_id, booking_id, "booking.cancelled",
                                        {"bookingId": booking_id, "reference": row.reference,
                                         "reason": reason}, now)
        booking = await store.booking_in(tx, booking_id)
        assert booking is not None
        if prop.owner_email:
            await _enqueue(tx, property_id, booking_id, prop.owner_email,
                           emails.owner_booking_cancelled(_facts(prop.name, booking), reason), now)
        return BookingDone(booking, made=True, inventory_moved=True,
                           mails_queued=bool(prop.owner_email))

    return await db.transaction(work)


def _facts(property_name: str, b: Booking) -> emails.BookingFacts:
    return emails.BookingFacts(property_name, b.reference, b.external_reference, b.check_in, b.check_out,
                               len(b.rooms), b.guest_name, rules.money(b.total_minor, currency_exponent(b.currency)), b.currency)


async def _enqueue(tx: Tx, property_id: int, booking_id: int, to: str, email: emails.Email,
                   now: datetime) -> None:
    await notifications.enqueue(tx, property_id, booking_id, email.kind, to, email.subject, email.body, now)
