"""Bookings in the record: the PMS's writes (inside the caller's transaction) and reads.

The writes take an open connection: creating or cancelling a booking is one transaction
that the booking writer composes under the property's lock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

import asyncpg

from ..domain.bookings import FolioLine, PlannedBooking
from .database import Database
from .records import Booking, BookingRoom

_BOOKING = """
    SELECT b.id, b.property_id, b.source, b.reference, b.external_reference, b.status, b.check_in, b.check_out,
           b.currency, b.guest_name, b.guest_phone, b.guest_email, b.total_minor, b.created_at, b.cancelled_at,
           p.channel_manager,
           COALESCE((SELECT sum(f.amount_minor) FROM folio_lines f
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
        rooms=tuple(rooms.get(r["id"], ())),
    ) for r in rows]


async def booking_in(conn: asyncpg.Connection, booking_id: int) -> Booking | None:
    found = await _with_rooms(conn, await conn.fetch(_BOOKING + " WHERE b.id = $1", booking_id))
    return found[0] if found else None


async def api_booking(db: Database, property_id: int, booking_id: int) -> Booking | None:
    """A booking the Connect API created on this property; None for any other."""
    async def work(conn: asyncpg.Connection) -> Booking | None:
        rows = await conn.fetch(_BOOKING + " WHERE b.id = $1 AND b.property_id = $2 AND b.source = 'api'",
                                booking_id, property_id)
        found = await _with_rooms(conn, rows)
        return found[0] if found else None

    return await db.run(work)


async def api_booking_by_reference(db: Database, property_id: int, external_reference: str) -> Booking | None:
    async def work(conn: asyncpg.Connection) -> Booking | None:
        return await api_booking_by_reference_in(conn, property_id, external_reference)

    return await db.run(work)


async def api_booking_by_reference_in(conn: asyncpg.Connection, property_id: int,
                                      external_reference: str) -> Booking | None:
    rows = await conn.fetch(_BOOKING + " WHERE b.property_id = $1 AND b.external_reference = $2",
                            property_id, external_reference)
    found = await _with_rooms(conn, rows)
    return found[0] if found else None


async def list_api_bookings(db: Database, property_id: int, since: datetime, external_reference: str | None,
                            limit: int) -> list[Booking]:
    """The API's bookings of the property created at or after `since`, newest first."""
    async def work(conn: asyncpg.Connection) -> list[Booking]:
        rows = await conn.fetch(
            _BOOKING + """ WHERE b.property_id = $1 AND b.source = 'api' AND b.created_at >= $2
                           AND ($3::text IS NULL OR b.external_reference = $3)
                           ORDER BY b.created_at DESC, b.id DESC LIMIT $4""",
            property_id, since, external_reference, limit)
        return await _with_rooms(conn, rows)

    return await db.run(work)


async def held_availability(conn: asyncpg.Connection, property_id: int, room_type_ids: list[int], first: date,
                            last: date) -> dict[tuple[int, date], int]:
    rows = await conn.fetch(
        """SELECT room_type_id, night, available FROM availability_cells
           WHERE property_id = $1 AND room_type_id = ANY($2::bigint[]) AND night BETWEEN $3 AND $4""",
        property_id, room_type_ids, first, last)
    return {(r["room_type_id"], r["night"]): r["available"] for r in rows}


async def move_availability(conn: asyncpg.Connection, property_id: int, booking_id: int,
                            deltas: Mapping[int, int], nights: list[date], full: Mapping[int, int],
                            reason: str, at: datetime) -> None:
    """Add `deltas[room type]` rooms to every night (negative: sold), record the inventory
    event, and leave the cells dirty for the inventory drain.

    A night without a cell starts from the room type's `full` count. The cells' check
    constraint (available >= 0) is the record's own guard against selling a room twice.
    """
    ids = [rt for rt in deltas for _ in nights]
    days = [night for _ in deltas for night in nights]
    moves = [deltas[rt] for rt in deltas for _ in nights]
    bases = [full[rt] for rt in deltas for _ in nights]
    # Cells written by a batch and then moved here count as done for that batch: the
    # booking's value is the one the channel manager must hear.
    await conn.execute(
        """UPDATE availability_cells c SET available = c.available + w.delta, version = nextval('ari_versions'),
                                           last_batch_id = NULL
           FROM unnest($2::bigint[], $3::date[], $4::integer[]) AS w (id, night, delta)
           WHERE c.room_type_id = w.id AND c.night = w.night AND c.property_id = $1""",
        property_id, ids, days, moves)
    await conn.execute(
        """INSERT INTO availability_cells (property_id, room_type_id, night, available, version, pushed_version)
           SELECT $1, w.id, w.night, w.base + w.delta, nextval('ari_versions'), 0
           FROM unnest($2::bigint[], $3::date[], $4::integer[], $5::integer[]) AS w (id, night, delta, base)
           ON CONFLICT (room_type_id, night) DO NOTHING""",
        property_id, ids, days, moves, bases)
    await conn.executemany(
        """INSERT INTO inventory_events (property_id, booking_id, room_type_id, first_night, last_night, delta,
                                         reason, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)""",
        [(property_id, booking_id, rt, nights[0], nights[-1], delta, reason, at) for rt, delta in deltas.items()])


async def guest_for(conn: asyncpg.Connection, property_id: int, booking: PlannedBooking, at: datetime) -> int:
    """The property's guest with this normalised phone, made if new; a missing e-mail is filled in."""
    guest_id: int = await conn.fetchval(
        """INSERT INTO guests (property_id, phone, name, email, notes, created_at) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (property_id, phone) DO UPDATE
           SET email = COALESCE(guests.email, EXCLUDED.email), notes = COALESCE(EXCLUDED.notes, guests.notes)
           RETURNING id""",
        property_id, booking.guest_phone, booking.guest_name, booking.guest_email, booking.guest_notes, at)
    return guest_id


