"""API keys: only digests are stored; lookups go by digest."""

from __future__ import annotations

from datetime import datetime, timedelta

import asyncpg

from .ari import hold_property
from .database import Database
from .properties import property_of
from .records import ApiKey, KeyWithProperty

MAX_LIVE_KEYS = 5
_KEY_COLUMNS = "k.id, k.property_id, k.label, k.prefix, k.scopes, k.allowlist, k.created_at, k.last_used_at, k.revoked_at"
# A key's mode and live property are its property's (a test key's property is a test twin).
_MODE_COLUMNS = "(SELECT p.mode FROM properties p WHERE p.id = k.property_id) AS mode, " \
                "(SELECT p.twin_of FROM properties p WHERE p.id = k.property_id) AS live_property_id"
# `$n` names the live property: a key of it or of its test twin.
_OF_PROPERTY = "k.property_id IN (SELECT o.id FROM properties o WHERE o.id = {0} OR o.twin_of = {0})"


class KeyLimitReached(Exception):
    pass


class NoSuchKey(Exception):
    pass


def _key_of(row: asyncpg.Record) -> ApiKey:
    return ApiKey(
        id=row["id"], property_id=row["property_id"], label=row["label"], prefix=row["prefix"],
        scopes=tuple(row["scopes"]), allowlist=tuple(row["allowlist"]), created_at=row["created_at"],
        last_used_at=row["last_used_at"], revoked_at=row["revoked_at"], mode=row["mode"],
        live_property_id=row["live_property_id"],
    )


async def _insert(
    conn: asyncpg.Connection, property_id: int, label: str, digest: bytes, prefix: str,
    scopes: list[str], allowlist: list[str],
) -> ApiKey:
    row = await conn.fetchrow(
        f"""INSERT INTO api_keys AS k (property_id, label, digest, prefix, scopes, allowlist)
            VALUES ($1, $2, $3, $4, $5, $6) RETURNING {_KEY_COLUMNS}, {_MODE_COLUMNS}""",
        property_id, label, digest, prefix, scopes, allowlist,
    )
    return _key_of(row)


async def create_key(
    db: Database, property_id: int, label: str, digest: bytes, prefix: str,
    scopes: list[str], allowlist: list[str],
) -> ApiKey:
    async def work(conn: asyncpg.Connection) -> ApiKey:
        # The row lock on the property serialises concurrent creations against the limit.
        await hold_property(conn, property_id)
        live = await conn.fetchval(
            "SELECT count(*) FROM api_keys WHERE property_id = $1 AND revoked_at IS NULL", property_id
        )
        if live >= MAX_LIVE_KEYS:
            raise KeyLimitReached()
        return await _insert(conn, property_id, label, digest, prefix, scopes, allowlist)

    return await db.transaction(work)


async def list_keys(db: Database, property_id: int) -> list[ApiKey]:
    """The keys of a live property, of both modes."""
    rows = await db.fetch(f"""SELECT {_KEY_COLUMNS}, {_MODE_COLUMNS} FROM api_keys k
                              WHERE {_OF_PROPERTY.format("$1")} ORDER BY k.id""", property_id)
    return [_key_of(r) for r in rows]


async def get_key(db: Database, key_id: int) -> ApiKey | None:
    row = await db.fetchrow(f"SELECT {_KEY_COLUMNS}, {_MODE_COLUMNS} FROM api_keys k WHERE k.id = $1", key_id)
    return None if row is None else _key_of(row)


async def patch_key(
    db: Database, key_id: int, label: str | None, scopes: list[str] | None, allowlist: list[str] | None,
    property_id: int | None = None,
) -> ApiKey | None:
    """Change a live key; None when there is no such live key (of `property_id`, when given)."""
    row = await db.fetchrow(
        f"""UPDATE api_keys AS k SET label = coalesce($2, label), scopes = coalesce($3, scopes),
                allowlist = coalesce($4, allowlist)
            WHERE k.id = $1 AND k.revoked_at IS NULL AND ($5::bigint IS NULL OR {_OF_PROPERTY.format("$5")})
            RETURNING {_KEY_COLUMNS}, {_MODE_COLUMNS}""",
        key_id, label, scopes, allowlist, property_id,
    )
    return None if row is None else _key_of(row)


