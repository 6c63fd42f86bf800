"""Migrations against a real, empty database: in order, once, and safe to race."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio_asyncio

from connectapi.storage.database import open_database
from connectapi.storage.migrations import bundled_migrations, is_migrated, migrate
from tests.conftest import scratch_database

ROOT = Path(__file__).parents[2]


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


async def test_each_function_of_the_schema_is_one_in_use(empty_dsn: str) -> None:
    """0009's connectapi_lock_for_booking outlived its last caller until 0025 dropped it:
    every function left is one the code calls (or a trigger's)."""
    async with open_database(empty_dsn, min_size=1, max_size=2) as db:
        await migrate(db)
        names = {r["proname"] for r in await db.fetch(
            """SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
               WHERE n.nspname = 'public' AND NOT EXISTS (SELECT FROM pg_trigger t WHERE t.tgfoid = p.oid)""")}
    called = "\n".join(path.read_text() for path in (ROOT / "connectapi").rglob("*.py"))
    assert names, "the schema has functions"
    assert [name for name in sorted(names) if not re.search(rf"\b{name}\b", called)] == []
