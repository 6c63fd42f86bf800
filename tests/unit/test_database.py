"""The storage boundary translates outside failures once."""

from __future__ import annotations

import trio
import trio.testing

from connectapi.storage.database import StorageUnavailable, open_database


async def test_a_query_past_its_command_timeout_is_storage_unavailable(mock_clock: trio.testing.MockClock,
                                                                       fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2, command_timeout=5) as db:
        async with open_database(fresh_dsn, min_size=1, max_size=1, command_timeout=None) as watcher:
            caught: list[BaseException] = []

            async def slow() -> None:
                try:
                    await db.fetchval("SELECT pg_sleep(2)")
                except StorageUnavailable as exc:
                    caught.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow)
                for _ in range(50_000):  # until the query is running (the mock clock stands still)
                    if await watcher.fetchval("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'"):
                        break
                    await trio.sleep(0)
                mock_clock.jump(6)  # asyncpg's timeout runs on the loop's clock: Trio's
    assert len(caught) == 1  # translated at the boundary, not a bare TimeoutError
