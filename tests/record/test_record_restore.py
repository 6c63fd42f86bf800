"""The restore's role (storage/record_restore): the rows load as a role made for the one
transaction, without superuser rights, gone with it; a backup of a record restores with
our functions and our bookkeeping. Against the real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest
import trio_asyncio

from connectapi.storage.migrations import bundled_functions
from connectapi.storage.record_copy import dump
from connectapi.storage.record_restore import check_archive, drop_role, record_schema, restore, restricted_role
from tests.conftest import scratch_database


async def test_the_rows_load_as_a_role_that_can_add_rows_and_nothing_more(fresh_dsn: str) -> None:
    async def work() -> None:
        conn = await asyncpg.connect(fresh_dsn)
        try:
            async with conn.transaction():
                role = await restricted_role(conn)
                assert role is not None
                who = await conn.fetchrow(
                    "SELECT current_user AS name, rolsuper FROM pg_roles WHERE rolname = current_user")
                assert (who["name"], who["rolsuper"]) == (role, False)
                await conn.execute("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                   "VALUES ('Casa', 'Europe/Lisbon', 'EUR', true, true)")
                await conn.execute("SELECT setval('public.properties_id_seq', 7, true)")
                for statement in ("COPY (SELECT 1) TO PROGRAM 'id'", "CREATE FUNCTION owned() RETURNS int "
                                  "LANGUAGE sql AS 'SELECT 1'", "DELETE FROM properties",
                                  "CREATE EXTENSION IF NOT EXISTS pg_stat_statements", "ALTER ROLE postgres NOSUPERUSER"):
                    with pytest.raises(asyncpg.InsufficientPrivilegeError):
                        async with conn.transaction():  # a savepoint: the refusal leaves the rest standing
                            await conn.execute(statement)
                await drop_role(conn, role)
                assert await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            assert await conn.fetchval("SELECT count(*) FROM pg_roles WHERE rolname = $1", role) == 0
            assert await conn.fetchval("SELECT name FROM properties") == "Casa"
        finally:
            await conn.close()

    await trio_asyncio.aio_as_trio(work)()


async def test_the_schema_is_read_from_the_catalog(fresh_dsn: str) -> None:
    async def work() -> None:
        conn = await asyncpg.connect(fresh_dsn)
        try:
            schema = await record_schema(conn)
        finally:
            await conn.close()
        assert {"id", "name", "timezone"} <= schema.tables["properties"]
        assert "properties_id_seq" in schema.sequences and "connectapi_notify_auth_change" in schema.functions
        assert "api_keys api_keys_property_id_fkey" in schema.on_tables
        assert "properties properties_auth_change" in schema.on_tables
        assert ("api_keys", "properties") in schema.references

    await trio_asyncio.aio_as_trio(work)()


async def test_a_backup_restores_with_the_functions_of_our_files(
        fresh_dsn: str, pg_template: str, tmp_path: Path) -> None:
    """The backup holds schema_functions with its rows: they are the migrations' own, built
    again by the restore's migrations (loaded, they would collide with those), as
    schema_migrations' are; a function's body in the backup is never taken."""
    async def prepare() -> None:
        conn = await asyncpg.connect(fresh_dsn)
        try:
            await conn.execute("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                               "VALUES ('Casa', 'Europe/Lisbon', 'EUR', true, true)")
            await conn.execute("UPDATE schema_functions SET sha256 = 'from the backup'")
            await conn.execute("CREATE OR REPLACE FUNCTION connectapi_prune_budgets(p_now double precision, "
                               "p_limit integer) RETURNS integer LANGUAGE plpgsql AS $$ BEGIN RETURN -1; END $$")
        finally:
            await conn.close()

    await trio_asyncio.aio_as_trio(prepare)()
    backup = tmp_path / "record.dump"
    dump(fresh_dsn, backup)
    archive = check_archive(backup)
    assert {e.tag for e in archive.entries if e.kind == "TABLE DATA"} >= {"schema_functions", "properties"}
    async with scratch_database(pg_template) as target:
        await restore(archive, target)

        async def read() -> tuple[object, ...]:
            conn = await asyncpg.connect(target)
            try:
                return (await conn.fetchval("SELECT name FROM properties"),
                        dict(await conn.fetch("SELECT name, sha256 FROM schema_functions")),
                        dict(await conn.fetch("SELECT proname, prosrc FROM pg_proc WHERE proname LIKE 'connectapi%'")))
            finally:
                await conn.close()

        name, applied, bodies = await trio_asyncio.aio_as_trio(read)()
    files = bundled_functions()
    assert name == "Casa"
    assert applied == {n: f.sha256 for n, f in files.items()}
    assert set(bodies) == set(files) and "RETURN -1" not in str(bodies["connectapi_prune_budgets"])
