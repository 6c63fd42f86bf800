"""Idempotency keys: claimed before a write runs, finished in the write's own transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from .database import Database


@dataclass(frozen=True, slots=True)
class Stored:
    """What an earlier request with the same key left."""

    same_body: bool
    in_flight: bool
    status: int | None
    response: dict[str, Any] | None


async def claim(
    db: Database, property_id: int, route: str, key: str, body_hash: bytes, now: datetime,
    retention: timedelta, stale_after: timedelta,
) -> Stored | None:
    """Take the key for this request (None), or say what holds it.

    The claim commits on its own, so a concurrent request anywhere sees it in flight.
    A record past retention, or a claim abandoned in flight, is replaced.
    """

    async def held(conn: asyncpg.Connection) -> asyncpg.Record | None:
        return await conn.fetchrow(
            """SELECT body_hash, state, status, response, created_at FROM idempotency_keys
               WHERE property_id = $1 AND route = $2 AND key = $3 FOR UPDATE""",
            property_id, route, key,
        )

    async def work(conn: asyncpg.Connection) -> Stored | None:
        row = await held(conn)
        if row is not None:
            expired = row["created_at"] <= now - retention
            abandoned = row["state"] == "in_flight" and row["created_at"] <= now - stale_after
            if not (expired or abandoned):
                return Stored(bytes(row["body_hash"]) == body_hash, row["state"] == "in_flight",
                              row["status"], row["response"])
            await conn.execute(
                "DELETE FROM idempotency_keys WHERE property_id = $1 AND route = $2 AND key = $3",
                property_id, route, key,
            )
        inserted = await conn.fetchval(
            """INSERT INTO idempotency_keys (property_id, route, key, body_hash, state, created_at)
               VALUES ($1, $2, $3, $4, 'in_flight', $5) ON CONFLICT DO NOTHING RETURNING 1""",
            property_id, route, key, body_hash, now,
        )
        if inserted is None:
            # Another request claimed it between our read and insert (the insert waited for
            # it to commit): read again and answer from its row, so a twin of this request
            # hears "in flight" or gets the replay, and only another body hears "reused".
            row = await held(conn)
            if row is None:  # released already: in flight as far as this request knows
                return Stored(True, True, None, None)
            return Stored(bytes(row["body_hash"]) == body_hash, row["state"] == "in_flight",
                          row["status"], row["response"])
        return None

    return await db.transaction(work)


async def finish(conn: asyncpg.Connection, property_id: int, route: str, key: str, outcome: dict[str, Any]) -> None:
    """Record the request's outcome; run inside the write's transaction so both commit
    together. (`status` is left null: records of older versions kept the answer itself.)"""
    await conn.execute(
        """UPDATE idempotency_keys SET state = 'done', response = $4
           WHERE property_id = $1 AND route = $2 AND key = $3""",
        property_id, route, key, outcome,
    )


async def release(db: Database, property_id: int, route: str, key: str) -> None:
    """Give up a claim whose request was not answered in a way we store."""
    await db.execute(
        "DELETE FROM idempotency_keys WHERE property_id = $1 AND route = $2 AND key = $3 AND state = 'in_flight'",
        property_id, route, key,
    )


async def purge(db: Database, older_than: datetime) -> int:
    status = await db.execute("DELETE FROM idempotency_keys WHERE created_at <= $1", older_than)
    return int(status.split()[-1])
