"""Cells the channel manager refused, and when to offer them again.

Channex answers a call 200 and lists the values it refused in `meta.warnings`. Their
cells stay dirty, marked refused at the version refused (`refused_version`) with what
Channex said (`refusal`); the pusher leaves them out of its calls until the property's
retry time (`channel_refusals`), then offers them again. A newer write of a cell is a
newer version and goes out at once; a cell the channel manager takes is marked pushed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import asyncpg

from ..domain.emails import Email
from . import notifications
from .database import Database
from .pushes import CELL_TABLES, HELD, DirtyCell, update_cells

async def mark_refused(db: Database, property_id: int, resource: str, cells: list[tuple[DirtyCell, str]]) -> int:
    """Mark these versions refused, with what was said of each; a cell written since (a
    newer version) is left alone. What the channel manager holds there is forgotten: a
    call that refused a value may have applied another over those nights (a range's
    base value under a refused weekday override), so the next write is always sent.
    Answers how many were marked."""
    if not cells:
        return 0
    table, id_column, pushed_column = CELL_TABLES[resource]
    return await update_cells(
        db, property_id,
        f"""UPDATE {table} AS c SET refused_version = w.version, refusal = w.refusal, {pushed_column} = NULL
            FROM unnest($1::bigint[], $2::date[], $3::bigint[], $4::text[]) AS w (id, night, version, refusal)
            WHERE {HELD} AND c.property_id = $5 AND c.{id_column} = w.id AND c.night = w.night
              AND c.version = w.version AND c.pushed_version < w.version""",
        [c.entity_id for c, _ in cells], [c.night for c, _ in cells], [c.version for c, _ in cells],
        [said for _, said in cells], property_id,
    )


async def retry_at(db: Database, property_id: int, kind: str) -> datetime | None:
    """When the pipe's refused cells are next offered, None when none wait."""
    found: datetime | None = await db.fetchval(
        "SELECT retry_at FROM channel_refusals WHERE property_id = $1 AND kind = $2", property_id, kind)
    return found


async def refused_again(db: Database, property_id: int, kind: str, now: datetime, offered: bool,
                        backoff: Callable[[int], timedelta]) -> datetime:
    """A call refused some of the pipe's cells. When it carried cells refused before
    (`offered`: their retry was due), the try is counted and the next put off by
    `backoff(tries)`. Otherwise these are new refusals: a first try, whose retry comes
    no later than `backoff(1)` from now; refusals still waiting keep their count, and
    an episode long over (its retry passed) starts afresh. Answers the retry's time."""
    first = now + backoff(1)

    async def work(conn: asyncpg.Connection) -> datetime:
        held = await conn.fetchrow(
            "SELECT tries, retry_at FROM channel_refusals WHERE property_id = $1 AND kind = $2 FOR UPDATE",
            property_id, kind)
        if held is None:
            tries, when = 1, first
        elif offered:
            tries = held["tries"] + 1
            when = now + backoff(tries)
        elif held["retry_at"] > now:
            tries, when = held["tries"], min(held["retry_at"], first)
        else:
            tries, when = 1, first
        await conn.execute(
            """INSERT INTO channel_refusals (property_id, kind, tries, retry_at) VALUES ($1, $2, $3, $4)
               ON CONFLICT (property_id, kind) DO UPDATE SET tries = EXCLUDED.tries, retry_at = EXCLUDED.retry_at""",
            property_id, kind, tries, when)
        return when

    return await db.transaction(work)


async def cleared(db: Database, property_id: int, kind: str) -> None:
    """No refused cell of the pipe is left: its backoff starts over next time."""
    await db.execute("DELETE FROM channel_refusals WHERE property_id = $1 AND kind = $2", property_id, kind)


@dataclass(frozen=True, slots=True)
class BatchRefusal:
    """What the channel manager said of some of a batch's cells of one room type or rate
    plan (`entity_id`), with how many and which nights (first and last)."""

    entity_id: int
    refusal: str
    cells: int
    first: date
    last: date


# A batch's refusal entries shown at most: one per rate plan (Channex allows 200 to a
# property) or room type and what was said, with room to spare before any is left out.
BATCH_REFUSALS_SHOWN = 250


async def of_batch(db: Database, resource: str, batch: uuid.UUID) -> list[BatchRefusal]:
    """The batch's own cells (last written by it) refused and still waiting, by room type
    or rate plan and what was said (at most BATCH_REFUSALS_SHOWN entries)."""
    table, id_column, _ = CELL_TABLES[resource]
    rows = await db.fetch(
        f"""SELECT {id_column} AS entity, refusal, count(*) AS cells, min(night) AS first, max(night) AS last
            FROM {table}
            WHERE last_batch_id = $1 AND version > pushed_version AND refused_version = version
            GROUP BY {id_column}, refusal ORDER BY min(night), {id_column}, refusal LIMIT $2""",
        batch, BATCH_REFUSALS_SHOWN)
    return [BatchRefusal(r["entity"], r["refusal"] or "", r["cells"], r["first"], r["last"]) for r in rows]


@dataclass(frozen=True, slots=True)
class PropertyRefusal:
    """Refused cells of one room type or rate plan, by what was said (the console lists them)."""

    resource: str
    entity_id: int
    refusal: str
    cells: int
    first: date
    last: date


async def of_property(db: Database, property_id: int, limit: int = 100) -> list[PropertyRefusal]:
    rows = await db.fetch(
        """SELECT resource, entity, refusal, count(*) AS cells, min(night) AS first, max(night) AS last FROM (
               SELECT 'availability' AS resource, room_type_id AS entity, refusal, night FROM availability_cells
               WHERE property_id = $1 AND version > pushed_version AND refused_version = version
               UNION ALL
               SELECT 'rates', rate_plan_id, refusal, night FROM rate_cells
               WHERE property_id = $1 AND version > pushed_version AND refused_version = version
               UNION ALL
               SELECT 'restrictions', rate_plan_id, refusal, night FROM restriction_cells
               WHERE property_id = $1 AND version > pushed_version AND refused_version = version) refused
           GROUP BY resource, entity, refusal ORDER BY resource, entity, min(night) LIMIT $2""",
        property_id, limit)
    return [PropertyRefusal(r["resource"], r["entity"], r["refusal"] or "", r["cells"], r["first"], r["last"])
            for r in rows]


async def tell_owner_once(db: Database, property_id: int, today: date, at: datetime,
                          compose: Callable[[str], Email]) -> bool:
    """Queue the owner's e-mail of refusals, `compose(property name)`, unless they were told
    already on `today` (the property's day) or have no address: the claim and the e-mail
    are one transaction. Answers whether it was queued."""

    async def work(conn: asyncpg.Connection) -> bool:
        owner = await conn.fetchrow(
            """UPDATE properties SET cm_refusal_mailed_on = $2
               WHERE id = $1 AND cm_refusal_mailed_on IS DISTINCT FROM $2 AND owner_email IS NOT NULL
               RETURNING owner_email, name""", property_id, today)
        if owner is None:
            return False
        mail = compose(owner["name"])
        await notifications.enqueue(conn, property_id, None, mail.kind, owner["owner_email"], mail.subject,
                                    mail.body, at)
        return True

    return await db.transaction(work)
