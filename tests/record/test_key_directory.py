"""The key cache forgets what any process changes, and caches nothing while it cannot hear."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import asyncpg
import trio
import trio_asyncio

from connectapi.domain import api_keys as keyfmt
from connectapi.domain.admin_models import PropertyIn
from connectapi.storage import api_keys, properties
from connectapi.storage.database import Database
from connectapi.storage.key_directory import KeyDirectory

from ..listening import listening


async def a_key(db: Database) -> bytes:
    body = PropertyIn.model_validate({"name": "P", "timezone": "UTC", "currency": "EUR",
                                      "products": {"channelManager": True, "pms": False}})
    prop, _ = await properties.create_property(db, body, date(2026, 11, 22))
    secret = keyfmt.new_key()
    await api_keys.create_key(db, prop.id, "k", keyfmt.digest(secret), "p", ["ari:read"], [])
    return keyfmt.digest(secret)


async def elsewhere(dsn: str, sql: str) -> None:
    """A statement from another connection, as another process would send it."""
    async def work() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    await trio_asyncio.aio_as_trio(work)()


async def wait_for(condition: object, seconds: float = 5.0) -> None:
    with trio.fail_after(seconds):
        while not condition():  # type: ignore[operator]
            await trio.sleep(0.01)


async def test_changes_from_another_process_clear_the_cache(db: Database) -> None:
    digest = await a_key(db)
    directory = KeyDirectory(db)
    async with listening(directory):
        first = await directory.find(digest)
        assert first is not None and first.key.revoked_at is None
        assert await directory.find(digest) is first  # served from the cache

        before = directory.generation
        await elsewhere(db.dsn, "UPDATE api_keys SET last_used_at = now()")
        await elsewhere(db.dsn, "UPDATE api_keys SET label = label")  # not an auth change either
        await elsewhere(db.dsn, "UPDATE api_keys SET scopes = scopes")  # one the trigger does see
        await wait_for(lambda: directory.generation > before)
        # only the third statement notified
        assert directory.generation == before + 1

        await elsewhere(db.dsn, "UPDATE api_keys SET revoked_at = now()")
        await wait_for(lambda: directory.generation > before + 1)
        again = await directory.find(digest)
        assert again is not None and again.key.revoked_at is not None

        generation = directory.generation
        await elsewhere(db.dsn, "UPDATE properties SET status = 'demo'")
        await wait_for(lambda: directory.generation > generation)
        assert (await directory.find(digest)).property.status == "demo"  # type: ignore[union-attr]


async def test_nothing_is_cached_while_the_listener_is_down(db: Database) -> None:
    digest = await a_key(db)
    directory = KeyDirectory(db)
    async with listening(directory):
        assert directory.listening
        await directory.find(digest)
        await elsewhere(db.dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()")
        await wait_for(lambda: not directory.listening)
        first = await directory.find(digest)
        assert await directory.find(digest) is not first  # read from the record each time
        await wait_for(lambda: directory.listening)  # and back after the retry
        cached = await directory.find(digest)
        assert await directory.find(digest) is cached


async def test_touch_at_most_once_per_interval(db: Database) -> None:
    directory = KeyDirectory(db)
    now = datetime(2026, 11, 22, 10, tzinfo=UTC)
    every = timedelta(seconds=60)
    assert directory.due_for_touch(1, None, now, every)
    assert not directory.due_for_touch(1, None, now + timedelta(seconds=59), every)
    assert directory.due_for_touch(1, None, now + timedelta(seconds=60), every)
    assert not directory.due_for_touch(2, now, now + timedelta(seconds=10), every)
