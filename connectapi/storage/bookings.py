"""Bookings in the record: the PMS's writes (inside the caller's transaction) and reads.

The writes take an open connection: creating or cancelling a booking is one transaction
that the booking writer composes under the property's lock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import asyncpg

from ..domain.booking_events import BookingCreated, BookingEvent
from ..domain.bookings import FolioLine, PlannedBooking, PlannedRoom
from .database import Database
from .records import Booking, BookingLock, BookingRoom, Catalog, RatePlan, RoomType
from .twins import catalog_owner

_BOOKING = """
    SELECT b.id, b.property_id, b.source, b.reference, b.external_reference, b.status, b.check_in, b.check_out,
           b.currency, b.guest_name, b.guest_phone, b.guest_email, b.total_minor, b.created_at, b.cancelled_at,
           b.revision, COALESCE(b.modified_at, b.created_at) AS modified_at, p.channel_manager,
           COALESCE((SELECT sum(f.amount_minor)::bigint FROM folio_lines f
                     WHERE f.booking_id = b.id AND f.kind = 'PAYMENT'), 0) AS paid_minor,
           EXISTS (SELECT 1 FROM inventory_events e WHERE e.booking_id = b.id) AS event_recorded
    FROM bookings b JOIN properties p ON p.id = b.property_id
"""


async def _with_rooms(conn: asyncpg.Connection, rows: Sequence[asyncpg.Record]) -> list[Booking]:
    if not rows:
        return []
    room_rows = await conn.fetch(
        """SELECT id, booking_id, room_type_id, rate_plan_id, meal_plan, adults, children, nightly_minor, status
           FROM booking_rooms WHERE booking_id = ANY($1::bigint[]) ORDER BY booking_id, position""",
        [r["id"] for r in rows],
    )
    rooms: dict[int, list[BookingRoom]] = {}
    for r in room_rows:
        rooms.setdefault(r["booking_id"], []).append(BookingRoom(
            r["id"], r["room_type_id"], r["rate_plan_id"], r["meal_plan"], r["adults"], r["children"],
            r["nightly_minor"], r["status"]))
    return [Booking(
        id=r["id"], property_id=r["property_id"], source=r["source"], reference=r["reference"],
        external_reference=r["external_reference"], status=r["status"], check_in=r["check_in"],
        check_out=r["check_out"], currency=r["currency"].strip(), guest_name=r["guest_name"],
        guest_phone=r["guest_phone"], guest_email=r["guest_email"], total_minor=r["total_minor"],
        paid_minor=r["paid_minor"], created_at=r["created_at"], cancelled_at=r["cancelled_at"],
        channel_manager=r["channel_manager"], event_recorded=r["event_recorded"],
        rooms=tuple(rooms.get(r["id"], ())), revision=r["revision"], modified_at=r["modified_at"],
    ) for r in rows]


async def booking_in(conn: asyncpg.Connection, booking_id: int) -> Booking | None:
    found = await _with_rooms(conn, await conn.fetch(_BOOKING + " WHERE b.id = $1", booking_id))
    return found[0] if found else None


async def api_booking(db: Database, property_id: int, booking_id: int) -> Booking | None:
    """A booking the Connect API created on this property; None for any other."""
    return await property_booking(db, property_id, booking_id, ("api",))


async def api_booking_by_reference(db: Database, property_id: int, external_reference: str) -> Booking | None:
    async def work(conn: asyncpg.Connection) -> Booking | None:
        rows = await conn.fetch(
            _BOOKING + " WHERE b.property_id = $1 AND b.source = 'api' AND b.external_reference = $2",
            property_id, external_reference)
        found = await _with_rooms(conn, rows)
        return found[0] if found else None

    return await db.run(work)


async def list_api_bookings(db: Database, property_id: int, since: datetime, external_reference: str | None,
                            limit: int, before: int | None = None) -> list[Booking] | None:
    """The API's bookings of the property created at or after `since`, newest first; with
    `before`, only those listed after that booking (the next page). None when `before` is
    not one of the property's API bookings."""
    async def work(conn: asyncpg.Connection) -> list[Booking] | None:
        cursor = None
        if before is not None:
            cursor = await conn.fetchrow("SELECT created_at, id FROM bookings WHERE id = $1 AND property_id = $2"
                                         " AND source = 'api'", before, property_id)
            if cursor is None:
                return None
        rows = await conn.fetch(
            _BOOKING + """ WHERE b.property_id = $1 AND b.source = 'api' AND b.created_at >= $2
                           AND ($3::text IS NULL OR b.external_reference = $3)
                           AND ($5::timestamptz IS NULL OR (b.created_at, b.id) < ($5, $6))
                           ORDER BY b.created_at DESC, b.id DESC LIMIT $4""",
            property_id, since, external_reference, limit,
            None if cursor is None else cursor["created_at"], None if cursor is None else cursor["id"])
        return await _with_rooms(conn, rows)

    return await db.run(work)


