"""The pool, and the one bridge from Trio to asyncpg.

Storage modules write their queries as asyncio coroutines taking a connection; callers
run them through `Database.run` / `Database.transaction`, which cross into asyncio with
trio-asyncio. Storage errors are translated here into ours, once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import asyncpg
import trio_asyncio

T = TypeVar("T")
Work = Callable[[asyncpg.Connection], Awaitable[T]]


class StorageUnavailable(Exception):
    """The record cannot be reached; the request may be retried later."""


class Database:
    def __init__(self, pool: asyncpg.Pool, dsn: str) -> None:
        self._pool = pool
        self.dsn = dsn  # for the few things that need a connection of their own (LISTEN)

    async def run(self, work: Work[T]) -> T:
        result: T = await trio_asyncio.aio_as_trio(self._run_aio)(work, False)
        return result

    async def transaction(self, work: Work[T]) -> T:
        result: T = await trio_asyncio.aio_as_trio(self._run_aio)(work, True)
        return result

    async def _run_aio(self, work: Work[T], in_transaction: bool) -> T:
        try:
            async with self._pool.acquire() as conn:
                if in_transaction:
                    async with conn.transaction():
                        return await work(conn)
                return await work(conn)
        except (OSError, asyncpg.exceptions.CannotConnectNowError,
                asyncpg.exceptions.ConnectionDoesNotExistError,
                asyncpg.exceptions.InterfaceError) as exc:
            # OSError covers a query past its command timeout too (TimeoutError is one).
            raise StorageUnavailable(str(exc) or type(exc).__name__) from exc

    # Short forms for single statements.
    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return await self.run(lambda c: c.fetch(sql, *args))

    async def fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        return await self.run(lambda c: c.fetchrow(sql, *args))

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self.run(lambda c: c.fetchval(sql, *args))

    async def execute(self, sql: str, *args: Any) -> str:
        return await self.run(lambda c: c.execute(sql, *args))


async def _release_without_reset_query(conn: asyncpg.Connection) -> None:
    """Release hook that skips asyncpg's reset query (RESET ALL, UNLISTEN *, advisory unlocks).

    asyncpg still rolls back an open transaction on release. We never set session state
    on pooled connections (no SET, no LISTEN, advisory locks are transaction-scoped), so
    the reset query would only cost a round trip on every release: most of the price of
    a short query.
    """


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=_json_dumps, decoder=_json_loads, schema="pg_catalog")


def _json_dumps(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def _json_loads(text: str) -> Any:
    import json

    return json.loads(text)


@asynccontextmanager
async def open_database(dsn: str, *, min_size: int = 2, max_size: int = 10,
                        command_timeout: float | None = 30.0) -> AsyncIterator[Database]:
    """A pool for the life of the block. Needs a running trio-asyncio loop.

    asyncpg times queries on the event loop's clock, which under trio-asyncio is Trio's:
    tests that jump a MockClock pass `command_timeout=None`.

    No idle-connection expiry (`max_inactive_connection_lifetime=0`): asyncpg arms a
    five-minute timer on every release and cancels it on the next acquire, and under
    trio-asyncio a cancelled timer stays queued until it would have fired, holding a copy
    of the releasing request's context (its headers, scope, session). Under steady load
    that held some 50 MiB (the soak bench: RSS rose for five minutes, then levelled).
    The pool never grows past `max_size` anyway.
    """
    pool = await trio_asyncio.aio_as_trio(asyncpg.create_pool)(
        dsn, min_size=min_size, max_size=max_size, init=_init_connection, command_timeout=command_timeout,
        reset=_release_without_reset_query, max_inactive_connection_lifetime=0,
    )
    try:
        yield Database(pool, dsn)
    finally:
        await trio_asyncio.aio_as_trio(pool.close)()
