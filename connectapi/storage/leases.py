"""Every lease in the record, in one place: which process does a piece of shared work now.

- **Push leases** (`push_leases`, migration 0017): which process pushes a property's cells.
- **Round leases** (`round_leases`, migration 0018): which process runs a job's round (the
  booking intake).
- **Sending leases** (`webhook_endpoints.sending_by/until`, migration 0015): which process
  sends an endpoint's webhooks; taken with the endpoint's next delivery (storage.webhooks.due).

One time base: the database server's clock. A statement reads it once (`now=None`); a
process's own clock never judges whether a lease has run out, so hosts whose clocks
disagree agree on every lease. Tests give their fake clock's time instead
(`Clock.shared_time()`, seconds since the epoch). A caller learns how long a lease it
does not hold has left in seconds, never an instant to compare with its own clock.

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

import asyncpg

from .database import Database
from .pushes import pushable

_EPOCH_NOW = "coalesce($1::double precision, extract(epoch FROM clock_timestamp()))"
_holder: tuple[int, str] | None = None


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


# Push leases: times are seconds since the epoch.



@dataclass(frozen=True, slots=True)
class PushLease:
    """Who holds a property's lease after a take, and for how many seconds more. `holder`
    is None when nobody could be seen holding it (a racer took it and gave it back
    between our two looks): look again soon."""

    holder: str | None
    remaining: float


async def take_push(db: Database, property_id: int, holder: str, now: float | None, seconds: float) -> PushLease:
    """Take the property's lease for `holder` (or renew it if `holder` has it) unless another
    holder's lease is still running; answers who holds it now."""

    async def work(conn: asyncpg.Connection) -> PushLease:
        taken = await conn.fetchrow(
            f"""WITH clock AS (SELECT {_EPOCH_NOW} AS at)
                INSERT INTO push_leases AS l (property_id, holder, until)
                SELECT $2, $3, clock.at + $4 FROM clock
                ON CONFLICT (property_id) DO UPDATE SET holder = excluded.holder, until = excluded.until
                WHERE l.holder = excluded.holder OR l.until <= (SELECT at FROM clock)
                RETURNING l.holder, l.until - (SELECT at FROM clock) AS remaining""",
            now, property_id, holder, seconds)
        if taken is None:  # held by another: a statement of its own sees that lease, committed
            taken = await conn.fetchrow(
                f"""SELECT holder, until - {_EPOCH_NOW} AS remaining FROM push_leases WHERE property_id = $2""",
                now, property_id)
        if taken is None:
            return PushLease(None, 0.0)
        return PushLease(taken["holder"], float(taken["remaining"]))

    return await db.run(work)


async def renew_push(db: Database, holder: str, property_ids: Sequence[int], now: float | None,
                seconds: float) -> list[int]:
    """Run `holder`'s leases on these properties `seconds` from now, in one statement;
    answers the ones it still held (a lease that ran out is still its own until another
    holder takes it)."""
    if not property_ids:
        return []
    rows = await db.fetch(
        f"""UPDATE push_leases SET until = {_EPOCH_NOW} + $4
            WHERE holder = $2 AND property_id = ANY($3::bigint[]) RETURNING property_id""",
        now, holder, list(property_ids), seconds)
    return sorted(r["property_id"] for r in rows)


@dataclass(frozen=True, slots=True)
class DirtyAfter:
    """What a give-back found dirty, in the same statement: a write accepted meanwhile by a
    process whose pusher found the lease held here."""

    availability: bool
    rates_or_restrictions: bool


async def give_back_push(db: Database, property_id: int, holder: str, now: datetime) -> DirtyAfter:
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


async def give_back_all_push(db: Database, holder: str) -> int:
    """End every lease `holder` has (a process stopping); answers how many."""
    status: str = await db.execute("DELETE FROM push_leases WHERE holder = $1", holder)
    return int(status.split()[-1])