async def property_bookings(db: Database, property_id: int, source: str, limit: int = 100) -> list[Booking]:
    """The property's bookings from one source ('api', 'ota'), newest first."""
    async def work(conn: asyncpg.Connection) -> list[Booking]:
        rows = await conn.fetch(_BOOKING + """ WHERE b.property_id = $1 AND b.source = $2
                                               ORDER BY b.created_at DESC, b.id DESC LIMIT $3""",
                                property_id, source, limit)
        return await _with_rooms(conn, rows)

    return await db.run(work)


async def property_booking(db: Database, property_id: int, booking_id: int,
                           sources: tuple[str, ...] = ("api", "ota")) -> Booking | None:
    """A booking of the property from one of `sources`; None for any other."""
    async def work(conn: asyncpg.Connection) -> Booking | None:
        rows = await conn.fetch(_BOOKING + " WHERE b.id = $1 AND b.property_id = $2 AND b.source = ANY($3::text[])",
                                booking_id, property_id, list(sources))
        found = await _with_rooms(conn, rows)
        return found[0] if found else None

    return await db.run(work)


@dataclass(frozen=True, slots=True)
class LockedProperty:
    """What creating a run of bookings needs, read while taking the property's lock."""

    name: str
    currency: str
    timezone: str
    owner_email: str | None
    guest_confirmation: bool
    channel_manager: bool
    earlier: dict[str, int]  # the property's bookings with one of the asked externalReferences, by reference
    catalog: Catalog
    held: dict[tuple[int, date], int]  # availability of the asked room types over the asked span of nights
    # An id and a PMS reference per booking asked, drawn now so each reference is known
    # before its insert; those of a booking refused leave gaps.
    next_bookings: tuple[tuple[int, str], ...]


async def lock_for_bookings(conn: asyncpg.Connection, property_id: int, external_references: list[str],
                            room_type_ids: list[int], first_night: date, last_night: date) -> LockedProperty:
    """Take the property's row lock (as ARI writes do) and read the repeat check, the
    catalog and the nights asked for, in one round trip (connectapi_lock_for_bookings): the
    property's bookings queue on this lock, so every round trip under it is paid by each
    of them in turn. The function locks and reads in separate statements, each with its
    own snapshot: reads folded into the statement that waits for the lock would miss what
    the booking before it committed (found by the two-process test, where the cells'
    check constraint refused a second sale of the last room).
    """
    found = await conn.fetchrow("SELECT * FROM connectapi_lock_for_bookings($1, $2::text[], $3::bigint[], $4, $5, $6)",
                                property_id, external_references, room_type_ids, first_night, last_night,
                                len(external_references))
    row = {name.removeprefix("o_"): value for name, value in found.items()}
    catalog = Catalog(tuple(RoomType(*r) for r in row["room_types"]), tuple(RatePlan(*p) for p in row["rate_plans"]))
    held = {(int(rt), date.fromisoformat(night)): int(n) for rt, night, n in row["held"]}
    return LockedProperty(row["name"], row["currency"].strip(), row["timezone"], row["owner_email"],
                          row["guest_confirmation"], row["channel_manager"],
                          {reference: int(found_id) for reference, found_id in row["earlier"]}, catalog, held,
                          tuple((int(booking_id), pms_reference(row["live_id"], row["first_number"] + i, row["mode"]))
                                for i, booking_id in enumerate(row["next_ids"])))


