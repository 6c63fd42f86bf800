"""A held connection (the budget statement's) whose server went away while it sat idle is
replaced before the next statement, not handed that statement to fail (after a failover:
one 503 per held connection, whenever it was next used)."""

from __future__ import annotations

import trio

from connectapi.storage.database import _closed, open_database


async def test_a_held_connection_gone_while_idle_is_replaced(fresh_dsn: str, pg_server: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db, \
            open_database(pg_server, min_size=1, max_size=1) as admin:
        held = db.held()
        first = await held.run(lambda conn: conn.fetchval("SELECT pg_backend_pid()"))
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", first)
        with trio.fail_after(5):  # the driver hears of it: the connection died while idle
            while held._conn is not None and not _closed(held._conn):
                await trio.sleep(0.01)
        second = await held.run(lambda conn: conn.fetchval("SELECT pg_backend_pid()"))
        assert second != first
