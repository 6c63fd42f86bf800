"""Keys by digest, cached in the process and forgotten on every change, from any process.

A per-request lookup would cost a database round trip on every call. Instead the
directory keeps what it found, and clears itself when
- this process changes a key or a property (`invalidate`, right after the commit), or
- any process commits such a change: triggers NOTIFY `connectapi_auth`, which we LISTEN to.
While the LISTEN connection is down nothing is served from the cache, so a change made
elsewhere can never be missed for longer than a notification takes to arrive.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import asyncpg
import trio
import trio_asyncio

from .api_keys import find_by_digest
from .database import CLIENT_GONE_AFTER, Database
from .records import KeyWithProperty

log = logging.getLogger("connectapi.storage")
CHANNEL = "connectapi_auth"
# A cap on memory, not a policy: past it the cache starts over.
MAX_CACHED = 10_000
CONNECT_TIMEOUT = 5.0


class KeyDirectory:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._dsn = db.dsn
        self._cache: dict[bytes, KeyWithProperty] = {}
        self._generation = 0
        self._listening = False
        self._touched: dict[int, datetime] = {}

    @property
    def generation(self) -> int:
        """Moves on every invalidation; tests wait on it."""
        return self._generation

    @property
    def listening(self) -> bool:
        return self._listening

    async def find(self, digest: bytes) -> KeyWithProperty | None:
        cached = self._cache.get(digest) if self._listening else None
        if cached is not None:
            return cached
        generation = self._generation
        found = await find_by_digest(self._db, digest)
        # A change that landed while we read may not be in `found`: keep it only if none did.
        if found is not None and self._listening and generation == self._generation:
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
            self._cache[digest] = found
        return found

    def cached(self, digest: bytes) -> KeyWithProperty | None:
        """The key if this process holds it and the cache is being kept honest; no lookup."""
        return self._cache.get(digest) if self._listening else None

    def invalidate(self) -> None:
        self._generation += 1
        self._cache.clear()

    def due_for_touch(self, key_id: int, last_used_at: datetime | None, now: datetime, every: timedelta) -> bool:
        """Whether to record use now: at most once per `every` per key, whatever the cache holds."""
        last = self._touched.get(key_id, last_used_at)
        if last is not None and now - last < every:
            return False
        if len(self._touched) >= MAX_CACHED:
            self._touched.clear()
        self._touched[key_id] = now
        return True

    async def listen_until_lost(self) -> None:
        """LISTEN for changes, serving keys from the cache meanwhile; returns when the
        connection is lost or cannot be made (the caller tries again)."""
        lost = trio.Event()
        conn: asyncpg.Connection | None = None
        try:
            # The pool's TCP settings too: a host cut off leaves no listener on the server.
            conn = await trio_asyncio.aio_as_trio(asyncpg.connect)(self._dsn, timeout=CONNECT_TIMEOUT,
                                                                   server_settings=dict(CLIENT_GONE_AFTER))
            conn.add_termination_listener(lambda _conn: lost.set())
            await trio_asyncio.aio_as_trio(conn.add_listener)(CHANNEL, self._on_notify)
            # Anything cached before we listened may already be stale.
            self.invalidate()
            self._listening = True
            await lost.wait()
            log.warning("lost the %s listener; serving keys uncached until it is back", CHANNEL)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            log.warning("cannot listen on %s (%s); serving keys uncached", CHANNEL, exc)
        finally:
            self._listening = False
            self.invalidate()
            if conn is not None and not conn.is_closed():
                with trio.CancelScope(shield=True), trio.move_on_after(2):
                    await trio_asyncio.aio_as_trio(conn.close)()

    def _on_notify(self, _conn: object, _pid: int, _channel: str, _payload: str) -> None:
        self.invalidate()
