"""The pushers' side of the cells: what is dirty, and marking what was sent.

A cell is dirty while version > pushed_version. A push reads dirty cells with their
version, sends them (or drops those equal to what the channel manager already holds),
then marks exactly those versions pushed: a write that landed meanwhile has a newer
version and stays dirty.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import asyncpg

from ..domain.sell_modes import ROOM_PRICE
from .ari import RESTRICTION_COLUMNS, hold_property
from ..tracing.spans import trace_id_of
from .database import Database

Cell = tuple[int, date]


@dataclass(frozen=True, slots=True)
class DirtyCell:
    entity_id: int
    night: date
    version: int
    value: Any  # availability: int; rates: minor units; restrictions: {API field: value}
    pushed: Any  # what the channel manager holds, None when unknown
    batch: uuid.UUID | None = None  # the batch that wrote this version
    refused: bool = False  # the channel manager refused this very version
    occupancy: int = ROOM_PRICE  # rates: the adult count priced (ROOM_PRICE: a per-room plan's one price)


def pushable(table: str, alias: str, now: str) -> str:
    """SQL: the cell `alias` of `table` is to be pushed: dirty, and not refused by the
    channel manager at this version while its property's refusals wait for their retry
    (channel_refusals.retry_at after `now`, an SQL expression). A refused cell is still
    dirty (GET /sync counts it) but no pusher is woken for it before its retry."""
    kind = "availability" if table == "availability_cells" else "restrictions"
    return (f"{alias}.version > {alias}.pushed_version AND ({alias}.refused_version <> {alias}.version "
            f"OR NOT EXISTS (SELECT 1 FROM channel_refusals r WHERE r.property_id = {alias}.property_id "
            f"AND r.kind = '{kind}' AND r.retry_at > {now}))")


# In the WHERE of every update_cells statement: the property's lock, taken before any cell.
HELD = "EXISTS (SELECT FROM held)"


async def update_cells(db: Database, property_id: int, sql: str, *args: Any) -> int:
    """A pipe's update of several of a property's cells (`sql`, an UPDATE whose WHERE has
    `HELD`), run after taking the property's lock as its writers do; answers how many rows
    it changed (docs/decisions/0123-the-pipe-updates-cells-behind-the-property-lock.md).

    A writer locks the property, then its cells statement by statement, in the order of
    what it writes (a run of bookings: one booking's nights, then the next one's, earlier
    or later). A statement that updated several cells without the property's lock took
    them in an order of its own, and could hold one the writer wanted next while waiting
    for one the writer held: a deadlock, which the server broke after a second by failing
    one of the two (seen in the bookings bench, a run of bookings against the pusher
    marking cells pushed). Behind the property's lock, such a statement holds no cell
    while it waits.

    One statement does both: `HELD` is a condition on nothing of the row, which the
    planner evaluates once, before the first cell is read, and that evaluation takes the
    lock. `HELD` must stand at the top level of the WHERE, ANDed (under an OR the order
    would be lost). One round trip: asyncpg sends Bind, Execute and Sync together, so the
    server practically always has the whole statement before it takes the lock, and
    finishes and lets go without this process; were a host cut inside a large Bind, the
    session ends within about 5 s (decision 0120).
    """
    if HELD not in sql:
        raise ValueError("update_cells: the statement's WHERE must hold HELD")
    status: str = await db.execute(
        f"WITH held AS MATERIALIZED (SELECT FROM properties WHERE id = ${len(args) + 1} FOR NO KEY UPDATE) {sql}",
        *args, property_id)
    return int(status.split()[-1])


def _dirty(table: str, id_column: str, *order: str) -> str:
    return (f"WHERE c.property_id = $1 AND {pushable(table, 'c', '$3')} "
            f"ORDER BY {', '.join(f'c.{col}' for col in (id_column, 'night', *order))} LIMIT $2")


async def dirty_availability(db: Database, property_id: int, limit: int, now: datetime) -> list[DirtyCell]:
    """The property's cells to push, oldest entity first: dirty, refused ones only once due."""
    rows = await db.fetch(
        f"""SELECT room_type_id, night, version, available, pushed_available, last_batch_id,
                   refused_version = version AS refused
            FROM availability_cells c {_dirty("availability_cells", "room_type_id")}""",
        property_id, limit, now,
    )
    return [DirtyCell(r["room_type_id"], r["night"], r["version"], r["available"], r["pushed_available"],
                      r["last_batch_id"], r["refused"])
            for r in rows]