@dataclass(frozen=True, slots=True)
class InventoryMove:
    """Rooms added per room type over a booking's nights (negative: sold), and from what
    count a night without a cell starts (the room type's `rooms`)."""

    deltas: Mapping[int, int]
    nights: list[date]
    full: Mapping[int, int]
    reason: str

    def cells(self) -> tuple[list[int], list[date], list[int], list[int]]:
        """The function's arrays: one entry per room type and night."""
        ids = [rt for rt in self.deltas for _ in self.nights]
        days = [night for _ in self.deltas for night in self.nights]
        moves = [self.deltas[rt] for rt in self.deltas for _ in self.nights]
        bases = [self.full[rt] for rt in self.deltas for _ in self.nights]
        return ids, days, moves, bases


async def move_availability(conn: asyncpg.Connection, property_id: int, booking_id: int, move: InventoryMove,
                            at: datetime) -> None:
    """Move the cells (connectapi_move_availability: dirty for the drain, never below zero)
    and record one inventory event per room type."""
    await conn.execute(
        """WITH moved AS (SELECT connectapi_move_availability($1, $2::bigint[], $3::date[], $4::integer[],
                                                              $5::integer[]))
           INSERT INTO inventory_events (property_id, booking_id, room_type_id, first_night, last_night, delta,
                                         reason, at)
           SELECT $1, $6, e.room_type_id, $7, $8, e.delta, $9, $10
           FROM unnest($11::bigint[], $12::integer[]) AS e (room_type_id, delta), moved""",
        property_id, *move.cells(), booking_id, move.nights[0], move.nights[-1], move.reason, at,
        list(move.deltas), list(move.deltas.values()))


async def availability_of(conn: asyncpg.Connection, property_id: int,
                          cells: set[tuple[int, date]]) -> dict[tuple[int, date], int]:
    """The cells' counts now; a night without a cell holds the room type's full count."""
    ids = [rt for rt, _ in cells]
    nights = [night for _, night in cells]
    rows = await conn.fetch(
        f"""SELECT w.id, w.night, COALESCE(c.available, rt.rooms) AS available
           FROM unnest($2::bigint[], $3::date[]) AS w (id, night)
           JOIN room_types rt ON rt.id = w.id AND rt.property_id = {catalog_owner("$1")}
           LEFT JOIN availability_cells c ON c.property_id = $1 AND c.room_type_id = w.id AND c.night = w.night""",
        property_id, ids, nights)
    return {(r["id"], r["night"]): int(r["available"]) for r in rows}


async def move_cells(conn: asyncpg.Connection, property_id: int, booking_id: int,
                     deltas: Mapping[tuple[int, date], int], reason: str, at: datetime) -> None:
    """Move cells by their own deltas (positive: given back; dirty for the drain, never
    below zero) and record one inventory event per cell moved: for a change of a booking,
    or an OTA booking, whose nights do not all move alike."""
    moved = {cell: delta for cell, delta in deltas.items() if delta}
    if not moved:
        return
    cells = sorted(moved)
    await conn.execute(
        """WITH moved AS (
               SELECT connectapi_move_availability(
                   $1, $2::bigint[], $3::date[], $4::integer[],
                   ARRAY(SELECT rt.rooms FROM unnest($2::bigint[]) WITH ORDINALITY AS w (id, ord)
                         JOIN room_types rt ON rt.id = w.id ORDER BY w.ord)))
           INSERT INTO inventory_events (property_id, booking_id, room_type_id, first_night, last_night, delta,
                                         reason, at)
           SELECT $1, $5, e.id, e.night, e.night, e.delta, $6, $7
           FROM unnest($2::bigint[], $3::date[], $4::integer[]) AS e (id, night, delta), moved""",
        property_id, [rt for rt, _ in cells], [night for _, night in cells], [moved[c] for c in cells],
        booking_id, reason, at)