async def insert_booking(conn: asyncpg.Connection, property_id: int, key_id: int | None, booking: PlannedBooking,
                         guest_phone_as_sent: str, guest_id: int, lines: list[FolioLine], at: datetime) -> int:
    """The booking, one room row per entry and its folio; answers the booking id."""
    booking_id: int = await conn.fetchval("SELECT nextval('booking_ids')")
    await conn.execute(
        """INSERT INTO bookings (id, property_id, source, key_id, reference, external_reference, status, check_in,
                                 check_out, currency, guest_id, guest_name, guest_phone, guest_email, total_minor,
                                 notes, created_at)
           VALUES ($1, $2, 'api', $3, $4, $5, 'UPCOMING', $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)""",
        booking_id, property_id, key_id, pms_reference(property_id, booking_id), booking.external_reference,
        booking.check_in, booking.check_out, booking.currency, guest_id, booking.guest_name, guest_phone_as_sent,
        booking.guest_email, booking.total_minor, booking.notes, at)
    room_ids = await conn.fetch(
        """INSERT INTO booking_rooms (booking_id, position, room_type_id, rate_plan_id, meal_plan, adults, children,
                                      nightly_minor, status)
           SELECT $1, r.position, r.room_type_id, r.rate_plan_id, r.meal_plan, r.adults, r.children, r.nightly,
                  'UPCOMING'
           FROM unnest($2::integer[], $3::bigint[], $4::bigint[], $5::text[], $6::integer[], $7::integer[],
                       $8::bigint[]) AS r (position, room_type_id, rate_plan_id, meal_plan, adults, children, nightly)
           RETURNING id, position""",
        booking_id, [r.index for r in booking.rooms], [r.room_type_id for r in booking.rooms],
        [r.rate_plan_id for r in booking.rooms], [r.meal_plan for r in booking.rooms],
        [r.adults for r in booking.rooms], [r.children for r in booking.rooms],
        [r.nightly_minor for r in booking.rooms])
    room_of_index = {r["position"]: r["id"] for r in room_ids}
    payment = booking.payment
    await conn.execute(
        """INSERT INTO folio_lines (booking_id, booking_room_id, kind, night, description, amount_minor, method,
                                    payment_ref, created_at)
           SELECT $1, l.room, l.kind, l.night, l.description, l.amount,
                  CASE WHEN l.kind = 'PAYMENT' THEN $8::text END, CASE WHEN l.kind = 'PAYMENT' THEN $9::text END, $10
           FROM unnest($2::bigint[], $3::text[], $4::date[], $5::text[], $6::bigint[], $7::integer[])
                AS l (room, kind, night, description, amount, ord)
           ORDER BY l.ord""",
        booking_id, [None if line.room_index is None else room_of_index[line.room_index] for line in lines],
        [line.kind for line in lines], [line.night for line in lines], [line.description for line in lines],
        [line.amount_minor for line in lines], list(range(len(lines))),
        payment.method if payment else None, payment.reference if payment else None, at)
    return booking_id


def pms_reference(property_id: int, booking_id: int) -> str:
    """The PMS's own reference of a booking: what the front desk reads out."""
    return f"PMS-{property_id}-{booking_id:06d}"


async def lock_booking(conn: asyncpg.Connection, property_id: int, booking_id: int) -> asyncpg.Record | None:
    """An API booking of the property, locked for a change of state."""
    return await conn.fetchrow(
        """SELECT id, status, check_in, check_out, reference FROM bookings
           WHERE id = $1 AND property_id = $2 AND source = 'api' FOR UPDATE""",
        booking_id, property_id)


async def room_types_of(conn: asyncpg.Connection, booking_id: int) -> list[int]:
    """The room type of each of the booking's rooms (one entry per room)."""
    rows = await conn.fetch("SELECT room_type_id FROM booking_rooms WHERE booking_id = $1", booking_id)
    return [int(r["room_type_id"]) for r in rows]


async def mark_cancelled(conn: asyncpg.Connection, booking_id: int, reason: str | None, at: datetime) -> None:
    await conn.execute(
        "UPDATE bookings SET status = 'CANCELLED', cancelled_at = $2, cancel_reason = $3 WHERE id = $1",
        booking_id, at, reason)
    await conn.execute("UPDATE booking_rooms SET status = 'CANCELLED' WHERE booking_id = $1", booking_id)


async def check_in(db: Database, booking_id: int, at: datetime) -> tuple[str, int] | None:
    """Move an UPCOMING booking to CHECKED_IN; answers (its status before, property), None if absent."""
    async def work(conn: asyncpg.Connection) -> tuple[str, int] | None:
        row = await conn.fetchrow("SELECT status, property_id FROM bookings WHERE id = $1 FOR UPDATE", booking_id)
        if row is None:
            return None
        if row["status"] == "UPCOMING":
            await conn.execute("UPDATE bookings SET status = 'CHECKED_IN', checked_in_at = $2 WHERE id = $1",
                               booking_id, at)
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
                              payload: dict[str, Any], at: datetime) -> None:
    await conn.execute(
        """INSERT INTO domain_events (property_id, booking_id, type, payload, occurred_at)
           VALUES ($1, $2, $3, $4, $5)""",
        property_id, booking_id, kind, payload, at)