async def dirty_rates(db: Database, property_id: int, limit: int, now: datetime) -> list[DirtyCell]:
    rows = await db.fetch(
        f"""SELECT rate_plan_id, night, occupancy, version, rate_minor, pushed_rate_minor, last_batch_id,
                   refused_version = version AS refused
            FROM rate_cells c {_dirty("rate_cells", "rate_plan_id", "occupancy")}""",
        property_id, limit, now,
    )
    return [DirtyCell(r["rate_plan_id"], r["night"], r["version"], r["rate_minor"], r["pushed_rate_minor"],
                      r["last_batch_id"], r["refused"], r["occupancy"])
            for r in rows]


async def dirty_restrictions(db: Database, property_id: int, limit: int, now: datetime) -> list[DirtyCell]:
    rows = await db.fetch(
        f"""SELECT rate_plan_id, night, version, pushed_fields, last_batch_id, refused_version = version AS refused,
                   {', '.join(RESTRICTION_COLUMNS.values())}
            FROM restriction_cells c {_dirty("restriction_cells", "rate_plan_id")}""",
        property_id, limit, now,
    )
    return [DirtyCell(r["rate_plan_id"], r["night"], r["version"],
                      {name: r[col] for name, col in RESTRICTION_COLUMNS.items()}, r["pushed_fields"],
                      r["last_batch_id"], r["refused"])
            for r in rows]


async def drop_past(db: Database, property_id: int, kind: str, today: date) -> int:
    """Nights before `today` (the property's) are never sent (Channex refuses past dates):
    their dirty cells stop being dirty, what the channel manager holds left as it was, and
    are counted on the property. Answers how many went."""
    tables = ("availability_cells",) if kind == "availability" else ("rate_cells", "restriction_cells")

    async def work(conn: asyncpg.Connection) -> int:
        await hold_property(conn, property_id)  # as update_cells does, for the same reason
        dropped = 0
        for table in tables:
            status: str = await conn.execute(
                f"""UPDATE {table} SET pushed_version = version
                    WHERE property_id = $1 AND night < $2 AND version > pushed_version""", property_id, today)
            dropped += int(status.split()[-1])
        if dropped:
            await conn.execute("UPDATE properties SET cm_past_dropped = cm_past_dropped + $2 WHERE id = $1",
                               property_id, dropped)
        return dropped

    return await db.transaction(work)


async def _mark(db: Database, table: str, id_column: str, pushed_column: str, cast: str,
                property_id: int, cells: list[DirtyCell]) -> int:
    """Each cell's version pushed, with its value as what the channel manager holds. A rate
    cell is also its occupancy's (every table has one for the statement's sake: a cell of
    the others is ROOM_PRICE's, and their column is that constant)."""
    if not cells:
        return 0
    occupancy = "c.occupancy" if table == "rate_cells" else str(ROOM_PRICE)
    return await update_cells(
        db, property_id,
        f"""UPDATE {table} AS c SET pushed_version = w.version, {pushed_column} = w.value
            FROM unnest($1::bigint[], $2::date[], $3::bigint[], $4::{cast}[], $6::smallint[])
                 AS w (id, night, version, value, occupancy)
            WHERE {HELD} AND c.property_id = $5 AND c.{id_column} = w.id AND c.night = w.night
              AND {occupancy} = w.occupancy AND c.pushed_version < w.version""",
        [c.entity_id for c in cells], [c.night for c in cells], [c.version for c in cells],
        [c.value for c in cells], property_id, [c.occupancy for c in cells],
    )


async def mark_availability_pushed(db: Database, property_id: int, cells: list[DirtyCell]) -> int:
    """Record that the channel manager holds these versions of the property's cells;
    returns how many were marked."""
    return await _mark(db, "availability_cells", "room_type_id", "pushed_available", "integer", property_id, cells)


