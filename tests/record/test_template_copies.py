"""The tests' copies of the migrated template (tests/conftest.py): a copy a test is done
with is emptied for the next test only if the test changed nothing but rows."""

from __future__ import annotations

import asyncpg
import trio_asyncio

from tests.conftest import template_copy


async def _run(dsn: str, *statements: str) -> list[object]:
    async def work() -> list[object]:
        conn = await asyncpg.connect(dsn)
        try:
            return [await conn.fetchval(statement) for statement in statements]
        finally:
            await conn.close()

    found: list[object] = await trio_asyncio.aio_as_trio(work)()
    return found


async def test_a_copy_comes_back_empty_and_one_whose_schema_changed_is_dropped(pg_template: str) -> None:
    async with trio_asyncio.open_loop():
        async with template_copy(pg_template) as first:
            start = (await _run(first, "SELECT nextval('booking_ids')"))[0]
            await _run(first, "INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                              "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true)",
                       "INSERT INTO budget_windows (subject, window_seconds, last_at) VALUES ('ip:x', 60, 0)")
        async with template_copy(pg_template) as second:
            assert second == first  # kept for the next test, and emptied
            assert await _run(second, "SELECT count(*) FROM properties", "SELECT count(*) FROM budget_windows",
                              "SELECT nextval('booking_ids')", "SELECT nextval('properties_id_seq')") == [0, 0, start, 1]
            assert await _run(second, "SELECT count(*) FROM schema_migrations") != [0]  # the template's own rows stay
            await _run(second, "CREATE TABLE left_behind (id int)")
        async with template_copy(pg_template) as third:
            assert third != second  # its schema changed: dropped, not kept
            assert await _run(third, "SELECT to_regclass('left_behind') IS NULL") == [True]
            await _run(third, "CREATE OR REPLACE FUNCTION connectapi_prune_budgets(p_now double precision, "
                              "p_limit integer) RETURNS integer LANGUAGE sql AS 'SELECT 0'")
        async with template_copy(pg_template) as fourth:
            assert fourth != third  # a function's body changed: dropped too
