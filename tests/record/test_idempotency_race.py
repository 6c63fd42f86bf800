"""Two identical requests racing on one idempotency key: the second hears "in flight" or
gets the first's answer, never "this key was used with another body"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