@dataclass(frozen=True, slots=True)
class Mail:
    kind: str
    to: str
    subject: str
    body: str


async def insert_booking(conn: asyncpg.Connection, property_id: int, key_id: int | None, booking_id: int,
                         reference: str, booking: PlannedBooking, guest_phone_as_sent: str, lines: list[FolioLine],
                         activity: str, event: BookingCreated, mails: list[Mail], move: InventoryMove,
                         at: datetime) -> dict[int, int]:
    """The guest (the property's one with this normalised phone, made if new; a missing
    e-mail is filled in), the booking, a room row per entry, its folio, the activity line,
    the domain event, the e-mails and the inventory move with its events, in one statement;
    answers the room rows' ids by entry index."""
    payment = booking.payment
    rows = await conn.fetch(
        """WITH g AS (INSERT INTO guests (property_id, phone, name, email, notes, created_at)
                      VALUES ($2, $9, $10, $12, $36, $15)
                      ON CONFLICT (property_id, phone) DO UPDATE
                      SET email = COALESCE(guests.email, EXCLUDED.email),
                          notes = COALESCE(EXCLUDED.notes, guests.notes)
                      RETURNING id),
                b AS (INSERT INTO bookings (id, property_id, source, key_id, reference, external_reference, status,
                                            check_in, check_out, currency, guest_id, guest_name, guest_phone,
                                            guest_email, total_minor, notes, created_at)
                      SELECT $1, $2, 'api', $3, $4, $5, 'UPCOMING', $6, $7, $8, g.id, $10, $11, $12, $13, $14, $15
                      FROM g),
                r AS (INSERT INTO booking_rooms (booking_id, position, room_type_id, rate_plan_id, meal_plan, adults,
                                                 children, nightly_minor, status)
                      SELECT $1, x.position, x.room_type_id, x.rate_plan_id, x.meal_plan, x.adults, x.children,
                             x.nightly, 'UPCOMING'
                      FROM unnest($16::integer[], $17::bigint[], $18::bigint[], $19::text[], $20::integer[],
                                  $21::integer[], $22::bigint[])
                           AS x (position, room_type_id, rate_plan_id, meal_plan, adults, children, nightly)
                      RETURNING id, position),
                f AS (INSERT INTO folio_lines (booking_id, booking_room_id, kind, night, description, amount_minor,
                                               method, payment_ref, created_at)
                      SELECT $1, r.id, l.kind, l.night, l.description, l.amount,
                             CASE WHEN l.kind = 'PAYMENT' THEN $28::text END,
                             CASE WHEN l.kind = 'PAYMENT' THEN $29::text END, $15
                      FROM unnest($23::integer[], $24::text[], $25::date[], $26::text[], $27::bigint[])
                           WITH ORDINALITY AS l (position, kind, night, description, amount, ord)
                      LEFT JOIN r ON r.position = l.position
                      ORDER BY l.ord),
                a AS (INSERT INTO activity_log (property_id, booking_id, key_id, action, detail, at)
                      VALUES ($2, $1, $3, 'booking.created', $30, $15)),
                e AS (INSERT INTO domain_events (property_id, booking_id, type, payload, occurred_at)
                      VALUES ($2, $1, 'booking.created', $31, $15)),
                m AS (INSERT INTO notifications (property_id, booking_id, kind, to_address, subject, body, created_at)
                      SELECT $2, $1, n.kind, n.to_address, n.subject, n.body, $15
                      FROM unnest($32::text[], $33::text[], $34::text[], $35::text[])
                           AS n (kind, to_address, subject, body)),
                moved AS (SELECT connectapi_move_availability($2, $37::bigint[], $38::date[], $39::integer[],
                                                              $40::integer[]) AS cells),
                ev AS (INSERT INTO inventory_events (property_id, booking_id, room_type_id, first_night, last_night,
                                                     delta, reason, at)
                       SELECT $2, $1, e.room_type_id, $41, $42, e.delta, $43, $15
                       FROM unnest($44::bigint[], $45::integer[]) AS e (room_type_id, delta))
           SELECT r.id, r.position FROM r, moved""",
        booking_id, property_id, key_id, reference, booking.external_reference,
        booking.check_in, booking.check_out, booking.currency, booking.guest_phone, booking.guest_name,
        guest_phone_as_sent, booking.guest_email, booking.total_minor, booking.notes, at,
        [r.index for r in booking.rooms], [r.room_type_id for r in booking.rooms],
        [r.rate_plan_id for r in booking.rooms], [r.meal_plan for r in booking.rooms],
        [r.adults for r in booking.rooms], [r.children for r in booking.rooms],
        [r.nightly_minor for r in booking.rooms],
        [line.room_index for line in lines], [line.kind for line in lines], [line.night for line in lines],
        [line.description for line in lines], [line.amount_minor for line in lines],
        payment.method if payment else None, payment.reference if payment else None,
        activity, event,
        [m.kind for m in mails], [m.to for m in mails], [m.subject for m in mails], [m.body for m in mails],
        booking.guest_notes, *move.cells(), move.nights[0], move.nights[-1], move.reason,
        list(move.deltas), list(move.deltas.values()))
    return {r["position"]: r["id"] for r in rows}


