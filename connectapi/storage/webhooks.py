"""Webhook endpoints, events and deliveries in the record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from ..domain.webhook_events import Event
from ..tracing import spans
from .database import Database, names_nothing
from . import leases


@dataclass(frozen=True, slots=True)
class Endpoint:
    id: int
    property_id: int
    url: str
    description: str | None
    status: str
    secret: str
    previous_secret: str | None
    rotated_at: datetime | None
    failing_since: datetime | None
    paused_at: datetime | None
    created_at: datetime
    # An endpoint of a test twin receives its test events, is listed under the live
    # property, and may be reached on loopback and private addresses (the sender's check).
    mode: str = "live"
    live_property_id: int | None = None

    @property
    def of_property(self) -> int:
        return self.live_property_id if self.live_property_id is not None else self.property_id


@dataclass(frozen=True, slots=True)
class Due:
    """The next delivery of an active endpoint, due now."""

    delivery_id: int
    attempts: int
    first_attempt_at: datetime | None
    event_id: str
    body: str
    endpoint: Endpoint
    trace_parent: str | None = None  # the span that made the event (tracing on)
    event_type: str = ""


@dataclass(frozen=True, slots=True)
class Delivery:
    event_id: str
    type: str
    attempts: int
    status: str
    response_status: int | None
    duration_ms: int | None
    next_attempt_at: datetime | None
    last_error: str | None
    trace_id: str | None = None  # the last attempt's trace, when tracing was on


_ENDPOINT = """id, property_id, url, description, status, secret, previous_secret, rotated_at, failing_since,
               paused_at, created_at"""


# An endpoint's mode and live property are its property's.
_MODE = """(SELECT p.mode FROM properties p WHERE p.id = webhook_endpoints.property_id) AS mode,
           (SELECT p.twin_of FROM properties p WHERE p.id = webhook_endpoints.property_id) AS live_property_id"""


def _endpoint(row: asyncpg.Record, prefix: str = "") -> Endpoint:
    columns = [row[prefix + name.strip()] for name in _ENDPOINT.split(",")]
    if "mode" in row.keys():  # read with _MODE
        columns += [row["mode"], row["live_property_id"]]
    return Endpoint(*columns)


async def create_endpoint(db: Database, property_id: int, url: str, description: str | None, secret: str,
                          at: datetime) -> Endpoint:
    row = await db.fetchrow(
        f"""INSERT INTO webhook_endpoints (property_id, url, description, status, secret, created_at)
            VALUES ($1, $2, $3, 'active', $4, $5) RETURNING {_ENDPOINT}, {_MODE}""",
        property_id, url, description, secret, at)
    assert row is not None
    return _endpoint(row)


async def endpoints_of(db: Database, property_id: int) -> list[Endpoint]:
    """The endpoints of a live property, of both modes."""
    rows = await db.fetch(f"""SELECT {_ENDPOINT}, {_MODE} FROM webhook_endpoints
                              WHERE property_id IN (SELECT o.id FROM properties o WHERE o.id = $1 OR o.twin_of = $1)
                              ORDER BY id""", property_id)
    return [_endpoint(r) for r in rows]


async def endpoint(db: Database, endpoint_id: int) -> Endpoint | None:
    row = await db.fetchrow(f"SELECT {_ENDPOINT}, {_MODE} FROM webhook_endpoints WHERE id = $1", endpoint_id)
    return None if row is None else _endpoint(row)


async def pause(db: Database, endpoint_id: int, at: datetime) -> None:
    await db.execute("UPDATE webhook_endpoints SET status = 'paused', paused_at = $2 WHERE id = $1 "
                     "AND status = 'active'", endpoint_id, at)


async def resume(db: Database, endpoint_id: int, shared: float | None) -> None:
    """Active again; what waited is due now (on the database's clock, or at `shared`: a
    test's), with a fresh day of attempts."""
    async def work(conn: asyncpg.Connection) -> None:
        await conn.execute("UPDATE webhook_endpoints SET status = 'active', paused_at = NULL, failing_since = NULL "
                           "WHERE id = $1", endpoint_id)
        await conn.execute(f"""UPDATE webhook_deliveries SET attempts = 0, first_attempt_at = NULL,
                                      next_attempt_at = {leases.database_now("$2")}
                               WHERE endpoint_id = $1 AND status = 'pending'""", endpoint_id, shared)

    await db.transaction(work)


async def rotate_secret(db: Database, endpoint_id: int, secret: str, at: datetime) -> None:
    await db.execute("""UPDATE webhook_endpoints SET previous_secret = secret, secret = $2, rotated_at = $3
                        WHERE id = $1""", endpoint_id, secret, at)


async def record_event(conn: asyncpg.Connection, property_id: int, event: Event, endpoint_ids: list[int] | None,
                       at: datetime, shared: float | None) -> int:
    """Store the event and queue a delivery to each given endpoint (None: every endpoint of the
    property, paused ones included: they wait); answers how many were queued. Each is due at
    once on the database's clock (or at `shared`, a test's: Clock.shared_time), which every
    sender judges by: a host whose own clock runs ahead must not date one into the future."""
    # The event keeps the span that caused it (a revision's apply, a booking's request): its
    # deliveries, later and maybe elsewhere, link to it.
    seq = await conn.fetchval(
        """INSERT INTO webhook_events (id, property_id, type, body, occurred_at, trace_parent)
           VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq""",
        event.id, property_id, event.type, event.body, event.occurred_at, spans.traceparent())
    queued: int = await conn.fetchval(
        f"""WITH made AS (
               INSERT INTO webhook_deliveries (endpoint_id, event_id, event_seq, status, next_attempt_at, created_at)
               SELECT e.id, $2, $3, 'pending', {leases.database_now("$6")}, $4 FROM webhook_endpoints e
               WHERE e.property_id = $1 AND ($5::bigint[] IS NULL OR e.id = ANY($5::bigint[]))
               RETURNING 1)
           SELECT count(*) FROM made""",
        property_id, event.id, seq, at, endpoint_ids, shared)
    return queued


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as it was recorded: its place in the order of all events, and its body
    exactly as signed and sent."""

    seq: int
    id: str
    type: str
    body: str


async def events_after(db: Database, property_id: int, after: int | None,
                       limit: int = 100) -> tuple[list[StoredEvent], int]:
    """The property's events recorded after `after` (a seq), oldest first, at most `limit`,
    pings left out (each is for one endpoint); and the seq to ask after next. `after` None:
    none, and the property's newest seq (a listener starts from now). A property's events are
    recorded by its writer under its row lock, so they commit in the order of their seq: a
    reader past one never misses an earlier one committed later."""
    if after is None:  # the property's own newest: one of its events not committed yet comes after it
        newest: int = await db.fetchval("SELECT coalesce(max(seq), 0) FROM webhook_events WHERE property_id = $1",
                                        property_id)
        return [], newest
    rows = await db.fetch(
        """SELECT seq, id, type, body FROM webhook_events
           WHERE property_id = $1 AND seq > $2 AND type <> 'connectapi.ping' ORDER BY seq LIMIT $3""",
        property_id, after, limit)
    found = [StoredEvent(r["seq"], r["id"], r["type"], r["body"]) for r in rows]
    return found, found[-1].seq if found else after


async def record_event_now(db: Database, property_id: int, event: Event, endpoint_ids: list[int] | None,
                           at: datetime, shared: float | None) -> int:
    """`record_event` in a transaction of its own (a ping, a test)."""
    async def work(conn: asyncpg.Connection) -> int:
        return await record_event(conn, property_id, event, endpoint_ids, at, shared)

    return await db.transaction(work)


async def due(db: Database, holder: str, lease_seconds: float, busy: Sequence[int] = (),
              limit: int = 1000, *, shared: float | None) -> list[Due]:
    """For each active endpoint, its oldest pending delivery, when that one is due, taking
    the endpoint's `sending` lease for `holder` for `lease_seconds`, both judged by the
    database's clock (or at `shared` when a test gives one: storage.leases): an endpoint gets its
    events in order (a delivery waiting on a retry holds the rest) and from one process at
    a time. Endpoints another process holds, or this one has `busy`, are left alone; at
    most `limit` are taken."""
    lease_at = leases.database_now("$1")
    rows = await db.fetch(
        f"""WITH sendable AS (
                SELECT e.id FROM webhook_endpoints e
                LEFT JOIN leases l ON l.kind = 'sending' AND l.key = e.id::text
                WHERE e.status = 'active' AND {leases.free("l", lease_at)}
                      AND NOT e.id = ANY($4::bigint[])
                      AND (SELECT d.next_attempt_at FROM webhook_deliveries d
                           WHERE d.endpoint_id = e.id AND d.status = 'pending'
                           ORDER BY d.event_seq, d.id LIMIT 1) <= {lease_at}
                ORDER BY e.id LIMIT $5
                FOR UPDATE OF e SKIP LOCKED),
            taken AS (
                -- The endpoint's row lock keeps two processes from taking one lease at once;
                -- a lease taken since our look (its row locked, then committed) is left.
                INSERT INTO leases AS l (kind, key, holder, until)
                SELECT 'sending', id::text, $2, {lease_at} + make_interval(secs => $3) FROM sendable
                ON CONFLICT (kind, key) DO UPDATE SET holder = excluded.holder, until = excluded.until, again = false
                WHERE {leases.free("l", lease_at)} OR l.holder = excluded.holder
                RETURNING l.key::bigint AS id)
            SELECT d.id AS delivery_id, d.attempts, d.first_attempt_at, d.event_id, ev.body, ev.trace_parent, ev.type,
                   {', '.join('e.' + n.strip() + ' AS e_' + n.strip() for n in _ENDPOINT.split(','))},
                   (SELECT p.mode FROM properties p WHERE p.id = e.property_id) AS mode,
                   (SELECT p.twin_of FROM properties p WHERE p.id = e.property_id) AS live_property_id
            FROM taken JOIN webhook_endpoints e ON e.id = taken.id
            CROSS JOIN LATERAL (SELECT * FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending'
                                ORDER BY d.event_seq, d.id LIMIT 1) d
            JOIN webhook_events ev ON ev.id = d.event_id""",
        shared, holder, lease_seconds, list(busy), limit)
    return [Due(r["delivery_id"], r["attempts"], r["first_attempt_at"], r["event_id"], r["body"], _endpoint(r, "e_"),
                r["trace_parent"], r["type"]) for r in rows]


async def next_due_in(db: Database, busy: Sequence[int] = (), *, shared: float | None) -> float | None:
    """In how many seconds (on the database's clock, or from `shared`) the next delivery
    `due` would take falls due; negative when it already is. Of each active endpoint only its
    oldest pending one counts (a newer one, due but held behind a retry, is not sendable;
    counting it made the sender look again at once, in a loop, until the retry came), not
    before another process's lease on the endpoint runs out, and none of the `busy`
    endpoints (an attempt under way: its end is the sender's cue)."""
    value: float | None = await db.fetchval(
        f"""SELECT extract(epoch FROM min(greatest(d.next_attempt_at, l.until)) - {leases.database_now("$2")})::float8
           FROM webhook_endpoints e
           LEFT JOIN leases l ON l.kind = 'sending' AND l.key = e.id::text
           CROSS JOIN LATERAL (SELECT next_attempt_at FROM webhook_deliveries d
                               WHERE d.endpoint_id = e.id AND d.status = 'pending'
                               ORDER BY d.event_seq, d.id LIMIT 1) d
           WHERE e.status = 'active' AND NOT e.id = ANY($1::bigint[])""", list(busy), shared)
    return value


async def delivered(db: Database, delivery_id: int, endpoint_id: int, status: int, duration_ms: int,
                    at: datetime, holder: str | None = None) -> None:
    async def work(conn: asyncpg.Connection) -> None:
        await conn.execute(
            """UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, response_status = $2,
                      duration_ms = $3, delivered_at = $4, last_error = NULL,
                      first_attempt_at = COALESCE(first_attempt_at, $4), trace_id = $5
               WHERE id = $1""", delivery_id, status, duration_ms, at, spans.trace_id())
        await conn.execute("UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1", endpoint_id)
        await _give_back_sending(conn, endpoint_id, holder)

    await db.transaction(work)


async def failed(db: Database, delivery_id: int, endpoint_id: int, status: int | None, duration_ms: int,
                 error: str, wait_seconds: float, at: datetime, holder: str | None, *,
                 shared: float | None) -> None:
    """The attempt failed: the delivery is tried again `wait_seconds` from now on the
    database's clock (or from `shared`), which every sender judges by."""
    async def work(conn: asyncpg.Connection) -> None:
        await conn.execute(
            f"""UPDATE webhook_deliveries SET attempts = attempts + 1, response_status = $2, duration_ms = $3,
                       last_error = $4, next_attempt_at = {leases.database_now("$7")} + make_interval(secs => $5),
                       first_attempt_at = COALESCE(first_attempt_at, $6), trace_id = $8
                WHERE id = $1""", delivery_id, status, duration_ms, error[:500], wait_seconds, at, shared,
            spans.trace_id())
        await conn.execute("UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $2) WHERE id = $1",
                           endpoint_id, at)
        await _give_back_sending(conn, endpoint_id, holder)

    await db.transaction(work)


async def _give_back_sending(conn: asyncpg.Connection, endpoint_id: int, holder: str | None) -> None:
    """The attempt is recorded: the endpoint's next delivery may go from any process."""
    if holder is not None:
        await leases.give_back_in(conn, leases.LeaseKind.SENDING, str(endpoint_id), holder)


async def deliveries_of(db: Database, endpoint_id: int, limit: int = 100) -> list[Delivery]:
    rows = await db.fetch(
        """SELECT d.event_id, ev.type, d.attempts, d.status, d.response_status, d.duration_ms, d.last_error,
                  CASE WHEN d.status = 'pending' THEN d.next_attempt_at END AS next_attempt_at, d.trace_id
           FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id
           WHERE d.endpoint_id = $1 ORDER BY d.id DESC LIMIT $2""", endpoint_id, limit)
    return [Delivery(r["event_id"], r["type"], r["attempts"], r["status"], r["response_status"], r["duration_ms"],
                     r["next_attempt_at"], r["last_error"], r["trace_id"]) for r in rows]


async def queue_again(db: Database, endpoint: Endpoint, event_id: str | None, since: datetime | None,
                      at: datetime, shared: float | None) -> int:
    """Queue one event of the endpoint's property (by id), or all of them since an instant,
    for the endpoint again; answers how many were queued. The caller bounds `since` by the
    retention (an event older than it may be pruned at any moment). The events are locked as
    read: one the janitor is deleting meanwhile is waited for and then left out (not queued,
    so a redeliver answers not found), never a foreign-key error."""
    if event_id is not None and names_nothing(event_id):
        return 0
    queued: int = await db.fetchval(
        f"""WITH made AS (
               INSERT INTO webhook_deliveries (endpoint_id, event_id, event_seq, status, next_attempt_at, created_at)
               SELECT $1, ev.id, ev.seq, 'pending', {leases.database_now("$6")}, $5 FROM webhook_events ev
               WHERE ev.property_id = $2 AND ($3::text IS NULL OR ev.id = $3)
                 AND ($4::timestamptz IS NULL OR ev.occurred_at >= $4)
               ORDER BY ev.seq
               FOR KEY SHARE OF ev
               RETURNING 1)
           SELECT count(*) FROM made""",
        endpoint.id, endpoint.property_id, event_id, since, at, shared)
    return queued


async def backlog(db: Database) -> int:
    """Deliveries to live endpoints not yet made, paused endpoints' included (the metrics'
    gauge: a test endpoint's backlog is its integrator's)."""
    return int(await db.fetchval(
        """SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
           JOIN properties p ON p.id = e.property_id WHERE d.status = 'pending' AND p.mode = 'live'"""))
