"""The restore's role (storage/record_restore): the rows load as a role made for the one
transaction, without superuser rights, gone with it. Against the real PostgreSQL."""

from __future__ import annotations

import asyncpg
import pytest
import trio_asyncio

from connectapi.storage.record_restore import drop_role, record_schema, restricted_role


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