def pms_reference(live_id: int, number: int, mode: str) -> str:
    """The PMS's own reference of a booking: what the front desk reads out. It names the
    live property (the one its keys, owner and desk know, a test twin's too) and the
    booking's number among the property's: nothing of other properties nor of the twin's
    own id (docs/decisions/0127-booking-ids-that-tell-nothing.md). A test booking's says
    TEST, so that a support call tells it at once."""
    return f"{'PMS' if mode == 'live' else 'TEST'}-{live_id}-{number:06d}"


async def lock_booking(conn: asyncpg.Connection, property_id: int, booking_id: int) -> BookingLock | None:
    """An API booking of the property, locked for a change of state."""
    row = await conn.fetchrow(
        """SELECT id, status, check_in, check_out, reference FROM bookings
           WHERE id = $1 AND property_id = $2 AND source = 'api' FOR UPDATE""",
        booking_id, property_id)
    if row is None:
        return None
    return BookingLock(row["id"], row["status"], row["check_in"], row["check_out"], row["reference"])


@dataclass(frozen=True, slots=True)
class LockedBooking:
    """An API booking locked for a change, with what its view does not show."""

    booking: Booking
    notes: str | None
    guest_notes: str | None


async def lock_api_booking(conn: asyncpg.Connection, property_id: int, booking_id: int) -> LockedBooking | None:
    """An API booking of the property, locked for a change (after the property's lock)."""
    row = await conn.fetchrow(
        """SELECT b.notes, g.notes AS guest_notes FROM bookings b JOIN guests g ON g.id = b.guest_id
           WHERE b.id = $1 AND b.property_id = $2 AND b.source = 'api' FOR UPDATE OF b""",
        booking_id, property_id)
    if row is None:
        return None
    booking = await booking_in(conn, booking_id)
    assert booking is not None, "locked"
    return LockedBooking(booking, row["notes"], row["guest_notes"])


@dataclass(frozen=True, slots=True)
class BookingChange:
    """A booking as it is to stand after a change: the stay as planned by the rules of
    creation, the booking room kept by each planned room (None: a new room), and the folio's
    room and meal lines when the rooms or the nights changed (else the folio stays)."""

    planned: PlannedBooking
    kept: Sequence[int | None]
    guest_phone_as_sent: str
    guest_notes_given: bool
    lines: list[FolioLine] | None


