"""A copy of the record in a file, and the record made ready to be put back from one
(`connectapi backup`, `connectapi restore`; the restore itself: record_restore.py):
pg_dump's custom format, written and read by PostgreSQL's own tools.

The dump is one snapshot (pg_dump reads every table in one repeatable-read transaction),
so a running service can be copied: every write batch in it has all its cells. The
budget counters (unlogged tables) are left out: they are a minute of counts, and a
restored service starts with empty windows. docs/decisions/0079-backups-with-pg-dump.md.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

import asyncpg
import trio_asyncio

from ..domain.record_archive import MARK_TABLE
from .pg_tools import libpq_target, pg_tool

BACKUP_MODE = 0o600  # the record holds key digests, webhook secrets, guests' details
# pg_dump waits this long for a table's lock (a migration running) before it gives up.
LOCK_WAIT = "60s"
# Seconds a connect to the record may take, unless the operator set PGCONNECT_TIMEOUT:
# libpq waits for ever on a server that accepts and never answers (a stopped postmaster),
# asyncpg a minute; an operator at a prompt should hear within seconds that it is stuck.
CONNECT_WAIT = 10


class CopyError(Exception):
    """The copy or the restore could not be made; the message says why, for an operator."""


class NotAnArchive(CopyError):
    """The file is not an archive pg_dump wrote in its custom format, or not of a record."""


class RecordInUse(CopyError):
    """Other sessions are connected to the record: a service runs on it."""


class RecordNotEmpty(CopyError):
    """The record to restore into holds tables already."""


def run_tool(tool: str, args: list[str], dsn: str | None = None, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ)
    if dsn is not None:
        target, extra = libpq_target(dsn)
        env.update(extra)
        env.setdefault("PGCONNECT_TIMEOUT", str(CONNECT_WAIT))
        args = [*args, "--dbname", target]
    try:
        completed: subprocess.CompletedProcess[bytes] = subprocess.run(
            [str(pg_tool(tool)), *args], env=env, stderr=subprocess.PIPE, check=False, **kwargs)  # type: ignore[call-overload]
        return completed
    except OSError as exc:
        raise CopyError(f"cannot run {tool} ({pg_tool(tool)}): {exc.strerror}") from None


def tool_said(completed: subprocess.CompletedProcess[bytes]) -> str:
    """The tool's complaint on one line (libpq adds its hints on lines of their own)."""
    lines = completed.stderr.decode("utf-8", "replace").splitlines()
    return " ".join(line.strip() for line in lines if line.strip())


def connect_wait() -> float:
    """The operator's PGCONNECT_TIMEOUT (whole seconds, as libpq reads it), else ours: for
    asyncpg, 0 is not "for ever" as it is for libpq."""
    value = os.environ.get("PGCONNECT_TIMEOUT", "")
    return float(value) if value.isdigit() and int(value) > 0 else CONNECT_WAIT


async def connect(dsn: str) -> asyncpg.Connection:
    """asyncpg's connection, given up on as libpq's tools give up (it reads no PGCONNECT_TIMEOUT)."""
    return await asyncpg.connect(dsn, timeout=connect_wait())


