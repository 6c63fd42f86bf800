"""Two identical requests racing on one idempotency key: the second hears "in flight" or
gets the first's answer, never "this key was used with another body"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import trio

from connectapi.storage import idempotency
from connectapi.storage.database import open_database

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


async def test_twins_racing_for_a_key_never_see_another_body(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=4, max_size=8) as db:
        property_id = await db.fetchval("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                        "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")
        seen: list[object] = []
        for pair in range(24):
            key = f"twin-{pair:04d}"

            async def claim(key: str = key) -> None:
                seen.append(await idempotency.claim(db, property_id, "PUT /availability", key, b"same body", NOW,
                                                    timedelta(days=7), timedelta(minutes=2)))

            async with trio.open_nursery() as nursery:
                for _ in range(2):
                    nursery.start_soon(claim)
        claimed = [s for s in seen if s is None]
        held = [s for s in seen if s is not None]
        assert len(claimed) == 24  # one of each pair took the key
        assert held and all(s.same_body and s.in_flight for s in held)  # type: ignore[attr-defined]


async def test_a_twin_of_a_request_replacing_an_expired_record_hears_in_flight(fresh_dsn: str) -> None:
    """A key's record past retention, kept for another body: request A (body Y) replaces
    it, and its twin B arrives while A's claim is not yet committed. B waits for it and
    reads what holds the key as it is then: A's claim, in flight, of B's body; never the
    expired record (neither "reused" nor its old answer)."""
    async with open_database(fresh_dsn, min_size=4, max_size=8) as db:
        property_id = await db.fetchval("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                        "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")
        await db.execute("INSERT INTO idempotency_keys (property_id, route, key, body_hash, state, response, "
                         "created_at) VALUES ($1, 'PUT /rates', 'k-0001', 'old body', 'done', '{}', $2)",
                         property_id, NOW - timedelta(days=8))
        told: list[object] = []
        a = db.held()  # A's claim, held uncommitted on a connection of its own

        async def run(sql: str, *args: object) -> None:
            async def work(conn: Any) -> None:
                await conn.execute(sql, *args)
            await a.run(work)

        async def b_claims() -> None:
            told.append(await idempotency.claim(db, property_id, "PUT /rates", "k-0001", b"body Y", NOW,
                                                timedelta(days=7), timedelta(minutes=2)))

        await run("BEGIN")
        await run("UPDATE idempotency_keys SET body_hash = 'body Y', state = 'in_flight', response = NULL, "
                  "created_at = $2 WHERE property_id = $1 AND key = 'k-0001'", property_id, NOW)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(b_claims)
            await trio.sleep(0.5)  # B's claim waits on A's row
            assert told == []
            await run("COMMIT")
        await a.give_back()
        [stored] = told
        assert stored is not None and stored.same_body and stored.in_flight, stored  # type: ignore[attr-defined]
