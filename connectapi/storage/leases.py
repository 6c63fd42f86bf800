"""Every lease in the record, in one table: which process does a piece of shared work now.

A lease is a row of `leases` (migration 0031) keyed by its kind and key:

- `push`, a property id: which process pushes the property's cells (actors.push_leases);
- `round`, a job's name: which process runs the job's round (the booking intake);
- `sending`, a webhook endpoint id: which process sends the endpoint's next delivery
  (taken with it by storage.webhooks.due).

One time base: the database server's clock. A statement reads it once (`now=None`); a
process's own clock never judges whether a lease has run out, so hosts whose clocks
disagree agree on every lease. Tests give their fake clock's time instead
(`Clock.shared_time()`, seconds since the epoch). A caller learns how long a lease has left
in seconds, never an instant to compare with its own clock.

One holder id per process (`process_holder()`): its host, its pid and a random part. A
crashed actor's next incarnation is the same holder and takes its leases back at once (its
work was cancelled with it: nothing of the old one is still running). Tests that play two
processes in one give each its own holder.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

import asyncpg

from .database import Database
from .pushes import pushable

_holder: tuple[int, str] | None = None


class LeaseKind(str, Enum):
    PUSH = "push"
    ROUND = "round"
    SENDING = "sending"


def process_holder() -> str:
    """This process's name on every lease it holds (made again in a forked child)."""
    global _holder
    pid = os.getpid()
    if _holder is None or _holder[0] != pid:
        _holder = (pid, f"{socket.gethostname()}:{pid}:{secrets.token_hex(6)}")
    return _holder[1]


def database_now(param: str) -> str:
    """SQL for the statement's instant as a timestamptz: the given epoch seconds, or the
    database's clock when they are NULL."""
    return f"coalesce(to_timestamp({param}::double precision), clock_timestamp())"


