"""Numbered SQL migrations (`NNNN_name.sql`), applied in one transaction under an advisory lock.

Several processes may start at once; the lock makes one of them apply and the others
find the work done.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

from .database import Database

# Any constant that no other user of the database takes; "connectapi" in ASCII.
MIGRATION_LOCK_ID = 0x636F6E6E656374
_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def bundled_migrations() -> list[Migration]:
    found = []
    for entry in resources.files("connectapi.storage").joinpath("migrations").iterdir():
        match = _NAME.fullmatch(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a number: {versions}")
    return found


MIGRATION_TIMEOUT = 3600.0


async def migrate(db: Database, through: int | None = None) -> list[int]:
    """Apply what is missing (up to version `through`, when given: the record as an earlier
    release left it, for the upgrade test); returns the versions applied now."""
    return await db.transaction(lambda conn: apply_migrations(conn, through))


async def apply_migrations(conn: asyncpg.Connection, through: int | None = None) -> list[int]:
    """`migrate` on a connection already in a transaction (a restore builds the schema and
    loads the rows in one)."""
    migrations = [m for m in bundled_migrations() if through is None or m.version <= through]
    # Waiting for another process's migrations, or a migration rewriting a big table,
    # may take longer than any request's statement is allowed to.
    await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK_ID, timeout=MIGRATION_TIMEOUT)
    await conn.execute(
        """CREATE TABLE IF NOT EXISTS schema_migrations (
               version integer PRIMARY KEY,
               name text NOT NULL,
               applied_at timestamptz NOT NULL DEFAULT now())"""
    )
    done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
    applied = []
    for migration in migrations:
        if migration.version in done:
            continue
        await conn.execute(migration.sql, timeout=MIGRATION_TIMEOUT)
        await conn.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            migration.version, migration.name,
        )
        applied.append(migration.version)
    return applied


async def is_migrated(db: Database) -> bool:
    latest = bundled_migrations()[-1].version

    async def work(conn: asyncpg.Connection) -> bool:
        exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
        if not exists:
            return False
        # A newer schema is ready too: a newer version migrated while this one still runs
        # beside it (a rolling upgrade); migrations only add, so this one still works.
        return bool(await conn.fetchval("SELECT coalesce(max(version), 0) FROM schema_migrations") >= latest)

    return await db.run(work)