async def push_holders(db: Database, now: float | None = None) -> dict[int, tuple[str, float]]:
    """Every lease in the record: property id -> (holder, seconds left; negative when run out)."""
    rows = await db.fetch(f"SELECT property_id, holder, until - {_EPOCH_NOW} AS remaining FROM push_leases", now)
    return {r["property_id"]: (r["holder"], float(r["remaining"])) for r in rows}


# Round leases. The process whose round it is holds the job's lease, renews it while the
# round runs, and gives it back when the round ends. One that dies mid-round leaves the
# lease to run out, and the next process to look takes it. A process that finds the lease
# held leaves `again` set: the holder learns it when it gives the lease back and runs one
# round more, so a wake-up that reached another process is not lost.


@dataclass(frozen=True, slots=True)
class RoundLease:
    """Whether the lease was taken, and how many seconds it has left (whoever holds it)."""

    taken: bool
    remaining: float


async def take_round(db: Database, name: str, holder: str, now: float | None, seconds: float) -> RoundLease:
    """The job's lease for `holder` for `seconds`, if nobody else holds it now (free, given
    back, or run out). Held by another: left to it, with `again` set for it."""
    at = database_now("$3")
    row = await db.fetchrow(
        f"""WITH clock AS (SELECT {at} AS at)
            INSERT INTO round_leases AS l (name, held_by, held_until)
            SELECT $1, $2, clock.at + make_interval(secs => $4) FROM clock
            ON CONFLICT (name) DO UPDATE SET
                held_by = CASE WHEN l.held_by IS NULL OR l.held_until <= (SELECT at FROM clock) OR l.held_by = $2
                               THEN $2 ELSE l.held_by END,
                held_until = CASE WHEN l.held_by IS NULL OR l.held_until <= (SELECT at FROM clock) OR l.held_by = $2
                                  THEN excluded.held_until ELSE l.held_until END,
                again = NOT (l.held_by IS NULL OR l.held_until <= (SELECT at FROM clock) OR l.held_by = $2)
            RETURNING held_by = $2 AS taken,
                      extract(epoch FROM held_until - (SELECT at FROM clock))::double precision AS remaining""",
        name, holder, now, seconds)
    assert row is not None
    return RoundLease(bool(row["taken"]), float(row["remaining"]))


async def renew_round(db: Database, name: str, holder: str, now: float | None, seconds: float) -> bool:
    """The lease held on for `seconds` more; False when `holder` no longer holds it (it ran
    out and another process took it)."""
    return bool(await db.fetchval(
        f"""UPDATE round_leases SET held_until = {database_now("$3")} + make_interval(secs => $4)
            WHERE name = $1 AND held_by = $2 RETURNING true""",
        name, holder, now, seconds))


async def give_back_round(db: Database, name: str, holder: str) -> bool:
    """The lease free for any process; answers whether another process asked for a round
    meanwhile (`again`): the caller runs one more. False too when `holder` no longer held it."""
    again = await db.fetchval(
        """UPDATE round_leases l SET held_by = NULL, held_until = NULL, again = false
           FROM (SELECT name, again FROM round_leases WHERE name = $1 AND held_by = $2 FOR UPDATE) before
           WHERE l.name = before.name
           RETURNING before.again""",
        name, holder)
    return bool(again)


# Sending leases: an endpoint's, taken by storage.webhooks.due with its next delivery.


def sending_free(endpoint: str, now_sql: str) -> str:
    """SQL: the endpoint's sending lease is free at `now_sql` (never taken, given back, or
    run out)."""
    return f"({endpoint}.sending_until IS NULL OR {endpoint}.sending_until <= {now_sql})"


async def give_back_sending(conn: asyncpg.Connection, endpoint_id: int, holder: str | None) -> None:
    """The attempt is recorded: the endpoint's next delivery may go from any process."""
    if holder is not None:
        await conn.execute("""UPDATE webhook_endpoints SET sending_by = NULL, sending_until = NULL
                              WHERE id = $1 AND sending_by = $2""", endpoint_id, holder)