def dump(dsn: str, path: Path) -> int:
    """The record at `dsn` into `path`, whole or not at all: written beside it under another
    name (mode 0600), synced, then renamed over it. Answers its size in bytes."""
    path = path.absolute()
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, BACKUP_MODE)
    except OSError as exc:
        raise CopyError(f"cannot write in {path.parent}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            completed = run_tool("pg_dump", ["--format=custom", "--no-unlogged-table-data",
                                         f"--lock-wait-timeout={LOCK_WAIT}"], dsn, stdout=out)
            if completed.returncode != 0:
                raise CopyError(f"pg_dump failed: {tool_said(completed)}")
            out.flush()
            os.fsync(out.fileno())
            size = os.fstat(out.fileno()).st_size
        os.replace(temporary, path)
    except BaseException as exc:
        temporary.unlink(missing_ok=True)
        if isinstance(exc, OSError):  # FILE a directory, the disk full: said, not a traceback
            raise CopyError(f"cannot write {path}: {exc.strerror}") from None
        raise
    try:
        directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError as exc:
        raise CopyError(f"wrote {path}, but could not sync its directory: {exc.strerror}") from None
    return size


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def make_room(dsn: str, maintenance_dsn: str, force: bool) -> None:
    """The database at `dsn` ready to be restored into: made if missing; refused while
    other sessions use it (a service runs on it); refused when it holds tables, unless
    `force`, which drops it and makes it again (through `maintenance_dsn`, another database
    on the same server)."""

    async def work() -> None:
        try:
            conn = await connect(dsn)
        except asyncpg.InvalidCatalogNameError:
            name = _database_name(dsn)
            await _on(maintenance_dsn, f"CREATE DATABASE {_quoted(name)}")
            return
        try:
            name = await conn.fetchval("SELECT current_database()")
            others = await conn.fetch(
                """SELECT DISTINCT coalesce(nullif(application_name, ''), 'a client') AS who,
                          coalesce(host(client_addr), 'local') AS address
                   FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()""")
            if others:
                who = ", ".join(f"{r['who']} ({r['address']})" for r in others)
                raise RecordInUse(f"the record is in use ({len(others)} other session(s): {who}): stop the "
                                  "service before a restore")
            tables = await conn.fetchval(
                """SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE c.relkind IN ('r', 'p', 'u') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                     AND n.nspname NOT LIKE 'pg\\_%'""")
            latest = None
            if await conn.fetchval(f"SELECT to_regclass('{MARK_TABLE}') IS NOT NULL"):
                latest = await conn.fetchval(f"SELECT max(version) FROM {MARK_TABLE}")
        finally:
            await conn.close()
        if not tables:
            return
        if not force:
            layout = f", migrated to {latest:04d}" if latest is not None else ""
            raise RecordNotEmpty(f"the record is not empty ({tables} tables{layout}): restore into a new data "
                                 "directory, or give --force to drop this record and replace it")
        await _on(maintenance_dsn, f"DROP DATABASE {_quoted(name)}", f"CREATE DATABASE {_quoted(name)}")

    await said_as_copy_error(work, "the record could not be prepared for the restore")


def _database_name(dsn: str) -> str:
    """The database a URL names (it does not exist yet, so the server cannot say)."""
    parts = urlsplit(dsn)
    name = dict(parse_qsl(parts.query)).get("dbname") or unquote(parts.path.lstrip("/"))
    if not name:
        raise CopyError("the record's database does not exist, and its URL names none to make")
    return name


async def _on(dsn: str, *statements: str) -> None:
    conn = await connect(dsn)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


_RELEASE = (
    "UPDATE leases SET holder = NULL, until = NULL, again = false",
    "DELETE FROM idempotency_keys WHERE state = 'in_flight'",
)


async def release_held_work(dsn: str) -> None:
    """What the backed-up service's processes held when the copy was taken is theirs no
    more: their push leases, job leases and webhook sending leases are given back, and
    idempotency keys of requests then in flight (their work is not in the copy) are
    forgotten, so the restored service takes everything up at once, not when they run out."""

    async def work() -> None:
        conn = await connect(dsn)
        try:
            async with conn.transaction():
                for statement in _RELEASE:
                    try:
                        async with conn.transaction():  # a savepoint: an older layout lacks some
                            await conn.execute(statement)
                    except (asyncpg.UndefinedTableError, asyncpg.UndefinedColumnError):
                        pass  # not in the copy's layout: the migrations make it, empty
        finally:
            await conn.close()

    await said_as_copy_error(work, "restored, but the leases of the copied service were not given back (they "
                                    "run out within a minute)")


async def said_as_copy_error(work: Callable[[], Awaitable[None]], what: str) -> None:
    """`work` on asyncio; the server's refusal or an unreachable server said as a CopyError."""
    try:
        await trio_asyncio.aio_as_trio(work)()
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        # a connect given up on says nothing of itself
        said = str(exc) or f"no answer from the server within {connect_wait():g} s"
        raise CopyError(f"{what}: {said}") from None
