"""The owner's e-mail outbox: rows written with what they tell, sent afterwards."""

from __future__ import annotations

from datetime import datetime

import asyncpg

from . import leases
from .database import Database
from .records import Notification

_COLUMNS = "id, property_id, kind, to_address, subject, body, created_at, sent_at, attempts, last_error"


def _of(row: asyncpg.Record) -> Notification:
    return Notification(row["id"], row["property_id"], row["kind"], row["to_address"], row["subject"], row["body"],
                        row["created_at"], row["sent_at"], row["attempts"], row["last_error"])


async def enqueue(conn: asyncpg.Connection, property_id: int, booking_id: int | None, kind: str, to_address: str,
                  subject: str, body: str, at: datetime) -> None:
    await conn.execute(
        """INSERT INTO notifications (property_id, booking_id, kind, to_address, subject, body, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)""",
        property_id, booking_id, kind, to_address, subject, body, at)


async def due(db: Database, limit: int, claim_seconds: float, *, shared: float | None) -> list[Notification]:
    """Unsent e-mails whose next attempt is due, oldest first, claimed for this sender for
    `claim_seconds`: their next attempt is moved that far on, so no other process takes them
    meanwhile (FOR UPDATE SKIP LOCKED: none waits on another). Due and claim are both judged
    by the database's clock (or at `shared`, a test's: Clock.shared_time), as a lease is: a
    sender whose host's clock runs ahead must neither take another's claim early nor date
    its own into the future. Sending records the outcome (`mark_sent`, or `mark_failed` with
    the retry's wait); a sender that dies leaves the claim to run out, and the e-mail goes
    again."""
    now = leases.database_now("$3")
    rows = await db.fetch(
        f"""UPDATE notifications n SET next_attempt_at = {now} + make_interval(secs => $2)
            FROM (SELECT id FROM notifications
                  WHERE sent_at IS NULL AND (next_attempt_at IS NULL OR next_attempt_at <= {now})
                  ORDER BY created_at, id LIMIT $1
                  FOR UPDATE SKIP LOCKED) picked
            WHERE n.id = picked.id
            RETURNING {', '.join('n.' + c.strip() for c in _COLUMNS.split(','))}""",
        limit, claim_seconds, shared)
    return sorted((_of(r) for r in rows), key=lambda note: (note.created_at, note.id))


# E-mails that carry a secret (an owner's setup link): once sent, the record keeps the fact,
# not the link.
SECRET_KINDS = ("owner.setup",)
SENT_SECRET_BODY = "(a one-time console setup link: not kept once sent)"


async def mark_sent(db: Database, notification_id: int, at: datetime) -> None:
    await db.execute(
        """UPDATE notifications SET sent_at = $2, attempts = attempts + 1, last_error = NULL,
                  body = CASE WHEN kind = ANY($3::text[]) THEN $4 ELSE body END
           WHERE id = $1""", notification_id, at, list(SECRET_KINDS), SENT_SECRET_BODY)


async def mark_failed(db: Database, notification_id: int, error: str, wait_seconds: float, *,
                      shared: float | None) -> None:
    """The attempt failed: tried again `wait_seconds` from now on the database's clock (or
    from `shared`), which every sender judges by."""
    await db.execute(
        f"""UPDATE notifications SET attempts = attempts + 1, last_error = $2,
                   next_attempt_at = {leases.database_now("$4")} + make_interval(secs => $3)
            WHERE id = $1""", notification_id, error, wait_seconds, shared)


async def for_property(db: Database, property_id: int, limit: int = 100) -> list[Notification]:
    rows = await db.fetch(
        f"SELECT {_COLUMNS} FROM notifications WHERE property_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
        property_id, limit)
    return [_of(r) for r in rows]