async def revoke_key(db: Database, key_id: int, at: datetime, property_id: int | None = None) -> ApiKey | None:
    """Revoke a live key; revoking a revoked key changes nothing and returns it. None when
    there is no such key (of `property_id`, when given)."""
    row = await db.fetchrow(
        f"""UPDATE api_keys AS k SET revoked_at = coalesce(revoked_at, $2)
            WHERE k.id = $1 AND ($3::bigint IS NULL OR {_OF_PROPERTY.format("$3")}) RETURNING {_KEY_COLUMNS}, {_MODE_COLUMNS}""",
        key_id, at, property_id,
    )
    return None if row is None else _key_of(row)


async def rotate_key(
    db: Database, key_id: int, digest: bytes, prefix: str, at: datetime, property_id: int | None = None
) -> ApiKey:
    """A new key with the old one's label, scopes and allowlist; the old one is revoked.
    NoSuchKey when there is no such live key (of `property_id`, when given)."""

    async def work(conn: asyncpg.Connection) -> ApiKey:
        old = await conn.fetchrow(
            f"""SELECT {_KEY_COLUMNS} FROM api_keys k
                WHERE k.id = $1 AND k.revoked_at IS NULL AND ($2::bigint IS NULL OR {_OF_PROPERTY.format("$2")})
                FOR UPDATE""",
            key_id, property_id,
        )
        if old is None:
            raise NoSuchKey(key_id)
        new = await _insert(conn, old["property_id"], old["label"], digest, prefix, list(old["scopes"]),
                            list(old["allowlist"]))
        await conn.execute("UPDATE api_keys SET revoked_at = $2, replaced_by = $3 WHERE id = $1", key_id, at, new.id)
        return new

    return await db.transaction(work)


async def find_by_digest(db: Database, digest: bytes) -> KeyWithProperty | None:
    row = await db.fetchrow(
        f"""SELECT {_KEY_COLUMNS}, k.digest, p.id AS p_id, p.name, p.timezone, p.currency, p.channel_manager,
                   p.pms, p.pms_entitled, p.status, p.owner_email, p.bookings_per_day, p.guest_confirmation,
                   p.created_at AS p_created_at, p.mode, p.twin_of, p.twin_of AS live_property_id
            FROM api_keys k JOIN properties p ON p.id = k.property_id
            WHERE k.digest = $1""",
        digest,
    )
    if row is None:
        return None
    prop = dict(row)
    prop["id"] = row["p_id"]
    prop["created_at"] = row["p_created_at"]
    return KeyWithProperty(_key_of(row), bytes(row["digest"]), property_of(prop))


async def touch_last_used(db: Database, key_id: int, at: datetime, every: timedelta) -> None:
    """Record use at most once per `every`, so a busy key is not a write per request."""
    await db.execute(
        """UPDATE api_keys SET last_used_at = $2
           WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - $3::interval)""",
        key_id, at, every,
    )


async def record_allowlist_refusal(db: Database, key_id: int, property_id: int, address: str, at: datetime) -> None:
    await db.execute(
        "INSERT INTO allowlist_refusals (key_id, property_id, address, at) VALUES ($1, $2, $3, $4)",
        key_id, property_id, address, at,
    )


async def allowlist_refusals(db: Database, property_id: int, limit: int = 100) -> list[dict[str, object]]:
    """The latest refusals of the live property's keys, test keys' included."""
    rows = await db.fetch(
        """SELECT key_id, address, at FROM allowlist_refusals
           WHERE property_id IN (SELECT o.id FROM properties o WHERE o.id = $1 OR o.twin_of = $1)
           ORDER BY at DESC, id DESC LIMIT $2""",
        property_id, limit,
    )
    return [dict(r) for r in rows]

