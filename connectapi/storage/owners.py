"""Owners, the properties they may see, their setup links, sessions and failed logins."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from ..domain.owners import SETUP_LINK_VALID, digest, email_key
from .database import Database


@dataclass(frozen=True, slots=True)
class Owner:
    id: int
    email: str
    name: str
    property_ids: tuple[int, ...]
    password_set: bool
    disabled_at: datetime | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Session:
    owner: Owner
    csrf: str
    last_seen_at: datetime


class EmailTaken(Exception):
    """Another owner has this e-mail."""


class UnknownProperties(Exception):
    def __init__(self, ids: list[int]) -> None:
        super().__init__(f"no properties {ids}")
        self.ids = ids


_OWNER = """SELECT o.id, o.email, o.name, o.password_hash IS NOT NULL AS password_set, o.disabled_at, o.created_at,
                   coalesce(array_agg(p.property_id ORDER BY p.property_id)
                            FILTER (WHERE p.property_id IS NOT NULL), '{}') AS property_ids
            FROM owners o LEFT JOIN owner_properties p ON p.owner_id = o.id"""


def _of(row: asyncpg.Record, prefix: str = "") -> Owner:
    return Owner(row[prefix + "id"], row[prefix + "email"], row[prefix + "name"], tuple(row[prefix + "property_ids"]),
                 row[prefix + "password_set"], row[prefix + "disabled_at"], row[prefix + "created_at"])


async def _grant(conn: asyncpg.Connection, owner_id: int, property_ids: list[int]) -> None:
    wanted = sorted(set(property_ids))
    known = [r["id"] for r in await conn.fetch("SELECT id FROM properties WHERE id = ANY($1::bigint[])", wanted)]
    missing = sorted(set(wanted) - set(known))
    if missing:
        raise UnknownProperties(missing)
    await conn.execute("DELETE FROM owner_properties WHERE owner_id = $1", owner_id)
    await conn.execute("INSERT INTO owner_properties (owner_id, property_id) SELECT $1, unnest($2::bigint[])",
                       owner_id, wanted)


async def _new_link(conn: asyncpg.Connection, owner_id: int, token: str, now: datetime) -> None:
    """A new setup link; any earlier one of the owner stops working."""
    await conn.execute("DELETE FROM owner_setup_links WHERE owner_id = $1", owner_id)
    await conn.execute("INSERT INTO owner_setup_links (digest, owner_id, expires_at) VALUES ($1, $2, $3)",
                       digest(token), owner_id, now + SETUP_LINK_VALID)


async def create(db: Database, email: str, name: str, property_ids: list[int], token: str, now: datetime,
                 mail: tuple[str, str] | None) -> int:
    """A new owner with a setup link (`token`) and, when `mail` (subject, body) is given,
    its e-mail queued in the outbox, in one transaction."""
    async def work(conn: asyncpg.Connection) -> int:
        taken = await conn.fetchval("SELECT 1 FROM owners WHERE lower(email) = $1", email_key(email))
        if taken:
            raise EmailTaken(email)
        try:
            owner_id: int = await conn.fetchval(
                "INSERT INTO owners (email, name, created_at) VALUES ($1, $2, $3) RETURNING id", email, name, now)
        except asyncpg.UniqueViolationError:
            raise EmailTaken(email) from None
        await _grant(conn, owner_id, property_ids)
        await _new_link(conn, owner_id, token, now)
        if mail is not None:
            await _queue_mail(conn, email, mail, now)
        return owner_id

    return await db.transaction(work)


async def _queue_mail(conn: asyncpg.Connection, to: str, mail: tuple[str, str], now: datetime) -> None:
    subject, body = mail
    await conn.execute(
        """INSERT INTO notifications (property_id, booking_id, kind, to_address, subject, body, created_at)
           VALUES (NULL, NULL, 'owner.setup', $1, $2, $3, $4)""", to, subject, body, now)


async def new_setup_link(db: Database, owner_id: int, token: str, now: datetime, mail: tuple[str, str] | None) -> bool:
    """A new setup link for an owner (a reset); False when there is no such owner."""
    async def work(conn: asyncpg.Connection) -> bool:
        email = await conn.fetchval("SELECT email FROM owners WHERE id = $1 FOR UPDATE", owner_id)
        if email is None:
            return False
        await _new_link(conn, owner_id, token, now)
        if mail is not None:
            await _queue_mail(conn, email, mail, now)
        return True

    return await db.transaction(work)


async def get(db: Database, owner_id: int) -> Owner | None:
    row = await db.fetchrow(f"{_OWNER} WHERE o.id = $1 GROUP BY o.id", owner_id)
    return None if row is None else _of(row)


async def list_all(db: Database, limit: int = 1000) -> list[Owner]:
    rows = await db.fetch(f"{_OWNER} GROUP BY o.id ORDER BY o.id LIMIT $1", limit)
    return [_of(r) for r in rows]


async def change(db: Database, owner_id: int, name: str | None, property_ids: list[int] | None,
                 disabled: bool | None, now: datetime) -> bool:
    """Rename, grant and withdraw properties, disable (its sessions end) or enable again."""
    async def work(conn: asyncpg.Connection) -> bool:
        found = await conn.fetchval("SELECT 1 FROM owners WHERE id = $1 FOR UPDATE", owner_id)
        if not found:
            return False
        if name is not None:
            await conn.execute("UPDATE owners SET name = $2 WHERE id = $1", owner_id, name)
        if property_ids is not None:
            await _grant(conn, owner_id, property_ids)
        if disabled is True:
            await conn.execute("UPDATE owners SET disabled_at = coalesce(disabled_at, $2) WHERE id = $1", owner_id, now)
            await conn.execute("DELETE FROM owner_sessions WHERE owner_id = $1", owner_id)
            await conn.execute("DELETE FROM owner_setup_links WHERE owner_id = $1", owner_id)
        elif disabled is False:
            await conn.execute("UPDATE owners SET disabled_at = NULL WHERE id = $1", owner_id)
        return True

    return await db.transaction(work)


async def delete(db: Database, owner_id: int) -> bool:
    """The owner gone, with its grants, links and sessions (cascade)."""
    status = await db.execute("DELETE FROM owners WHERE id = $1", owner_id)
    return status.endswith(" 1")


async def owner_of_link(db: Database, token: str, now: datetime) -> Owner | None:
    """The enabled owner a setup link is for, while it is good (unused, not expired)."""
    row = await db.fetchrow(
        f"""{_OWNER} JOIN owner_setup_links l ON l.owner_id = o.id
            WHERE l.digest = $1 AND l.used_at IS NULL AND l.expires_at > $2 AND o.disabled_at IS NULL
            GROUP BY o.id""", digest(token), now)
    return None if row is None else _of(row)


async def set_password(db: Database, token: str, password_hash: str, now: datetime) -> Owner | None:
    """Use a setup link once: the owner's password set, its sessions ended (a reset is also
    how an owner is locked out of a stolen session). None when the link is not good."""
    async def work(conn: asyncpg.Connection) -> int | None:
        owner_id: int | None = await conn.fetchval(
            """UPDATE owner_setup_links l SET used_at = $2 FROM owners o
               WHERE l.digest = $1 AND l.used_at IS NULL AND l.expires_at > $2 AND o.id = l.owner_id
                 AND o.disabled_at IS NULL
               RETURNING l.owner_id""", digest(token), now)
        if owner_id is None:
            return None
        await conn.execute("UPDATE owners SET password_hash = $2 WHERE id = $1", owner_id, password_hash)
        await conn.execute("DELETE FROM owner_sessions WHERE owner_id = $1", owner_id)
        return owner_id

    owner_id = await db.transaction(work)
    return None if owner_id is None else await get(db, owner_id)


async def password_hash_of(db: Database, email: str) -> tuple[int, str | None, bool] | None:
    """(owner id, its password hash, disabled) for an e-mail, or None."""
    row = await db.fetchrow("SELECT id, password_hash, disabled_at IS NOT NULL AS disabled FROM owners "
                            "WHERE lower(email) = $1", email_key(email))
    return None if row is None else (row["id"], row["password_hash"], row["disabled"])


async def replace_hash(db: Database, owner_id: int, old_hash: str, new_hash: str) -> None:
    """A hash made with older parameters, made again at a login (only if still the same)."""
    await db.execute("UPDATE owners SET password_hash = $3 WHERE id = $1 AND password_hash = $2",
                     owner_id, old_hash, new_hash)


async def count_attempt(db: Database, email: str, now: datetime, since: datetime,
                        locked: Callable[[list[datetime]], datetime | None]) -> datetime | None:
    """A login attempt for an e-mail, counted before its password is checked: under a lock
    on the e-mail, its failures since `since` are read and, unless `locked` says they make
    it wait (answered: until when), this attempt is written as one more (a success forgets
    them). Parallel attempts are thus counted one after the other, never all let through.
    Failures too old to count are forgotten on the way."""
    async def work(conn: asyncpg.Connection) -> datetime | None:
        key = email_key(email)
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('owner-login'), hashtext($1))", key)
        await conn.execute("DELETE FROM owner_login_failures WHERE email = $1 AND at <= $2", key, since)
        rows = await conn.fetch("SELECT at FROM owner_login_failures WHERE email = $1 ORDER BY at", key)
        until = locked([r["at"] for r in rows])
        if until is None:
            await conn.execute("INSERT INTO owner_login_failures (email, at) VALUES ($1, $2)", key, now)
        return until

    return await db.transaction(work)


async def forget_failures(db: Database, email: str) -> None:
    await db.execute("DELETE FROM owner_login_failures WHERE email = $1", email_key(email))


async def open_session(db: Database, owner_id: int, password_hash: str, session_id: str, csrf: str,
                       now: datetime) -> bool:
    """A session for an owner whose password was just verified against `password_hash`:
    opened only if that is still its password and it is still enabled (a login that raced
    a reset or a disable opens nothing)."""
    status = await db.execute(
        """INSERT INTO owner_sessions (digest, owner_id, csrf, created_at, last_seen_at)
           SELECT $1, id, $3, $4, $4 FROM owners WHERE id = $2 AND password_hash = $5 AND disabled_at IS NULL""",
        digest(session_id), owner_id, csrf, now, password_hash)
    return status.endswith(" 1")


async def session(db: Database, session_id: str) -> Session | None:
    """The session and its (enabled) owner."""
    row = await db.fetchrow(
        f"""SELECT s.csrf, s.last_seen_at, q.* FROM owner_sessions s
            JOIN ({_OWNER} WHERE o.disabled_at IS NULL GROUP BY o.id) q ON q.id = s.owner_id
            WHERE s.digest = $1""", digest(session_id))
    return None if row is None else Session(_of(row), row["csrf"], row["last_seen_at"])


async def touch_session(db: Database, session_id: str, now: datetime) -> None:
    await db.execute("UPDATE owner_sessions SET last_seen_at = $2 WHERE digest = $1", digest(session_id), now)


async def end_session(db: Database, session_id: str) -> None:
    await db.execute("DELETE FROM owner_sessions WHERE digest = $1", digest(session_id))


async def prune(db: Database, idle_before: datetime, failed_before: datetime, now: datetime,
                limit: int = 500) -> int:
    """Forget, a bounded batch of each per call, what no longer counts: sessions idle past
    their end, failed logins too old for the lockout, setup links used or expired."""
    total = 0
    for sql, args in (
        # Each batch chosen in a CTE, which runs once (storage.retention.prune says why).
        ("""WITH chosen AS MATERIALIZED (
                SELECT digest FROM owner_sessions WHERE last_seen_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
            DELETE FROM owner_sessions t USING chosen WHERE t.digest = chosen.digest""",
         (idle_before, limit)),
        ("""WITH chosen AS MATERIALIZED (
                SELECT id FROM owner_login_failures WHERE at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
            DELETE FROM owner_login_failures t USING chosen WHERE t.id = chosen.id""",
         (failed_before, limit)),
        ("""WITH chosen AS MATERIALIZED (
                SELECT digest FROM owner_setup_links WHERE used_at IS NOT NULL OR expires_at <= $1
                LIMIT $2 FOR UPDATE SKIP LOCKED)
            DELETE FROM owner_setup_links t USING chosen WHERE t.digest = chosen.digest""", (now, limit)),
    ):
        status = await db.execute(sql, *args)
        total += int(status.split()[-1])
    return total