async def change_booking(conn: asyncpg.Connection, property_id: int, booking_id: int, change: BookingChange,
                         at: datetime) -> None:
    """Write a change: the guest (found or made by phone, as on creation; a guest made for a
    new phone gets notes only if the patch sent them, never the previous guest's), the booking's
    stay, total and a new revision, and, when the rooms or nights changed, its rooms (the
    kept ones updated in place, the dropped ones deleted, the new ones added, positions
    as asked) and its folio's room and meal lines (payments stay)."""
    b = change.planned
    await conn.execute(
        """WITH g AS (INSERT INTO guests (property_id, phone, name, email, notes, created_at)
                      VALUES ($2, $3, $4, $5, CASE WHEN $8 THEN $6 END, $7)
                      ON CONFLICT (property_id, phone) DO UPDATE
                      SET email = COALESCE(guests.email, EXCLUDED.email),
                          notes = CASE WHEN $8 THEN EXCLUDED.notes ELSE guests.notes END
                      RETURNING id)
           UPDATE bookings SET check_in = $9, check_out = $10, guest_id = g.id, guest_name = $4, guest_phone = $11,
                               guest_email = $5, total_minor = $12, notes = $13, revision = revision + 1,
                               modified_at = $7
           FROM g WHERE bookings.id = $1""",
        booking_id, property_id, b.guest_phone, b.guest_name, b.guest_email, b.guest_notes, at,
        change.guest_notes_given, b.check_in, b.check_out, change.guest_phone_as_sent, b.total_minor, b.notes)
    if change.lines is None:
        return
    kept = [room_id for room_id in change.kept if room_id is not None]
    await conn.execute("DELETE FROM folio_lines WHERE booking_id = $1 AND kind <> 'PAYMENT'", booking_id)
    await conn.execute("DELETE FROM booking_rooms WHERE booking_id = $1 AND id <> ALL($2::bigint[])", booking_id, kept)
    # Positions are unique per booking: the kept rooms move to negative ones first, so no
    # two rows ever hold one position on the way to the new order.
    updated = [(room_id, room) for room_id, room in zip(change.kept, b.rooms, strict=True) if room_id is not None]
    added = [room for room_id, room in zip(change.kept, b.rooms, strict=True) if room_id is None]
    await conn.execute(
        """UPDATE booking_rooms r SET position = -1 - x.position, room_type_id = x.room_type_id,
                                      rate_plan_id = x.rate_plan_id, meal_plan = x.meal_plan, adults = x.adults,
                                      children = x.children, nightly_minor = x.nightly
           FROM unnest($2::bigint[], $3::integer[], $4::bigint[], $5::bigint[], $6::text[], $7::integer[],
                       $8::integer[], $9::bigint[])
                AS x (id, position, room_type_id, rate_plan_id, meal_plan, adults, children, nightly)
           WHERE r.id = x.id AND r.booking_id = $1""",
        booking_id, *_room_arrays([room for _, room in updated], [room_id for room_id, _ in updated]))
    await conn.execute(
        """INSERT INTO booking_rooms (booking_id, position, room_type_id, rate_plan_id, meal_plan, adults, children,
                                      nightly_minor, status)
           SELECT $1, -1 - x.position, x.room_type_id, x.rate_plan_id, x.meal_plan, x.adults, x.children, x.nightly,
                  'UPCOMING'
           FROM unnest($2::bigint[], $3::integer[], $4::bigint[], $5::bigint[], $6::text[], $7::integer[],
                       $8::integer[], $9::bigint[])
                AS x (id, position, room_type_id, rate_plan_id, meal_plan, adults, children, nightly)""",
        booking_id, *_room_arrays(added, [None] * len(added)))
    rows = await conn.fetch(
        "UPDATE booking_rooms SET position = -1 - position WHERE booking_id = $1 AND position < 0 "
        "RETURNING id, position", booking_id)
    room_ids = {r["position"]: r["id"] for r in rows}
    lines = change.lines
    await conn.execute(
        """INSERT INTO folio_lines (booking_id, booking_room_id, kind, night, description, amount_minor, created_at)
           SELECT $1, l.room_id, l.kind, l.night, l.description, l.amount, $7
           FROM unnest($2::bigint[], $3::text[], $4::date[], $5::text[], $6::bigint[]) WITH ORDINALITY
                AS l (room_id, kind, night, description, amount, ord)
           ORDER BY l.ord""",
        booking_id, [room_ids[line.room_index] if line.room_index is not None else None for line in lines],
        [line.kind for line in lines], [line.night for line in lines], [line.description for line in lines],
        [line.amount_minor for line in lines], at)


