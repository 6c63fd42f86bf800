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
from .records import Property

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


async def ensure_twin(db: Database, live_id: int, today: date) -> int | None:
    """The id of `live_id`'s test twin, made now if it has none (None: no such live property).

    Made in one transaction under the live property's row lock, with its availability as a
    new property's: every night of the horizon at the room count, in sync."""
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
        await conn.execute(
            """INSERT INTO availability_cells (property_id, room_type_id, night, available, version, pushed_version,
                                              pushed_available)
               SELECT $1, r.id, d::date, r.rooms, 1, 1, r.rooms
               FROM room_types r, generate_series($3::date, $4::date, interval '1 day') AS d
               WHERE r.property_id = $2""",
            twin, live_id, today, today + timedelta(days=HORIZON_DAYS))
        return twin

    return await db.transaction(work)


async def follow_live(conn: asyncpg.Connection, live_id: int) -> None:
    """The twin of `live_id` takes its live property's settings again (after a change)."""
    await conn.execute(
        f"""UPDATE properties t SET ({', '.join(FOLLOWED)}, updated_at) =
                (SELECT {', '.join('l.' + c for c in FOLLOWED)}, now() FROM properties l WHERE l.id = $1)
            WHERE t.twin_of = $1""", live_id)


def is_test(prop: Property) -> bool:
    return prop.mode == "test"
