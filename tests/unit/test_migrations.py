"""Migrations against a real, empty database: in order, once, and safe to race."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio_asyncio

from connectapi.storage.database import open_database
from connectapi.storage.migrations import bundled_migrations, is_migrated, migrate
from tests.conftest import scratch_database


@pytest.fixture
async def empty_dsn(pg_server: str) -> AsyncIterator[str]:
    async with trio_asyncio.open_loop(), scratch_database(pg_server) as dsn:
        yield dsn


def test_bundled_migrations_are_numbered_from_one() -> None:
    versions = [m.version for m in bundled_migrations()]
    assert versions == list(range(1, len(versions) + 1))


async def test_migrate_applies_once(empty_dsn: str) -> None:
    async with open_database(empty_dsn, min_size=1, max_size=2) as db:
        assert not await is_migrated(db)
        applied = await migrate(db)
        assert applied == [m.version for m in bundled_migrations()]
        assert await is_migrated(db)
        assert await migrate(db) == []
        # A newer version migrated while this one still runs (a rolling upgrade): still ready.
        await db.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, 'from a newer version')",
                         bundled_migrations()[-1].version + 1)
        assert await is_migrated(db)


async def test_concurrent_migrations_serialise_on_the_advisory_lock(empty_dsn: str) -> None:
    results: list[list[int]] = []
    async with open_database(empty_dsn, min_size=2, max_size=4) as db:
        async def one() -> None:
            results.append(await migrate(db))

        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(one)
    assert sorted(results, key=len) == [[], [], [m.version for m in bundled_migrations()]]