async def mark_rates_pushed(db: Database, property_id: int, cells: list[DirtyCell]) -> int:
    return await _mark(db, "rate_cells", "rate_plan_id", "pushed_rate_minor", "bigint", property_id, cells)


async def mark_restrictions_pushed(db: Database, property_id: int, cells: list[DirtyCell]) -> int:
    return await _mark(db, "restriction_cells", "rate_plan_id", "pushed_fields", "jsonb", property_id, cells)


async def dirty_counts(db: Database, property_id: int) -> dict[str, int]:
    return (await _counts(db, property_id))[0]


async def _counts(db: Database, property_id: int) -> tuple[dict[str, int], dict[str, int]]:
    """(dirty cells, of which refused by the channel manager), per resource."""
    row = await db.fetchrow(
        """SELECT a.dirty AS a, a.refused AS ra, r.dirty AS r, r.refused AS rr, s.dirty AS s, s.refused AS rs
           FROM (SELECT count(*) AS dirty, count(*) FILTER (WHERE refused_version = version) AS refused
                 FROM availability_cells WHERE property_id = $1 AND version > pushed_version) a,
                (SELECT count(*) AS dirty, count(*) FILTER (WHERE refused_version = version) AS refused
                 FROM rate_cells WHERE property_id = $1 AND version > pushed_version) r,
                (SELECT count(*) AS dirty, count(*) FILTER (WHERE refused_version = version) AS refused
                 FROM restriction_cells WHERE property_id = $1 AND version > pushed_version) s""",
        property_id,
    )
    assert row is not None
    return ({"availability": row["a"], "rates": row["r"], "restrictions": row["s"]},
            {"availability": row["ra"], "rates": row["rr"], "restrictions": row["rs"]})


async def dirty_totals(db: Database) -> dict[str, int]:
    """Dirty cells across every live property, per resource (the metrics' gauge: a test
    record's backlog is its integrator's, never an operator's alert)."""
    live = "property_id IN (SELECT id FROM properties WHERE mode = 'live')"
    row = await db.fetchrow(
        f"""SELECT (SELECT count(*) FROM availability_cells WHERE version > pushed_version AND {live}) AS a,
                   (SELECT count(*) FROM rate_cells WHERE version > pushed_version AND {live}) AS r,
                   (SELECT count(*) FROM restriction_cells WHERE version > pushed_version AND {live}) AS s""")
    assert row is not None
    return {"availability": row["a"], "rates": row["r"], "restrictions": row["s"]}


@dataclass(frozen=True, slots=True)
class SyncView:
    """The record's side of GET /sync (and of the console's push state)."""

    last_push_at: datetime | None
    last_outcome: str | None
    last_error: str | None
    next_attempt_at: datetime | None
    failures: int  # failed calls in a row
    newest_pending: tuple[uuid.UUID, int] | None  # the newest batch with cells to push, and how many
    dirty: dict[str, int]  # per resource
    refused: dict[str, int]  # of the dirty cells, those the channel manager refused


async def sync_view(db: Database, property_id: int) -> SyncView:
    """Dirty counts (and of them, those the channel manager refused), the last outcome, the
    newest pending batch."""

    async def work(conn: asyncpg.Connection) -> tuple[asyncpg.Record, list[PendingBatch]]:
        prop = await conn.fetchrow(
            """SELECT cm_last_push_at, cm_last_outcome, cm_last_error, cm_next_attempt_at, cm_failures
               FROM properties WHERE id = $1""", property_id)
        return prop, await _pending_batches(conn, property_id, 1)

    prop, newest = await db.run(work)
    dirty, refused = await _counts(db, property_id)
    return SyncView(prop["cm_last_push_at"], prop["cm_last_outcome"], prop["cm_last_error"],
                    prop["cm_next_attempt_at"], prop["cm_failures"],
                    (newest[0].id, newest[0].pending_cells) if newest else None, dirty, refused)


