"""Idempotency keys: claimed before a write runs, finished in the write's own transaction."""

from __future__ import annotations

from collections.abc import Mapping
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

    One statement, committed on its own, so a concurrent request anywhere sees the claim in
    flight; a record past retention, or a claim abandoned in flight, is replaced. Only a
    key held already costs a second statement: what holds it is read then, in a snapshot of
    its own (the first statement's may predate a claim it waited for), so a twin of this
    request hears "in flight" or gets the replay, only another body hears "reused"; a claim
    released between the two is in flight as far as this request knows.
    """
    claimed = await db.fetchval(
        """INSERT INTO idempotency_keys AS k (property_id, route, key, body_hash, state, created_at)
           VALUES ($1, $2, $3, $4, 'in_flight', $5)
           ON CONFLICT (property_id, route, key) DO UPDATE
               SET body_hash = excluded.body_hash, state = 'in_flight', status = NULL, response = NULL,
                   created_at = excluded.created_at
               WHERE k.created_at <= $6 OR (k.state = 'in_flight' AND k.created_at <= $7)
           RETURNING true""",
        property_id, route, key, body_hash, now, now - retention, now - stale_after)
    if claimed:
        return None
    row = await db.fetchrow(
        """SELECT body_hash, state, status, response FROM idempotency_keys
           WHERE property_id = $1 AND route = $2 AND key = $3""", property_id, route, key)
    if row is None:
        return Stored(True, True, None, None)
    return Stored(bytes(row["body_hash"]) == body_hash, row["state"] == "in_flight", row["status"], row["response"])


async def finish(conn: asyncpg.Connection, property_id: int, route: str, key: str, outcome: Mapping[str, object]) -> None:
    """Record the request's outcome; run inside the write's transaction so both commit
    together. (`status` is left null: records of older versions kept the answer itself.)"""
    await conn.execute(
        """UPDATE idempotency_keys SET state = 'done', response = $4
           WHERE property_id = $1 AND route = $2 AND key = $3""",
        property_id, route, key, outcome,
    )


async def finish_now(db: Database, property_id: int, route: str, key: str, outcome: Mapping[str, object]) -> None:
    """`finish` in a statement of its own: an outcome that needed no write."""
    async def work(conn: asyncpg.Connection) -> None:
        await finish(conn, property_id, route, key, outcome)

    await db.run(work)


async def release(db: Database, property_id: int, route: str, key: str) -> None:
    """Give up a claim whose request was not answered in a way we store."""
    await db.execute(
        "DELETE FROM idempotency_keys WHERE property_id = $1 AND route = $2 AND key = $3 AND state = 'in_flight'",
        property_id, route, key,
    )


async def purge(db: Database, older_than: datetime) -> int:
    status = await db.execute("DELETE FROM idempotency_keys WHERE created_at <= $1", older_than)
    return int(status.split()[-1])
