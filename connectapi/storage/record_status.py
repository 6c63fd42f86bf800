"""What `connectapi status` reads from the record: migrations, each property's push state,
webhook endpoints and deliveries, the e-mail outbox, and each table's size and oldest row.

Read-only, a statement at a time, in one call bounded by the pool's command timeout and,
on top of it, each growing table's oldest-row read by its own (a table without an index on
its time column is scanned): one that runs out is shown without its oldest row, not as a
failure.
"""

from __future__ import annotations

import asyncio

import asyncpg

from ..domain.status_report import (
    Deliveries,
    Endpoint,
    Migrations,
    Outbox,
    PropertySync,
    RecordFacts,
    Table,
)
from .database import Database
from .migrations import bundled_migrations

# The tables that grow with use, each with the column that dates its rows (when it was
# made: a row's retention may count from a later instant, storage/retention.py's RETAINED):
# the retained ones and the idempotency keys.
GROWING_TABLES: tuple[tuple[str, str], ...] = (
    ("write_batches", "created_at"),
    ("webhook_events", "occurred_at"),
    ("webhook_deliveries", "created_at"),
    ("notifications", "created_at"),
    ("allowlist_refusals", "at"),
    ("ota_revisions", "received_at"),
    ("idempotency_keys", "created_at"),
)
OLDEST_ROW_TIMEOUT = 3.0

_PROPERTIES = """
WITH dirty AS (
    SELECT property_id, last_batch_id, refused_version = version AS refused FROM availability_cells
    WHERE version > pushed_version
    UNION ALL SELECT property_id, last_batch_id, refused_version = version FROM rate_cells
    WHERE version > pushed_version
    UNION ALL SELECT property_id, last_batch_id, refused_version = version FROM restriction_cells
    WHERE version > pushed_version
), per_property AS (
    SELECT d.property_id, count(*) AS cells, count(*) FILTER (WHERE d.refused) AS refused,
           min(b.created_at) AS oldest
    FROM dirty d LEFT JOIN write_batches b ON b.id = d.last_batch_id
    GROUP BY d.property_id
)
SELECT p.id, p.name, p.channel_manager AND p.status = 'active' AS pushed, coalesce(pp.cells, 0) AS cells,
       pp.oldest, p.cm_last_outcome, p.cm_last_error, p.cm_failures, p.cm_next_attempt_at,
       coalesce(pp.refused, 0) AS refused
FROM properties p LEFT JOIN per_property pp ON pp.property_id = p.id
-- Live properties only: a test record's faults are its integrator's to arm and watch
-- (GET /sync, the console), never a problem of the service's.
WHERE p.mode = 'live'
ORDER BY p.id"""

_DELIVERIES = """
SELECT count(*) AS pending,
       count(*) FILTER (WHERE e.status <> 'paused' AND d.next_attempt_at <= now()) AS due,
       count(*) FILTER (WHERE e.status = 'paused') AS held,
       min(d.next_attempt_at) FILTER (WHERE e.status <> 'paused') AS oldest_due
FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
WHERE d.status = 'pending'"""

_OUTBOX = """
SELECT count(*) AS unsent, count(*) FILTER (WHERE attempts > 0) AS retrying, min(created_at) AS oldest
FROM notifications WHERE sent_at IS NULL"""

_TABLES = """
SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes,
       CASE WHEN c.reltuples < 0 THEN NULL ELSE c.reltuples::bigint END AS rows
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema()
ORDER BY pg_total_relation_size(c.oid) DESC, c.relname"""


async def migrations_applied(conn: asyncpg.Connection) -> tuple[int, ...]:
    if not await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
        return ()
    return tuple(r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations ORDER BY version"))


async def read_record_facts(db: Database) -> RecordFacts:
    """Everything the report needs from the record. A record not migrated this far (no
    tables yet, or older ones) answers with its migrations and what it has."""

    async def work(conn: asyncpg.Connection) -> RecordFacts:
        now = await conn.fetchval("SELECT now()")
        applied = await migrations_applied(conn)
        known = tuple(m.version for m in bundled_migrations())
        migrations = Migrations(applied, known)
        tables = await _tables(conn)
        if migrations.missing:
            # The columns read below may not exist yet: the report says what is missing.
            return RecordFacts(now, migrations, (), (), Deliveries(0, 0, 0, None), Outbox(0, 0, None), tables)
        properties = tuple(
            PropertySync(r["id"], r["name"], r["pushed"], r["cells"], r["oldest"], r["cm_last_outcome"],
                         r["cm_last_error"], r["cm_failures"], r["cm_next_attempt_at"], r["refused"])
            for r in await conn.fetch(_PROPERTIES))
        endpoints = tuple(
            Endpoint(r["id"], r["property_id"], r["status"] == "paused", r["failing_since"])
            for r in await conn.fetch(
                # A test endpoint's receiver is its integrator's to mind, as a test record's sync is.
                """SELECT e.id, e.property_id, e.status, e.failing_since FROM webhook_endpoints e
                   JOIN properties p ON p.id = e.property_id WHERE p.mode = 'live' ORDER BY e.id"""))
        d = await conn.fetchrow(_DELIVERIES)
        o = await conn.fetchrow(_OUTBOX)
        assert d is not None and o is not None
        return RecordFacts(now, migrations, properties, endpoints,
                           Deliveries(d["pending"], d["due"], d["held"], d["oldest_due"]),
                           Outbox(o["unsent"], o["retrying"], o["oldest"]), tables)

    return await db.run(work, within=db.command_timeout + len(GROWING_TABLES) * OLDEST_ROW_TIMEOUT)


async def _tables(conn: asyncpg.Connection) -> tuple[Table, ...]:
    growing = dict(GROWING_TABLES)
    found = []
    for row in await conn.fetch(_TABLES):
        name = row["name"]
        oldest = None
        if name in growing:
            try:
                # Names from our own constant, never from input.
                oldest = await conn.fetchval(f'SELECT min("{growing[name]}") FROM "{name}"',
                                             timeout=OLDEST_ROW_TIMEOUT)
            except (asyncio.TimeoutError, asyncpg.QueryCanceledError):
                oldest = None
        found.append(Table(name, row["bytes"], row["rows"], oldest, name in growing))
    return tuple(found)
