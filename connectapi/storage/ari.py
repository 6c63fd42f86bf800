"""ARI cells: reads for the GET routes, and the bulk statements of a write.

Writes run inside the caller's transaction (`conn`), under the property's row lock.
Each write statement is one bulk statement over arrays, never one per cell.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

import asyncpg

from .database import Database
from .twins import catalog_owner
from .records import AvailabilityNight, PropertyLock, RateNight, RestrictionNight

Cell = tuple[int, date]

# Record fields <-> API fields of a restriction cell.
RESTRICTION_COLUMNS: dict[str, str] = {
    "stopSell": "stop_sell",
    "closedToArrival": "closed_to_arrival",
    "closedToDeparture": "closed_to_departure",
    "minStayArrival": "min_stay_arrival",
    "minStayThrough": "min_stay_through",
    "maxStay": "max_stay",
}


async def lock_property(conn: asyncpg.Connection, property_id: int) -> PropertyLock:
    """Serialise writes of a property across processes; returns what the checks need.

    NO KEY UPDATE, not UPDATE: it excludes other writers but not the KEY SHARE locks that
    foreign-key checks take, so inserts that name the property (an idempotency claim, a
    key) do not wait behind a write.
    """
    row = await conn.fetchrow(
        """SELECT id, name, currency, timezone, owner_email, guest_confirmation, pms, mode, twin_of FROM properties
           WHERE id = $1 FOR NO KEY UPDATE""", property_id)
    if row is None:
        raise LookupError(f"no property {property_id} to lock")
    return PropertyLock(row["id"], row["name"], row["currency"].strip(), row["timezone"], row["owner_email"],
                        row["guest_confirmation"], row["pms"], row["mode"], row["twin_of"])


async def hold_property(conn: asyncpg.Connection, property_id: int) -> None:
    """The property's lock in `lock_property`'s mode, reading nothing: for work that must
    be serialised with the property's writers but needs none of its fields."""
    await conn.execute("SELECT 1 FROM properties WHERE id = $1 FOR NO KEY UPDATE", property_id)


async def room_type_ids(conn: asyncpg.Connection, property_id: int) -> set[int]:
    rows = await conn.fetch(f"SELECT id FROM room_types WHERE property_id = {catalog_owner('$1')}", property_id)
    return {r["id"] for r in rows}


async def rate_plan_policies(conn: asyncpg.Connection, property_id: int) -> dict[int, tuple[int | None, int | None]]:
    rows = await conn.fetch(f"SELECT id, min_rate, max_rate FROM rate_plans WHERE property_id = {catalog_owner('$1')}",
                            property_id)
    return {r["id"]: (r["min_rate"], r["max_rate"]) for r in rows}


def _columns(cells: list[Cell]) -> tuple[list[int], list[date]]:
    return [c[0] for c in cells], [c[1] for c in cells]


async def current_restrictions(conn: asyncpg.Connection, property_id: int,
                               cells: list[Cell]) -> dict[Cell, dict[str, Any]]:
    ids, nights = _columns(cells)
    rows = await conn.fetch(
        f"""SELECT c.rate_plan_id, c.night, {', '.join('c.' + col for col in RESTRICTION_COLUMNS.values())}
            FROM unnest($1::bigint[], $2::date[]) AS w (id, night)
            JOIN restriction_cells c ON c.property_id = $3 AND c.rate_plan_id = w.id AND c.night = w.night""",
        ids, nights, property_id,
    )
    return {
        (r["rate_plan_id"], r["night"]): {name: r[col] for name, col in RESTRICTION_COLUMNS.items()} for r in rows
    }


async def upsert_availability(conn: asyncpg.Connection, property_id: int, batch: uuid.UUID,
                              values: dict[Cell, int]) -> int:
    """Write the cells that differ from the record, marked dirty; returns how many.

    One statement: cells equal to the record are skipped by the conflict clause, so
    finding the no-ops costs no read.
    """
    ids, nights = _columns(list(values))
    written: int = await conn.fetchval(
        """WITH written AS (
               INSERT INTO availability_cells AS c (property_id, room_type_id, night, available, version,
                                                    pushed_version, last_batch_id)
               SELECT $1, w.id, w.night, w.available, nextval('ari_versions'), 0, $2
               FROM unnest($3::bigint[], $4::date[], $5::integer[]) AS w (id, night, available)
               ON CONFLICT (property_id, room_type_id, night) DO UPDATE
               SET available = EXCLUDED.available, version = EXCLUDED.version, last_batch_id = EXCLUDED.last_batch_id
               WHERE c.available IS DISTINCT FROM EXCLUDED.available
               RETURNING 1)
           SELECT count(*) FROM written""",
        property_id, batch, ids, nights, list(values.values()),
    )
    return written


async def upsert_rates(conn: asyncpg.Connection, property_id: int, batch: uuid.UUID, values: dict[Cell, int]) -> int:
    """As upsert_availability, for rates in minor units."""
    ids, nights = _columns(list(values))
    written: int = await conn.fetchval(
        """WITH written AS (
               INSERT INTO rate_cells AS c (property_id, rate_plan_id, night, rate_minor, version, last_batch_id)
               SELECT $1, w.id, w.night, w.rate_minor, nextval('ari_versions'), $2
               FROM unnest($3::bigint[], $4::date[], $5::bigint[]) AS w (id, night, rate_minor)
               ON CONFLICT (property_id, rate_plan_id, night) DO UPDATE
               SET rate_minor = EXCLUDED.rate_minor, version = EXCLUDED.version, last_batch_id = EXCLUDED.last_batch_id
               WHERE c.rate_minor IS DISTINCT FROM EXCLUDED.rate_minor
               RETURNING 1)
           SELECT count(*) FROM written""",
        property_id, batch, ids, nights, list(values.values()),
    )
    return written


