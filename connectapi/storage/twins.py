"""A property's test twin (issue 29, docs/decisions/0115-test-mode-twins.md): a property of
its own in the record, with the live property's catalog.

The twin is made when first needed (its first test key or test endpoint), follows its
live property's settings, and never e-mails anyone: it has no owner address and sends no
guest confirmations, whatever the live property does.
"""

from __future__ import annotations

from datetime import date, timedelta

import asyncpg

from ..domain.ari_write import HORIZON_DAYS
from .database import Database

# What a twin takes from its live property when it is made, and again on every change of
# the live property's settings. Not the owner's address nor guest confirmations: a test
# booking e-mails nobody.
FOLLOWED = ("name", "timezone", "currency", "channel_manager", "pms", "pms_entitled", "status", "bookings_per_day")


def catalog_owner(param: str) -> str:
    """SQL for the property whose room types and rate plans property `param` has: its own
    for a live property, its live property's for a test twin."""
    return f"(SELECT coalesce(o.twin_of, o.id) FROM properties o WHERE o.id = {param})"


async def twin_of(db: Database, live_id: int) -> int | None:
    """The test twin of `live_id`, if it has one yet."""
    found: int | None = await db.fetchval("SELECT id FROM properties WHERE twin_of = $1", live_id)
    return found


async def only_test_keys_wrote(db: Database, live_id: int) -> bool:
    """Test keys have written on the property (ARI writes or bookings on its twin) and live
    keys not yet: what a newcomer's tour leaves (the console points there)."""
    found: bool = await db.fetchval(
        """SELECT (EXISTS (SELECT FROM write_batches b JOIN properties t ON t.id = b.property_id WHERE t.twin_of = $1)
                   OR EXISTS (SELECT FROM bookings k JOIN properties t ON t.id = k.property_id WHERE t.twin_of = $1))
                  AND NOT EXISTS (SELECT FROM write_batches WHERE property_id = $1)
                  AND NOT EXISTS (SELECT FROM bookings WHERE property_id = $1)""", live_id)
    return found


async def ensure_twin(db: Database, live_id: int, today: date) -> int | None:
    """The id of `live_id`'s test twin, made now if it has none (None: no such live property).

    Made in one transaction under the live property's row lock, with its availability as a
    new property's: every night of the horizon at the room count, to be pushed to the test
    sandbox."""
    async def work(conn: asyncpg.Connection) -> int | None:
        live = await conn.fetchrow("SELECT id, mode FROM properties WHERE id = $1 FOR NO KEY UPDATE", live_id)
        if live is None or live["mode"] != "live":
            return None
        found: int | None = await conn.fetchval("SELECT id FROM properties WHERE twin_of = $1", live_id)
        if found is not None:
            return found
        columns = ", ".join(FOLLOWED)
        twin: int = await conn.fetchval(
            f"""INSERT INTO properties ({columns}, owner_email, guest_confirmation, mode, twin_of)
                SELECT {columns}, NULL, false, 'test', id FROM properties WHERE id = $1 RETURNING id""", live_id)
        await _seed_availability(conn, twin, today)
        return twin

    return await db.transaction(work)


# What a reset empties, children before parents; keys and endpoints stay.
_RESET = (
    "DELETE FROM webhook_deliveries WHERE event_id IN (SELECT id FROM webhook_events WHERE property_id = $1)",
    "DELETE FROM webhook_events WHERE property_id = $1",
    "DELETE FROM ota_revisions WHERE property_id = $1",
    "DELETE FROM ota_bookings WHERE booking_id IN (SELECT id FROM bookings WHERE property_id = $1)",
    "DELETE FROM folio_lines WHERE booking_id IN (SELECT id FROM bookings WHERE property_id = $1)",
    "DELETE FROM booking_rooms WHERE booking_id IN (SELECT id FROM bookings WHERE property_id = $1)",
    "DELETE FROM activity_log WHERE property_id = $1",
    "DELETE FROM inventory_events WHERE property_id = $1",
    "DELETE FROM domain_events WHERE property_id = $1",
    "DELETE FROM notifications WHERE property_id = $1",
    "DELETE FROM bookings WHERE property_id = $1",
    "DELETE FROM guests WHERE property_id = $1",
    "DELETE FROM availability_cells WHERE property_id = $1",
    "DELETE FROM rate_cells WHERE property_id = $1",
    "DELETE FROM restriction_cells WHERE property_id = $1",
    "DELETE FROM write_batches WHERE property_id = $1",  # their channel tasks go with them
    "DELETE FROM channel_refusals WHERE property_id = $1",
    "DELETE FROM idempotency_keys WHERE property_id = $1",
)


async def reset(db: Database, twin_id: int, today: date) -> None:
    """A test twin's record emptied (ARI, batches, bookings, OTA revisions, events,
    idempotency records) and its availability as a new property's again; its keys and
    endpoints stay. Under the twin's row lock, as every write of it is."""
    async def work(conn: asyncpg.Connection) -> None:
        mode = await conn.fetchval("SELECT mode FROM properties WHERE id = $1 FOR NO KEY UPDATE", twin_id)
        if mode != "test":
            raise ValueError(f"property {twin_id} is not a test twin: only a twin's record is ever reset")
        for statement in _RESET:
            await conn.execute(statement, twin_id)
        await conn.execute(
            """UPDATE properties SET cm_last_outcome = NULL, cm_last_error = NULL, cm_last_push_at = NULL,
                                     cm_failures = 0, cm_next_attempt_at = NULL, cm_past_dropped = 0
               WHERE id = $1""", twin_id)
        await _seed_availability(conn, twin_id, today)

    # Bulk deletes of a test record that may be large: each has the command timeout, as each
    # statement had before the bound was one per call (decision 0143).
    await db.transaction(work, within=(len(_RESET) + 3) * db.command_timeout)


async def _seed_availability(conn: asyncpg.Connection, twin_id: int, today: date) -> None:
    # Dirty, unlike a new live property's (whose sandbox seeding holds them at once): the
    # test sandbox knows a twin only from its pushes, and one call carries a whole room
    # type's horizon of one count. Until then /sync says so.
    await conn.execute(
        """INSERT INTO availability_cells (property_id, room_type_id, night, available, version, pushed_version)
           SELECT t.id, r.id, d::date, r.rooms, nextval('ari_versions'), 0
           FROM properties t JOIN room_types r ON r.property_id = t.twin_of,
                generate_series($2::date, $3::date, interval '1 day') AS d
           WHERE t.id = $1""",
        twin_id, today, today + timedelta(days=HORIZON_DAYS))


async def follow_live(conn: asyncpg.Connection, live_id: int) -> None:
    """The twin of `live_id` takes its live property's settings again (after a change)."""
    await conn.execute(
        f"""UPDATE properties t SET ({', '.join(FOLLOWED)}, updated_at) =
                (SELECT {', '.join('l.' + c for c in FOLLOWED)}, now() FROM properties l WHERE l.id = $1)
            WHERE t.twin_of = $1""", live_id)