@dataclass(frozen=True, slots=True)
class PendingBatch:
    id: uuid.UUID
    resource: str
    created_at: datetime
    pending_cells: int  # its own cells (last written by it) not yet pushed
    trace_id: str | None = None  # the trace of the request that wrote it, when tracing was on


async def _pending_batches(conn: asyncpg.Connection, property_id: int, limit: int) -> list[PendingBatch]:
    """Of the property's 50 newest batches that changed cells, those with cells still to
    push, newest first."""
    rows = await conn.fetch(
        """SELECT id, resource, created_at, pending, trace_parent FROM (
           SELECT b.id, b.resource, b.created_at, b.trace_parent,
                  (SELECT count(*) FROM availability_cells c WHERE c.last_batch_id = b.id
                                                               AND c.version > c.pushed_version)
                  + (SELECT count(*) FROM rate_cells c WHERE c.last_batch_id = b.id
                                                         AND c.version > c.pushed_version)
                  + (SELECT count(*) FROM restriction_cells c WHERE c.last_batch_id = b.id
                                                                AND c.version > c.pushed_version) AS pending
           FROM write_batches b
           WHERE b.property_id = $1 AND b.accepted_cells > 0
           ORDER BY b.created_at DESC, b.id DESC LIMIT 50) AS recent
           WHERE pending > 0 ORDER BY created_at DESC, id DESC LIMIT $2""",
        property_id, limit,
    )
    return [PendingBatch(r["id"], r["resource"], r["created_at"], int(r["pending"]), trace_id_of(r["trace_parent"]))
            for r in rows]


async def pending_batches(db: Database, property_id: int, limit: int = 50) -> list[PendingBatch]:
    """The batches GET /sync's newestPendingBatch is the first of (the console lists them)."""
    return await db.run(lambda conn: _pending_batches(conn, property_id, limit))


async def record_outcome(db: Database, property_id: int, at: Any, outcome: str, error: str | None,
                         next_attempt_at: datetime | None = None, failures: int = 0) -> None:
    """The channel manager's last answer for the property, with when the pipe tries again
    after a failure and its failures in a row; lastError clears on success.

    The pause is the record's alone (no process keeps one), and both pipes of a property
    and every process record into it, so no answer shortens it: a failure keeps the later
    of its pause and the one standing, and the larger count; an answer of a call started
    (`at`) before a pause recorded meanwhile by another call leaves that pause and its
    error standing. A failure that names no pause (an unmapped property) keeps both."""
    if outcome == "failed":
        await db.execute(
            """UPDATE properties SET cm_last_push_at = $2, cm_last_outcome = $3, cm_last_error = $4,
                                     cm_next_attempt_at = greatest(cm_next_attempt_at, $5),
                                     cm_failures = greatest(cm_failures, $6) WHERE id = $1""",
            property_id, at, outcome, error, next_attempt_at, failures,
        )
        return
    await db.execute(
        """UPDATE properties SET cm_last_push_at = $2, cm_last_outcome = $3, cm_last_error = $4,
                                 cm_next_attempt_at = NULL, cm_failures = 0
           WHERE id = $1 AND (cm_next_attempt_at IS NULL OR cm_next_attempt_at <= $2)""",
        property_id, at, outcome, error,
    )


async def next_to_check(db: Database) -> tuple[int, Any] | None:
    """The mapped, active channel-manager property checked longest ago (never first), with
    when it was last checked."""
    row = await db.fetchrow(
        """SELECT id, cm_checked_at FROM properties
           WHERE cm_property_id IS NOT NULL AND channel_manager AND status = 'active'
           ORDER BY cm_checked_at NULLS FIRST, id LIMIT 1"""
    )
    return None if row is None else (row["id"], row["cm_checked_at"])


async def record_check(db: Database, property_id: int, at: Any) -> None:
    await db.execute("UPDATE properties SET cm_checked_at = $2 WHERE id = $1", property_id, at)


