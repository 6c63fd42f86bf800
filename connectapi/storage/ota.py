"""OTA revisions and the bookings they make, in the record.

Revisions are stored as they came (less any card data: PCI) before anything is applied, so
a crash between the pull and the acknowledgement loses nothing: the next round applies what
is still 'received' and acknowledges what is settled but not yet acknowledged (applied,
acknowledgement pending: never applied again).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
from typing_extensions import TypedDict

from ..domain.ota_bookings import CellMove, Mapping, OtaBooking, without_card
from ..domain.revision_screen import Cut, StayFacts
from ..domain.webhook_body import WebhookBooking
from . import bookings
from .bookings import availability_of as availability_of  # the OTA intake's, as the PMS's
from .database import Database, names_nothing
from .twins import catalog_owner


# The revisions of one mode's properties: a live intake's, or the test sandbox's (twins').
_OF_MODE = "property_id IN (SELECT m.id FROM properties m WHERE m.mode = $2)"


async def property_ids_by_cm(db: Database, mode: str = "live") -> dict[str, int]:
    """Our property id for each channel-manager property id we map; in `test` mode, the test
    twin of each (the test sandbox knows a twin by its live property's ids)."""
    rows = await db.fetch(
        """SELECT coalesce(t.id, l.id) AS id, l.cm_property_id
           FROM properties l LEFT JOIN properties t ON t.twin_of = l.id AND $1 = 'test'
           WHERE l.cm_property_id IS NOT NULL AND l.mode = 'live' AND ($1 = 'live' OR t.id IS NOT NULL)""", mode)
    return {r["cm_property_id"]: r["id"] for r in rows}


@dataclass(frozen=True, slots=True)
class Stored:
    """How a revision from the feed was kept: `new` (stored, to be applied), `clash` (its id
    or system_id is an earlier revision's of another booking or property, or its booking is
    another property's: stored to be refused and told, decisions 0126 and 0149), or `again`
    (the same revision offered again), with
    whether to acknowledge it now: one settled and acknowledged here (our acknowledgement
    lost on its way), or a repeat under a new id. One waiting to be applied, or applied with
    its acknowledgement pending, is the round's to apply or acknowledge, once."""

    outcome: str
    ack_now: bool = False


async def store_revision(db: Database, revision_id: str, system_id: str, property_id: int, cm_booking_id: str,
                         revised_at: datetime, payload: dict[str, Any], cuts: tuple[Cut, ...],
                         at: datetime) -> Stored:
    """Keep a revision as it came, less its card data and bounded (`cuts` says what the
    bounding cut); a repeat is a no-op, a clash is kept apart."""
    # The intake has taken the card out already; this is the last gate before the record.
    text = json.dumps(without_card(payload))
    cut = json.dumps([c.as_json() for c in cuts]) if cuts else None

    async def work(conn: asyncpg.Connection) -> Stored | None:
        elsewhere = await _booking_elsewhere(conn, cm_booking_id, property_id)
        if elsewhere is not None:
            # The booking is another property's: kept apart, refused and shown for review,
            # never made into a second booking here (decision 0149). This revision kept here
            # already (as a clash, or before the booking was applied elsewhere) is offered again.
            here = await _kept_here(conn, revision_id, property_id, cm_booking_id)
            if here is not None:
                return here
            made = await conn.fetchval(
                """INSERT INTO ota_revisions (id, system_id, property_id, cm_booking_id, revised_at, payload, state,
                                              received_at, cut, clash_of)
                   VALUES ($1, $2, $3, $4, $5, $6, 'received', $7, $8, $9) ON CONFLICT DO NOTHING RETURNING seq""",
                revision_id, system_id, property_id, cm_booking_id, revised_at, text, at, cut, elsewhere)
            if made is not None:
                return Stored("clash")
            return await _kept_here(conn, revision_id, property_id, cm_booking_id)  # kept meanwhile elsewhere
        stored = await conn.fetchval(
            """INSERT INTO ota_revisions (id, system_id, property_id, cm_booking_id, revised_at, payload, state,
                                          received_at, cut)
               VALUES ($1, $2, $3, $4, $5, $6, 'received', $7, $8) ON CONFLICT DO NOTHING RETURNING seq""",
            revision_id, system_id, property_id, cm_booking_id, revised_at, text, at, cut)
        if stored is not None:
            return Stored("new")
        kept = await conn.fetch(
            """SELECT seq, id, property_id, cm_booking_id, state, acked_at, payload FROM ota_revisions
               WHERE id = $1 OR system_id = $2 ORDER BY seq""", revision_id, system_id)
        if not kept:
            return None  # the one it met has just been pruned: store it again
        same = [r for r in kept if r["property_id"] == property_id and r["cm_booking_id"] == cm_booking_id]
        by_id = [r for r in same if r["id"] == revision_id]
        if by_id:
            return _again(by_id)
        if any(_content(r["payload"]) == _content(text) for r in same):
            # The same message under a new id (its system id the same): nothing of ours to wait for.
            return Stored("again", True)
        # Another booking's, another property's, or the same system id saying something else.
        await conn.execute(
            """INSERT INTO ota_revisions (id, system_id, property_id, cm_booking_id, revised_at, payload, state,
                                          received_at, cut, clash_of)
               VALUES ($1, $2, $3, $4, $5, $6, 'received', $7, $8, $9) ON CONFLICT DO NOTHING""",
            revision_id, system_id, property_id, cm_booking_id, revised_at, text, at, cut, kept[0]["seq"])
        return Stored("clash")

    for _ in range(3):
        done = await db.transaction(work)
        if done is not None:
            return done
    raise RuntimeError(f"revision {revision_id[:40]} neither stored nor found three times")


async def _kept_here(conn: asyncpg.Connection, revision_id: str, property_id: int,
                     cm_booking_id: str) -> Stored | None:
    """The revision offered again, if this property keeps it (as a clash or not), with
    whether to acknowledge it now; None when it does not."""
    # One branch per partial index on the id (a clash's, and the others').
    here = await conn.fetch(
        """SELECT state, acked_at FROM ota_revisions
           WHERE id = $1 AND clash_of IS NULL AND property_id = $2 AND cm_booking_id = $3
           UNION ALL
           SELECT state, acked_at FROM ota_revisions
           WHERE id = $1 AND property_id = $2 AND cm_booking_id = $3 AND clash_of IS NOT NULL""",
        revision_id, property_id, cm_booking_id)
    return _again(here) if here else None


def _again(kept: list[asyncpg.Record]) -> Stored:
    """A revision offered again, acknowledged now if each of its rows is settled and was
    acknowledged here (ours lost on its way); else the round's to apply or acknowledge."""
    return Stored("again", all(r["state"] != "received" and r["acked_at"] is not None for r in kept))


async def _booking_elsewhere(conn: asyncpg.Connection, cm_booking_id: str, property_id: int) -> int | None:
    """The seq of a revision that made the booking `cm_booking_id` another property's (one
    applied there, or one waiting there), or None: a channel-manager booking id is one
    booking of one property."""
    found = await conn.fetchval(
        """SELECT min(seq) FROM (
               SELECT b.last_revision_seq AS seq FROM ota_bookings b
               WHERE b.cm_booking_id = $1 AND b.property_id <> $2
               UNION ALL
               SELECT r.seq FROM ota_revisions r
               WHERE r.cm_booking_id = $1 AND r.property_id <> $2 AND r.clash_of IS NULL
                 AND r.state IN ('received', 'applied')) s""", cm_booking_id, property_id)
    return None if found is None else int(found)


async def repeats_ids_of_its_clash(db: Database, clash_of: int, revision_id: str, system_id: str) -> bool:
    """Whether a clash repeats the id or system id of the revision it clashes with (else
    it names a booking another property holds: `_booking_elsewhere`)."""
    return bool(await db.fetchval(
        "SELECT EXISTS (SELECT 1 FROM ota_revisions r WHERE r.seq = $1 AND (r.id = $2 OR r.system_id = $3))",
        clash_of, revision_id, system_id))


# What names a revision rather than says what it is: a repeat under a new id differs in these.
_NAMING = ("id", "revision_id", "inserted_at")


def _content(payload: Any) -> dict[str, object]:
    """A stored revision's content, its naming members left out."""
    found = json.loads(payload) if isinstance(payload, str) else payload
    return {k: v for k, v in found.items() if k not in _NAMING} if isinstance(found, dict) else {}


@dataclass(frozen=True, slots=True)
class Received:
    seq: int
    id: str
    property_id: int
    cm_booking_id: str
    revised_at: datetime
    payload: dict[str, Any]
    cuts: tuple[Cut, ...] = ()
    attempts: int = 0
    clash_of: int | None = None  # the earlier revision whose id or system_id this one repeats


async def received(db: Database, limit: int = 500, mode: str = "live") -> list[Received]:
    """Revisions of `mode`'s properties stored but not yet applied, in the order they came."""
    rows = await db.fetch(
        f"""SELECT seq, id, property_id, cm_booking_id, revised_at, payload, cut, attempts,
                   CASE WHEN clash_cleared THEN NULL ELSE clash_of END AS clash_of
            FROM ota_revisions WHERE state = 'received' AND {_OF_MODE} ORDER BY seq LIMIT $1""", limit, mode)
    return [Received(r["seq"], r["id"], r["property_id"], r["cm_booking_id"], r["revised_at"],
                     json.loads(r["payload"]), _cuts(r["cut"]), r["attempts"], r["clash_of"]) for r in rows]


def _cuts(stored: Any) -> tuple[Cut, ...]:
    if stored is None:
        return ()
    listed = json.loads(stored) if isinstance(stored, str) else stored
    return tuple(Cut.from_json(c) for c in listed)


async def count_attempt(db: Database, seq: int, why: str) -> int:
    """One more apply of a waiting revision that ran out of time or was rolled back for now;
    answers how many there have been (0: it is no longer waiting)."""
    tries = await db.fetchval(
        """UPDATE ota_revisions SET attempts = attempts + 1, note = $2 WHERE seq = $1 AND state = 'received'
           RETURNING attempts""", seq, why[:300])
    return int(tries or 0)


async def lock_received(conn: asyncpg.Connection, seq: int) -> bool:
    """Lock a revision for applying; False when it is no longer waiting to be applied."""
    state = await conn.fetchval("SELECT state FROM ota_revisions WHERE seq = $1 FOR UPDATE", seq)
    return bool(state == "received")


async def settle(conn: asyncpg.Connection, seq: int, state: str, note: str | None, booking_id: int | None,
                 at: datetime) -> None:
    await conn.execute(
        "UPDATE ota_revisions SET state = $2, note = $3, booking_id = $4, settled_at = $5 WHERE seq = $1",
        seq, state, note, booking_id, at)


KEPT_STATES = ("unmapped", "refused")  # kept without changing anything: the owner may have them applied again


async def apply_again(db: Database, property_id: int, revision_id: str) -> str | None:
    """Put a kept revision back among those waiting to be applied, answering the state it
    had (unchanged unless kept); None when the property has no such revision. Its
    acknowledgement stands: the channel manager is not asked again. A clash put back is the
    operator's word that it is genuine: it is applied as any revision."""
    if names_nothing(revision_id):
        return None
    before = await db.fetchval(
        """WITH before AS (SELECT seq, state FROM ota_revisions WHERE id = $2 AND property_id = $1 FOR UPDATE),
                again AS (UPDATE ota_revisions r SET state = 'received', note = NULL, settled_at = NULL, attempts = 0,
                                                     clash_cleared = r.clash_of IS NOT NULL
                          FROM before WHERE r.seq = before.seq AND before.state = ANY($3::text[]))
           SELECT state FROM before ORDER BY seq DESC LIMIT 1""",
        property_id, revision_id, list(KEPT_STATES))
    return None if before is None else str(before)


async def unacknowledged(db: Database, limit: int = 500, mode: str = "live") -> list[str]:
    """Settled revisions of `mode`'s properties still to acknowledge at their channel manager."""
    rows = await db.fetch(
        f"""SELECT id FROM ota_revisions WHERE state <> 'received' AND acked_at IS NULL AND {_OF_MODE}
            GROUP BY id ORDER BY min(seq) LIMIT $1""", limit, mode)
    return [r["id"] for r in rows]


async def acknowledged(db: Database, revision_id: str, at: datetime) -> None:
    """The channel manager took the acknowledgement of this id: every settled revision kept
    under it (a clash shares its id with an earlier one) is acknowledged."""
    await db.execute("UPDATE ota_revisions SET acked_at = $2 WHERE id = $1 AND state <> 'received' AND acked_at IS NULL",
                     revision_id, at)


async def mapping_in(conn: asyncpg.Connection, property_id: int) -> Mapping:
    owner = catalog_owner("$1")
    rooms = await conn.fetch(
        f"SELECT id, cm_id, rooms FROM room_types WHERE property_id = {owner} AND cm_id IS NOT NULL", property_id)
    plans = await conn.fetch(
        f"SELECT id, cm_id, meal_plan FROM rate_plans WHERE property_id = {owner} AND cm_id IS NOT NULL", property_id)
    return Mapping({r["cm_id"]: r["id"] for r in rooms}, {p["cm_id"]: p["id"] for p in plans},
                   {p["id"]: p["meal_plan"] for p in plans}, {r["cm_id"]: r["rooms"] for r in rooms})


async def screening_facts(db: Database, property_id: int, now: datetime) -> tuple[Mapping, StayFacts] | None:
    """The property's mapping, and what a revision of it is screened against (its today,
    its rooms); None when there is no such property. Read without any lock: it is read
    before the property is locked, so that a revision it refuses never takes the lock."""
    async def work(conn: asyncpg.Connection) -> tuple[Mapping, StayFacts] | None:
        zone = await conn.fetchval("SELECT timezone FROM properties WHERE id = $1", property_id)
        if zone is None:
            return None
        mapping = await mapping_in(conn, property_id)
        return mapping, StayFacts(now.astimezone(ZoneInfo(zone)).date(), mapping.room_counts)

    return await db.run(work)


@dataclass(frozen=True, slots=True)
class Known:
    """An OTA booking already made: what it is now, and the revision that made it so."""

    booking_id: int
    reference: str
    status: str
    last_revision_at: datetime
    last_revision_seq: int
    told: WebhookBooking  # as an earlier event told it: without the members added since (issue 42)


async def known_booking(conn: asyncpg.Connection, property_id: int, cm_booking_id: str) -> Known | None:
    """The OTA booking of this channel-manager booking id, locked for the change."""
    row = await conn.fetchrow(
        """SELECT o.booking_id, b.reference, b.status, o.last_revision_at, o.last_revision_seq, o.told
           FROM ota_bookings o JOIN bookings b ON b.id = o.booking_id
           WHERE o.property_id = $1 AND o.cm_booking_id = $2 FOR UPDATE OF o, b""",
        property_id, cm_booking_id)
    if row is None:
        return None
    return Known(row["booking_id"], row["reference"], row["status"], row["last_revision_at"],
                 row["last_revision_seq"], json.loads(row["told"]))


async def next_booking(conn: asyncpg.Connection, property_id: int, live_id: int, mode: str) -> tuple[int, str]:
    """A new booking's id and PMS reference (migration 0030), under the property's lock."""
    row = await conn.fetchrow("SELECT connectapi_new_id('bookings') AS id, connectapi_next_booking_numbers($1, 1) AS n",
                              property_id)
    assert row is not None
    return int(row["id"]), bookings.pms_reference(live_id, row["n"], mode)


async def insert_booking(conn: asyncpg.Connection, property_id: int, booking_id: int, reference: str,
                         cm_booking_id: str, booking: OtaBooking, status: str, revised_at: datetime,
                         revision_seq: int, told: WebhookBooking, at: datetime) -> None:
    guest_id = await conn.fetchval(
        """INSERT INTO guests (property_id, phone, name, email, created_at) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (property_id, phone) DO UPDATE SET email = COALESCE(guests.email, EXCLUDED.email)
           RETURNING id""",
        property_id, booking.guest_phone, booking.guest_name, booking.guest_email, at)
    await conn.execute(
        """INSERT INTO bookings (id, property_id, source, reference, status, check_in, check_out, currency, guest_id,
                                 guest_name, guest_phone, guest_email, total_minor, created_at, cancelled_at)
           VALUES ($1, $2, 'ota', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                   CASE WHEN $4::text = 'CANCELLED' THEN $13::timestamptz END)""",
        booking_id, property_id, reference, status, booking.check_in, booking.check_out, booking.currency,
        guest_id, booking.guest_name, booking.guest_phone, booking.guest_email, booking.total_minor, at)
    await _insert_rooms(conn, booking_id, booking, status)
    await conn.execute(
        """INSERT INTO ota_bookings (booking_id, property_id, cm_booking_id, last_revision_at, last_revision_seq,
                                     told)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        booking_id, property_id, cm_booking_id, revised_at, revision_seq, json.dumps(told))


async def update_booking(conn: asyncpg.Connection, booking_id: int, booking: OtaBooking, status: str,
                         revised_at: datetime, revision_seq: int, told: WebhookBooking, at: datetime) -> None:
    await conn.execute(
        """UPDATE bookings SET status = $2, check_in = $3, check_out = $4, currency = $5, guest_name = $6,
                               guest_phone = $7, guest_email = $8, total_minor = $9,
                               cancelled_at = CASE WHEN $2::text = 'CANCELLED' THEN COALESCE(cancelled_at, $10::timestamptz) END
           WHERE id = $1""",
        booking_id, status, booking.check_in, booking.check_out, booking.currency, booking.guest_name,
        booking.guest_phone, booking.guest_email, booking.total_minor, at)
    await conn.execute("DELETE FROM booking_rooms WHERE booking_id = $1", booking_id)
    await _insert_rooms(conn, booking_id, booking, status)
    await conn.execute(
        "UPDATE ota_bookings SET last_revision_at = $2, last_revision_seq = $3, told = $4 WHERE booking_id = $1",
        booking_id, revised_at, revision_seq, json.dumps(told))


async def _insert_rooms(conn: asyncpg.Connection, booking_id: int, booking: OtaBooking, status: str) -> None:
    await conn.executemany(
        """INSERT INTO booking_rooms (booking_id, position, room_type_id, rate_plan_id, meal_plan, adults, children,
                                      nightly_minor, status)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)""",
        [(booking_id, i, r.room_type_id, r.rate_plan_id, r.meal_plan, r.adults, r.children, r.nightly_minor, status)
         for i, r in enumerate(booking.rooms)])


async def rooms_held(conn: asyncpg.Connection, booking_id: int) -> Counter[tuple[int, date]]:
    """Rooms the booking took from the inventory per (room type, night): all it gives back."""
    rows = await conn.fetch(
        """SELECT room_type_id, first_night AS night, -sum(delta) AS held FROM inventory_events
           WHERE booking_id = $1 GROUP BY room_type_id, first_night""", booking_id)
    return Counter({(r["room_type_id"], r["night"]): int(r["held"]) for r in rows if r["held"]})


async def move_cells(conn: asyncpg.Connection, property_id: int, booking_id: int,
                     moves: dict[tuple[int, date], CellMove], reason: str, at: datetime) -> None:
    """Move the cells (dirty for the drain) and record one inventory event per cell moved:
    an OTA booking is taken per night, since a night may have had fewer rooms than it sold."""
    await bookings.move_cells(conn, property_id, booking_id, {cell: move.delta for cell, move in moves.items()},
                              reason, at)


async def told_of(db: Database, property_id: int, booking_id: int) -> WebhookBooking | None:
    """An OTA booking as its last event told it (`data.booking`): what the front desk reads."""
    found = await db.fetchval("SELECT told FROM ota_bookings WHERE booking_id = $1 AND property_id = $2",
                              booking_id, property_id)
    if found is None:
        return None
    told: WebhookBooking = json.loads(found) if isinstance(found, str) else found
    return told


class RevisionView(TypedDict):
    """A revision as the admin API and the console list it."""

    revisionId: str
    state: str
    note: str | None
    cut: list[str]
    attempts: int
    clash: bool
    # As the feed sent them (its stored payload, read no further): any JSON value.
    status: object
    reservationCode: object
    reference: str | None  # the booking it made or changed
    receivedAt: str
    settledAt: str | None
    acknowledged: bool


async def told_reference(db: Database, property_id: int, revision_id: str) -> tuple[str, str | None] | None:
    """A revision of the property as far as it went: its state, and the reference of the
    booking it made or changed (None until applied); None until it is stored."""
    row = await db.fetchrow(
        """SELECT r.state, b.reference FROM ota_revisions r LEFT JOIN bookings b ON b.id = r.booking_id
           WHERE r.property_id = $1 AND r.id = $2""", property_id, revision_id)
    return None if row is None else (row["state"], row["reference"])


async def reservation_code_of(db: Database, property_id: int, reference: str) -> str | None:
    """The channel's reservation code of the property's OTA booking with this reference."""
    if names_nothing(reference):
        return None
    payload = await db.fetchval(
        """SELECT r.payload FROM ota_revisions r JOIN bookings b ON b.id = r.booking_id
           WHERE r.property_id = $1 AND b.reference = $2 AND b.source = 'ota' ORDER BY r.seq LIMIT 1""",
        property_id, reference)
    code = _content(payload).get("ota_reservation_code") if payload is not None else None
    return code if isinstance(code, str) else None


async def revisions_of(db: Database, property_id: int, limit: int = 100) -> list[RevisionView]:
    """The property's revisions, newest first, as the admin interface shows them."""
    rows = await db.fetch(
        """SELECT r.id, r.state, r.note, r.received_at, r.settled_at, r.acked_at, r.payload, r.cut, r.attempts,
                  r.clash_of, b.reference
           FROM ota_revisions r LEFT JOIN bookings b ON b.id = r.booking_id
           WHERE r.property_id = $1 ORDER BY r.seq DESC LIMIT $2""", property_id, limit)
    views: list[RevisionView] = []
    for r in rows:
        payload = json.loads(r["payload"])
        views.append({"revisionId": r["id"], "state": r["state"], "note": r["note"],
                      "cut": [c.said() for c in _cuts(r["cut"])], "attempts": r["attempts"],
                      "clash": r["clash_of"] is not None,
                      "status": payload.get("status"), "reservationCode": payload.get("ota_reservation_code"),
                      "reference": r["reference"], "receivedAt": r["received_at"].isoformat(),
                      "settledAt": r["settled_at"].isoformat() if r["settled_at"] else None,
                      "acknowledged": r["acked_at"] is not None})
    return views