def free(lease: str, now_sql: str) -> str:
    """SQL: the lease row `lease` (a row of `leases`, or NULL for none) is free at `now_sql`:
    never taken, given back, or run out."""
    return f"({lease}.until IS NULL OR {lease}.until <= {now_sql})"


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease as one look at the record saw it: who held it, and for how many seconds more
    (negative when it had run out). `holder` is None when nobody could be seen holding it
    (given back; or a racer took it and gave it back between our two looks)."""

    kind: LeaseKind
    key: str
    holder: str | None
    remaining: float

    def held_by(self, holder: str) -> bool:
        return self.holder == holder


async def take(db: Database, kind: LeaseKind, key: str, holder: str, now: float | None, seconds: float) -> Lease:
    """Take the lease for `holder` (or renew it if `holder` has it) unless another holder's
    is still running; answers who holds it now. A take that finds it held by another
    sets `again` on it: its holder runs one round more when it gives it back."""

    async def work(conn: asyncpg.Connection) -> Lease:
        at = database_now("$1")
        taken = await conn.fetchrow(
            f"""WITH clock AS (SELECT {at} AS at)
                INSERT INTO leases AS l (kind, key, holder, until)
                SELECT $2, $3, $4, clock.at + make_interval(secs => $5) FROM clock
                ON CONFLICT (kind, key) DO UPDATE SET
                    holder = CASE WHEN {free("l", "(SELECT at FROM clock)")} OR l.holder = $4
                                  THEN $4 ELSE l.holder END,
                    until = CASE WHEN {free("l", "(SELECT at FROM clock)")} OR l.holder = $4
                                 THEN excluded.until ELSE l.until END,
                    again = NOT ({free("l", "(SELECT at FROM clock)")} OR l.holder = $4)
                RETURNING l.holder,
                          extract(epoch FROM l.until - (SELECT at FROM clock))::double precision AS remaining""",
            now, kind.value, key, holder, seconds)
        assert taken is not None  # an upsert that always writes returns its row
        return Lease(kind, key, taken["holder"], float(taken["remaining"]))

    return await db.run(work)


async def renew(db: Database, kind: LeaseKind, holder: str, keys: Sequence[str], now: float | None,
                seconds: float) -> list[str]:
    """Run `holder`'s leases of this kind on these keys `seconds` from now, in one statement;
    answers the keys it still held (a lease that ran out is still its own until another
    holder takes it)."""
    if not keys:
        return []
    rows = await db.fetch(
        f"""UPDATE leases SET until = {database_now("$1")} + make_interval(secs => $5)
            WHERE kind = $2 AND holder = $3 AND key = ANY($4::text[]) RETURNING key""",
        now, kind.value, holder, list(keys), seconds)
    return sorted(r["key"] for r in rows)


async def give_back(db: Database, kind: LeaseKind, key: str, holder: str) -> bool:
    """The lease free for any process; answers whether another process asked for a round
    meanwhile (`again`). False too when `holder` no longer held it."""
    again = await db.fetchval(
        """UPDATE leases l SET holder = NULL, until = NULL, again = false
           FROM (SELECT kind, key, again FROM leases WHERE kind = $1 AND key = $2 AND holder = $3 FOR UPDATE) before
           WHERE l.kind = before.kind AND l.key = before.key
           RETURNING before.again""",
        kind.value, key, holder)
    return bool(again)


async def give_back_in(conn: asyncpg.Connection, kind: LeaseKind, key: str, holder: str) -> None:
    """`give_back` inside the caller's transaction: the lease goes with the work it guarded
    (a webhook attempt recorded)."""
    await conn.execute("UPDATE leases SET holder = NULL, until = NULL, again = false "
                       "WHERE kind = $1 AND key = $2 AND holder = $3", kind.value, key, holder)


async def give_back_all(db: Database, holder: str, kind: LeaseKind | None = None) -> int:
    """End every lease `holder` has (of one kind, or all: a process stopping); answers how many."""
    status: str = await db.execute(
        "UPDATE leases SET holder = NULL, until = NULL, again = false "
        "WHERE holder = $1 AND ($2::text IS NULL OR kind = $2)", holder, None if kind is None else kind.value)
    return int(status.split()[-1])


async def holders(db: Database, kind: LeaseKind, now: float | None = None) -> dict[str, tuple[str, float]]:
    """Every held lease of a kind: key -> (holder, seconds left; negative when run out)."""
    rows = await db.fetch(
        f"""SELECT key, holder, extract(epoch FROM until - {database_now("$1")})::double precision AS remaining
            FROM leases WHERE kind = $2 AND holder IS NOT NULL""", now, kind.value)
    return {r["key"]: (r["holder"], float(r["remaining"])) for r in rows}


@dataclass(frozen=True, slots=True)
class DirtyAfter:
    """What a push lease's give-back found dirty, in the same statement: a write accepted
    meanwhile by a process whose pusher found the lease held here."""

    availability: bool
    rates_or_restrictions: bool


async def give_back_push(db: Database, property_id: int, holder: str, now: datetime) -> DirtyAfter:
    """End `holder`'s push lease on the property at once (a no-op if it no longer held it),
    and say whether cells are to be pushed (refused ones waiting for their retry are not:
    pushes.pushable). One statement: its snapshot is taken after any take that found the
    lease still held, so it sees every write committed before such a take."""
    row = await db.fetchrow(
        f"""WITH gone AS (UPDATE leases SET holder = NULL, until = NULL, again = false
                          WHERE kind = 'push' AND key = $1::bigint::text AND holder = $2)
            SELECT EXISTS (SELECT 1 FROM availability_cells c
                           WHERE c.property_id = $1 AND {pushable("availability_cells", "c", "$3")}) AS a,
                   EXISTS (SELECT 1 FROM rate_cells c WHERE c.property_id = $1 AND {pushable("rate_cells", "c", "$3")})
                   OR EXISTS (SELECT 1 FROM restriction_cells c
                              WHERE c.property_id = $1 AND {pushable("restriction_cells", "c", "$3")}) AS r""",
        property_id, holder, now)
    assert row is not None
    return DirtyAfter(row["a"], row["r"])
