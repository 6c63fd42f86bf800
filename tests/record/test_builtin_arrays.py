"""A new connection is handed the built-in array types' codecs: it asks the server nothing."""

from __future__ import annotations

from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest

from connectapi.storage import builtin_arrays
from connectapi.storage.builtin_arrays import ARRAY_OIDS
from connectapi.storage.database import Tx, open_database

# asyncpg's type question, as the server keeps it among the connection's prepared statements
# (the pattern is built so as not to match this statement itself).
ASKED = "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%typeinfo' || '_tree%'"

VALUES: dict[str, list[Any]] = {
    "boolean[]": [True, False, None],
    "smallint[]": [1, -32768, None],
    "integer[]": [7, 2_147_483_647],
    "bigint[]": [9_007_199_254_740_993, -1],
    "double precision[]": [0.1, -2.5e300],
    "date[]": [date(2026, 12, 31), date(2027, 1, 1)],
    "timestamp with time zone[]": [datetime(2026, 11, 30, 4, 5, 6, tzinfo=timezone.utc)],
    "numeric[]": [Decimal("123.45"), Decimal("-0.01")],
    "uuid[]": [UUID("12345678-1234-5678-1234-567812345678")],
}


@pytest.mark.parametrize("type_name", sorted(ARRAY_OIDS))
async def test_a_new_connection_sends_and_reads_each_array_type_without_asking_the_server(
        fresh_dsn: str, type_name: str) -> None:
    # Whatever ran before in this process, one connection has been made and has asked.
    async with open_database(fresh_dsn, min_size=1, max_size=1, command_timeout=None) as first:
        await first.fetchval("SELECT 1")

    async def work(tx: Tx) -> tuple[Any, Any, int]:
        echoed = await tx.fetchval(f"SELECT $1::{type_name}", VALUES[type_name])
        typed = await tx.fetchval(f"SELECT ARRAY[]::{type_name}")
        return echoed, typed, await tx.fetchval(ASKED)

    async with open_database(fresh_dsn, min_size=1, max_size=1, command_timeout=None) as later:
        echoed, typed, asked = await later.transaction(work)
    assert echoed == VALUES[type_name]
    assert typed == []
    assert asked == 0


async def test_the_oids_are_the_servers_own(fresh_dsn: str) -> None:
    """The table's oids name those types on the server (pg_type.dat fixes them)."""
    async with open_database(fresh_dsn, min_size=1, max_size=1, command_timeout=None) as db:
        rows = await db.fetch("SELECT oid::int AS oid, format_type(oid, NULL) AS name FROM pg_type "
                              "WHERE oid = ANY($1::oid[])", list(ARRAY_OIDS.values()))
    assert {row["name"]: row["oid"] for row in rows} == ARRAY_OIDS


async def test_a_type_not_in_the_table_is_still_asked_for_and_read(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=1, command_timeout=None) as db:
        async def work(tx: Tx) -> tuple[Any, int]:
            return await tx.fetchval("SELECT ARRAY['1 day'::interval]"), await tx.fetchval(ASKED)

        value, asked = await db.transaction(work)
    assert [v.days for v in value] == [1]
    assert asked == 1


async def test_an_answer_of_another_shape_leaves_the_connection_to_ask(
        fresh_dsn: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """asyncpg's parts in another shape (an upgrade past the pin): the pool still opens, and
    its connections ask for the types themselves, as asyncpg does."""
    monkeypatch.setattr(builtin_arrays, "_told", [[{"not": "a type"}]])
    async with open_database(fresh_dsn, min_size=1, max_size=1, command_timeout=None) as db:
        async def work(tx: Tx) -> tuple[Any, int]:
            return await tx.fetchval("SELECT $1::bigint[]", [1, 2]), await tx.fetchval(ASKED)

        value, asked = await db.transaction(work)
    assert value == [1, 2] and asked == 1
    assert "built-in array codecs not handed to the connection: KeyError" in caplog.text
