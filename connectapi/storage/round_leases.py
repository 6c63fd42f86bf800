"""Leases on jobs that one process at a time runs a round of (the booking intake).

The process whose round it is holds the job's lease until an instant, renews it while the
round runs, and gives it back when the round ends. One that dies mid-round leaves the
lease to run out, and the next process to look takes it. A process that finds the lease
held leaves `again` set: the holder learns it when it gives the lease back and runs one
round more, so a wake-up that reached another process is not lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .database import Database


@dataclass(frozen=True, slots=True)
class Lease:
    """Whether the lease was taken, and until when it is held (by whoever holds it)."""

    taken: bool
    held_until: datetime


async def take(db: Database, name: str, holder: str, now: datetime, until: datetime) -> Lease:
    """The job's lease for `holder` until `until`, if nobody else holds it at `now` (free,
    given back, or run out). Held by another: left to it, with `again` set for it."""
    row = await db.fetchrow(
        """INSERT INTO round_leases AS l (name, held_by, held_until) VALUES ($1, $2, $4)
           ON CONFLICT (name) DO UPDATE SET
               held_by = CASE WHEN l.held_by IS NULL OR l.held_until <= $3 OR l.held_by = $2
                              THEN $2 ELSE l.held_by END,
               held_until = CASE WHEN l.held_by IS NULL OR l.held_until <= $3 OR l.held_by = $2
                                 THEN $4 ELSE l.held_until END,
               again = NOT (l.held_by IS NULL OR l.held_until <= $3 OR l.held_by = $2)
           RETURNING held_by = $2 AS taken, held_until""",
        name, holder, now, until)
    assert row is not None
    return Lease(bool(row["taken"]), row["held_until"])


async def renew(db: Database, name: str, holder: str, until: datetime) -> bool:
    """The lease held on until `until`; False when `holder` no longer holds it (it ran out
    and another process took it)."""
    return bool(await db.fetchval(
        "UPDATE round_leases SET held_until = $3 WHERE name = $1 AND held_by = $2 RETURNING true",
        name, holder, until))


async def give_back(db: Database, name: str, holder: str) -> bool:
    """The lease free for any process; answers whether another process asked for a round
    meanwhile (`again`): the caller runs one more. False too when `holder` no longer held it."""
    again = await db.fetchval(
        """UPDATE round_leases l SET held_by = NULL, held_until = NULL, again = false
           FROM (SELECT name, again FROM round_leases WHERE name = $1 AND held_by = $2 FOR UPDATE) before
           WHERE l.name = before.name
           RETURNING before.again""",
        name, holder)
    return bool(again)