async def in_sync_cells(db: Database, property_id: int, first: date, last: date) -> dict[str, list[DirtyCell]]:
    """Cells the record believes the channel manager holds: version = pushed_version."""

    async def work(conn: asyncpg.Connection) -> dict[str, list[DirtyCell]]:
        availability = await conn.fetch(
            """SELECT room_type_id AS id, night, version, available AS value FROM availability_cells
               WHERE property_id = $1 AND night BETWEEN $2 AND $3 AND version = pushed_version""",
            property_id, first, last)
        rates = await conn.fetch(
            """SELECT rate_plan_id AS id, night, occupancy, version, rate_minor AS value FROM rate_cells
               WHERE property_id = $1 AND night BETWEEN $2 AND $3 AND version = pushed_version""",
            property_id, first, last)
        restrictions = await conn.fetch(
            f"""SELECT rate_plan_id AS id, night, version, {', '.join(RESTRICTION_COLUMNS.values())}
                FROM restriction_cells
                WHERE property_id = $1 AND night BETWEEN $2 AND $3 AND version = pushed_version""",
            property_id, first, last)
        return {
            "availability": [DirtyCell(r["id"], r["night"], r["version"], r["value"], r["value"]) for r in availability],
            "rates": [DirtyCell(r["id"], r["night"], r["version"], r["value"], r["value"], occupancy=r["occupancy"])
                      for r in rates],
            "restrictions": [DirtyCell(r["id"], r["night"], r["version"],
                                       {name: r[col] for name, col in RESTRICTION_COLUMNS.items()}, None)
                             for r in restrictions],
        }

    return await db.run(work)


# resource -> (its cells' table, their entity column, the column of what the channel holds)
CELL_TABLES = {"availability": ("availability_cells", "room_type_id", "pushed_available"),
           "rates": ("rate_cells", "rate_plan_id", "pushed_rate_minor"),
           "restrictions": ("restriction_cells", "rate_plan_id", "pushed_fields")}


async def mark_dirty_again(db: Database, property_id: int, resource: str, cells: list[DirtyCell]) -> int:
    """The channel manager holds something else: push these cells again (if still in sync).

    What it holds is forgotten (NULL), so the pusher sends the record's value. A cell is
    matched by its version too, which is its own (every write takes one from the
    `ari_versions` sequence): a rate cell of another occupancy on the same night is never
    matched.
    """
    if not cells:
        return 0
    table, id_column, pushed_column = CELL_TABLES[resource]
    return await update_cells(
        db, property_id,
        f"""UPDATE {table} AS c SET pushed_version = 0, {pushed_column} = NULL
            FROM unnest($1::bigint[], $2::date[], $3::bigint[]) AS w (id, night, version)
            WHERE {HELD} AND c.property_id = $4 AND c.{id_column} = w.id AND c.night = w.night
              AND c.version = w.version AND c.pushed_version = w.version""",
        [c.entity_id for c in cells], [c.night for c in cells], [c.version for c in cells], property_id,
    )


async def record_tasks(db: Database, kind: str, at: datetime, task_ids: tuple[str, ...],
                       batches: set[uuid.UUID]) -> None:
    """The task ids of a call, on each batch whose cells it carried (a batch pruned
    meanwhile is passed over): GET /batches/{id} lists them as channelTasks."""
    if not task_ids or not batches:
        return
    pairs = [(batch, task) for batch in sorted(batches) for task in task_ids]
    await db.execute(
        """INSERT INTO batch_channel_tasks (batch_id, task_id, kind, sent_at)
           SELECT w.batch, w.task, $3, $4 FROM unnest($1::uuid[], $2::text[]) AS w (batch, task)
           JOIN write_batches b ON b.id = w.batch
           ON CONFLICT DO NOTHING""",
        [b for b, _ in pairs], [t for _, t in pairs], kind, at)


async def trace_parents(db: Database, batches: set[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The traceparent each batch was written under (asked only while tracing is on; a
    batch written while it was off, or pruned since, has none)."""
    if not batches:
        return {}
    rows = await db.fetch("SELECT id, trace_parent FROM write_batches WHERE id = ANY($1::uuid[])"
                          " AND trace_parent IS NOT NULL", sorted(batches))
    return {row["id"]: row["trace_parent"] for row in rows}
