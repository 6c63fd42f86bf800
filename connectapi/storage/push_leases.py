"""Push leases in the record: which process pushes a property now, and until when (migration 0017).

Times are seconds since the epoch; `now=None` takes the database server's clock, the one
clock every process and machine shares (tests give their fake clock's time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from .database import Database
from .pushes import pushable

_NOW = "coalesce($1::double precision, extract(epoch FROM clock_timestamp()))"


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a property's lease after a take, and for how many seconds more. `holder`
    is None when nobody could be seen holding it (a racer took it and gave it back
    between our two looks): look again soon."""

    holder: str | None
    remaining: float


async def take(db: Database, property_id: int, holder: str, now: float | None, seconds: float) -> Lease:
    """Take the property's lease for `holder` (or renew it if `holder` has it) unless another
    holder's lease is still running; answers who holds it now."""

    async def work(conn: asyncpg.Connection) -> Lease:
        taken = await conn.fetchrow(
            f"""WITH clock AS (SELECT {_NOW} AS at)
                INSERT INTO push_leases AS l (property_id, holder, until)
                SELECT $2, $3, clock.at + $4 FROM clock
                ON CONFLICT (property_id) DO UPDATE SET holder = excluded.holder, until = excluded.until
                WHERE l.holder = excluded.holder OR l.until <= (SELECT at FROM clock)
                RETURNING l.holder, l.until - (SELECT at FROM clock) AS remaining""",
            now, property_id, holder, seconds)
        if taken is None:  # held by another: a statement of its own sees that lease, committed
            taken = await conn.fetchrow(
                f"""SELECT holder, until - {_NOW} AS remaining FROM push_leases WHERE property_id = $2""",
                now, property_id)
        if taken is None:
            return Lease(None, 0.0)
        return Lease(taken["holder"], float(taken["remaining"]))

    return await db.run(work)


async def renew(db: Database, holder: str, property_ids: Sequence[int], now: float | None,
                seconds: float) -> list[int]:
    """Run `holder`'s leases on these properties `seconds` from now, in one statement;
    answers the ones it still held (a lease that ran out is still its own until another
    holder takes it)."""
    if not property_ids:
        return []
    rows = await db.fetch(
        f"""UPDATE push_leases SET until = {_NOW} + $4
            WHERE holder = $2 AND property_id = ANY($3::bigint[]) RETURNING property_id""",
        now, holder, list(property_ids), seconds)
    return sorted(r["property_id"] for r in rows)


@dataclass(frozen=True, slots=True)
class DirtyAfter:
    """What a give-back found dirty, in the same statement: a write accepted meanwhile by a
    process whose pusher found the lease held here."""

    availability: bool
    rates_or_restrictions: bool


async def give_back(db: Database, property_id: int, holder: str, now: datetime) -> DirtyAfter:
    """End `holder`'s lease on the property at once (a no-op if it no longer held it), and
    say whether cells are to be pushed (refused ones waiting for their retry are not:
    pushes.pushable). One statement: its snapshot is taken after any take that found the
    lease still held, so it sees every write committed before such a take."""
    row = await db.fetchrow(
        f"""WITH gone AS (DELETE FROM push_leases WHERE property_id = $1 AND holder = $2)
            SELECT EXISTS (SELECT 1 FROM availability_cells c
                           WHERE c.property_id = $1 AND {pushable("availability_cells", "c", "$3")}) AS a,
                   EXISTS (SELECT 1 FROM rate_cells c WHERE c.property_id = $1 AND {pushable("rate_cells", "c", "$3")})
                   OR EXISTS (SELECT 1 FROM restriction_cells c
                              WHERE c.property_id = $1 AND {pushable("restriction_cells", "c", "$3")}) AS r""",
        property_id, holder, now)
    assert row is not None
    return DirtyAfter(row["a"], row["r"])


async def give_back_all(db: Database, holder: str) -> int:
    """End every lease `holder` has (a process stopping); answers how many."""
    status: str = await db.execute("DELETE FROM push_leases WHERE holder = $1", holder)
    return int(status.split()[-1])


async def holders(db: Database, now: float | None = None) -> dict[int, tuple[str, float]]:
    """Every lease in the record: property id -> (holder, seconds left; negative when run out)."""
    rows = await db.fetch(f"SELECT property_id, holder, until - {_NOW} AS remaining FROM push_leases", now)
    return {r["property_id"]: (r["holder"], float(r["remaining"])) for r in rows}