def _room_arrays(rooms: Sequence[PlannedRoom], ids: Sequence[int | None]) -> list[list[Any]]:
    return [list(ids), [r.index for r in rooms], [r.room_type_id for r in rooms], [r.rate_plan_id for r in rooms],
            [r.meal_plan for r in rooms], [r.adults for r in rooms], [r.children for r in rooms],
            [r.nightly_minor for r in rooms]]


async def room_types_of(conn: asyncpg.Connection, booking_id: int) -> list[int]:
    """The room type of each of the booking's rooms (one entry per room)."""
    rows = await conn.fetch("SELECT room_type_id FROM booking_rooms WHERE booking_id = $1", booking_id)
    return [int(r["room_type_id"]) for r in rows]


async def mark_cancelled(conn: asyncpg.Connection, booking_id: int, reason: str | None, at: datetime) -> None:
    await conn.execute(
        """UPDATE bookings SET status = 'CANCELLED', cancelled_at = $2, cancel_reason = $3, revision = revision + 1,
                               modified_at = $2
           WHERE id = $1""",
        booking_id, at, reason)
    await conn.execute("UPDATE booking_rooms SET status = 'CANCELLED' WHERE booking_id = $1", booking_id)


async def check_in(db: Database, booking_id: int, at: datetime,
                   property_id: int | None = None) -> tuple[str, int] | None:
    """Move an UPCOMING booking to CHECKED_IN; answers (its status before, property), None if
    absent (or, with `property_id`, not that property's)."""
    async def work(conn: asyncpg.Connection) -> tuple[str, int] | None:
        row = await conn.fetchrow(
            """SELECT status, property_id FROM bookings
               WHERE id = $1 AND ($2::bigint IS NULL OR property_id = $2) FOR UPDATE""", booking_id, property_id)
        if row is None:
            return None
        if row["status"] == "UPCOMING":
            await conn.execute("""UPDATE bookings SET status = 'CHECKED_IN', checked_in_at = $2,
                                                     revision = revision + 1, modified_at = $2
                                  WHERE id = $1""", booking_id, at)
            await conn.execute("UPDATE booking_rooms SET status = 'CHECKED_IN' WHERE booking_id = $1", booking_id)
            await log_activity(conn, row["property_id"], booking_id, None, "booking.checked_in",
                               "checked in at the front desk", at)
        return row["status"], row["property_id"]

    return await db.transaction(work)


async def log_activity(conn: asyncpg.Connection, property_id: int, booking_id: int | None, key_id: int | None,
                       action: str, detail: str, at: datetime) -> None:
    await conn.execute(
        """INSERT INTO activity_log (property_id, booking_id, key_id, action, detail, at)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        property_id, booking_id, key_id, action, detail, at)


async def record_domain_event(conn: asyncpg.Connection, property_id: int, booking_id: int, kind: str,
                              payload: BookingEvent, at: datetime) -> None:
    await conn.execute(
        """INSERT INTO domain_events (property_id, booking_id, type, payload, occurred_at)
           VALUES ($1, $2, $3, $4, $5)""",
        property_id, booking_id, kind, payload, at)
