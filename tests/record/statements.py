"""Waiting, on a mock clock that stands still, for a statement to be running on the server."""

from __future__ import annotations

import trio

from connectapi.storage.database import Database


async def until_sleeping(watcher: Database) -> None:
    """Until a `SELECT pg_sleep(...)` runs on the server (asked on `watcher`, a pool of its
    own with no bound): a jump of the clock then lands while it runs."""
    for _ in range(50_000):
        if await watcher.fetchval("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'"):
            return
        await trio.sleep(0)