async def write_restrictions(conn: asyncpg.Connection, property_id: int, batch: uuid.UUID,
                             values: dict[Cell, dict[str, Any]]) -> None:
    ids, nights = _columns(list(values))
    columns = list(RESTRICTION_COLUMNS.items())
    arrays = [[v[name] for v in values.values()] for name, _ in columns]
    types = ["boolean", "boolean", "boolean", "integer", "integer", "integer"]
    unnest_args = ", ".join(f"${i + 5}::{t}[]" for i, t in enumerate(types))
    names = ", ".join(col for _, col in columns)
    await conn.execute(
        f"""INSERT INTO restriction_cells AS c (property_id, rate_plan_id, night, {names}, version, last_batch_id)
            SELECT $1, w.id, w.night, {', '.join('w.' + col for _, col in columns)}, nextval('ari_versions'), $2
            FROM unnest($3::bigint[], $4::date[], {unnest_args}) AS w (id, night, {names})
            ON CONFLICT (property_id, rate_plan_id, night) DO UPDATE
            SET {', '.join(f'{col} = EXCLUDED.{col}' for _, col in columns)},
                version = EXCLUDED.version, last_batch_id = EXCLUDED.last_batch_id""",
        property_id, batch, ids, nights, *arrays,
    )


async def insert_batch(conn: asyncpg.Connection, batch: uuid.UUID, property_id: int, key_id: int | None,
                       resource: str,
                       created_at: datetime, requested: int, accepted: int, noop: int,
                       rejected: list[dict[str, Any]]) -> None:
    await conn.execute(
        """INSERT INTO write_batches (id, property_id, key_id, resource, created_at, requested_cells,
                                      accepted_cells, noop_cells, rejected)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)""",
        batch, property_id, key_id, resource, created_at, requested, accepted, noop, rejected,
    )


_CELL_TABLES = {"availability": "availability_cells", "rates": "rate_cells", "restrictions": "restriction_cells"}


async def get_batch(db: Database, property_id: int, batch: uuid.UUID) -> dict[str, Any] | None:
    """The batch with its pending cells (its own cells, last written by it, still dirty), of
    them those the channel manager refused, and the task ids of the calls that carried its
    cells."""

    async def work(conn: asyncpg.Connection) -> dict[str, Any] | None:
        row = await conn.fetchrow(
            """SELECT b.id, b.resource, b.created_at, b.requested_cells, b.accepted_cells, b.noop_cells, b.rejected,
                      p.cm_last_error
               FROM write_batches b JOIN properties p ON p.id = b.property_id
               WHERE b.id = $1 AND b.property_id = $2""",
            batch, property_id,
        )
        if row is None:
            return None
        pending = refused = 0
        if row["accepted_cells"]:
            counted = await conn.fetchrow(
                f"SELECT count(*) AS pending, count(*) FILTER (WHERE refused_version = version) AS refused "
                f"FROM {_CELL_TABLES[row['resource']]} WHERE last_batch_id = $1 AND version > pushed_version",
                batch,
            )
            pending, refused = counted["pending"], counted["refused"]
        tasks = await conn.fetch(
            """SELECT task_id, kind, sent_at FROM batch_channel_tasks WHERE batch_id = $1
               ORDER BY sent_at, task_id LIMIT 100""", batch)
        return {**dict(row), "pending_cells": pending, "refused_cells": refused,
                "channel_tasks": [{"taskId": t["task_id"], "kind": t["kind"], "sentAt": t["sent_at"]} for t in tasks]}

    return await db.run(work)


async def read_availability(db: Database, property_id: int, first: date, last: date) -> list[AvailabilityNight]:
    rows = await db.fetch(
        """SELECT c.room_type_id, c.night, c.available FROM availability_cells c
           WHERE c.property_id = $1 AND c.night BETWEEN $2 AND $3 ORDER BY c.room_type_id, c.night""",
        property_id, first, last,
    )
    return [AvailabilityNight(r[0], r[1], r[2]) for r in rows]


async def read_rates(db: Database, property_id: int, first: date, last: date) -> list[RateNight]:
    rows = await db.fetch(
        """SELECT c.rate_plan_id, c.night, c.rate_minor FROM rate_cells c
           WHERE c.property_id = $1 AND c.night BETWEEN $2 AND $3 ORDER BY c.rate_plan_id, c.night""",
        property_id, first, last,
    )
    return [RateNight(r[0], r[1], r[2]) for r in rows]


async def read_restrictions(db: Database, property_id: int, first: date, last: date) -> list[RestrictionNight]:
    rows = await db.fetch(
        f"""SELECT c.rate_plan_id, c.night, {', '.join('c.' + col for col in RESTRICTION_COLUMNS.values())}
            FROM restriction_cells c
            WHERE c.property_id = $1 AND c.night BETWEEN $2 AND $3 ORDER BY c.rate_plan_id, c.night""",
        property_id, first, last,
    )
    return [RestrictionNight(r["rate_plan_id"], r["night"],
                             {name: r[col] for name, col in RESTRICTION_COLUMNS.items()}) for r in rows]
