"""The pool, and the one bridge from Trio to asyncpg.

Storage modules write their queries as asyncio coroutines taking a connection; callers
run them through `Database.run` / `Database.transaction`, which cross into asyncio with
trio-asyncio. Storage errors are translated here into ours, once.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeAlias, TypeVar

import asyncpg
import trio
import trio_asyncio

from ..domain.database_hosts import hosts_of
from . import builtin_arrays
from .primary import PrimaryFinder

T = TypeVar("T")
log = logging.getLogger("connectapi.storage")
# A request never waits longer than this for a connection (or for a connect to a server
# that does not answer), nor a statement longer than the command timeout: the record away
# is a 503 within seconds, never a hang.
ACQUIRE_TIMEOUT = 5.0
CONNECT_TIMEOUT = 3.0
# Kept on Trio's clock around each call to the record (a statement, or a work of several),
# not as asyncpg's per-statement timer: under trio-asyncio a timer cancelled stays queued
# until it would have fired, and each one cost two more turns of the loop and a copy of the
# caller's context held for its 10 s: a median of 735 µs of CPU a short statement with it,
# 577 µs with the bound kept here (decision 0143).
COMMAND_TIMEOUT = 10.0
# A transaction of ours never waits between its statements on anything but this process.
# One whose process was cut off from the server mid-transaction (a partition: no reset, so
# the server sees nothing end) would keep its row locks, and every other process's writes
# of that property would wait on them, for as long as the cut lasts: the server ends such
# a session after this long (issue 31's partition test found it).
IDLE_IN_TRANSACTION_TIMEOUT = "5s"  # decision 0119
# Nor is every such session idle in a transaction: asyncpg prepares a statement new to its
# connection with Parse, Describe and Flush (no Sync), and until the Bind comes the server
# waits "active" (ClientRead), locks held, which the idle timeout does not cover. TCP tells
# it that the client is gone: probes after 2 s of silence, and the server's kernel closes a
# session whose data or probes stay unacknowledged for 5 s (decision 0120; PostgreSQL 12+).
# The settings are the session's own; over a Unix socket they are ignored.
CLIENT_GONE_AFTER = {
    "tcp_keepalives_idle": "2", "tcp_keepalives_interval": "1", "tcp_keepalives_count": "3",
    "tcp_user_timeout": "5000",  # milliseconds
}
CLOSE_TIMEOUT = 3.0
# A connection inside a transaction, as storage functions take it. Code outside storage
# only hands it from `Database.transaction` to storage functions, never calls it.
Tx: TypeAlias = asyncpg.Connection
Work = Callable[[Tx], Awaitable[T]]


def names_nothing(text: str) -> bool:
    """Whether a name from outside (an id, a reference) can name nothing in the record: no
    text the record holds has NUL (PostgreSQL's text cannot), and a statement asking for it
    would be refused. A look-up answers "not found" for it without asking."""
    return "\x00" in text


class StorageError(Exception):
    """Base of what the record can answer besides a result; the driver's error is the cause."""


class StorageUnavailable(StorageError):
    """The record cannot be reached; the request may be retried later."""


class RecordRefused(StorageError):
    """The record refused a statement: the transaction was rolled back whole.

    `transient` when retrying the same work may succeed (a serialization failure, a
    deadlock, a lock or statement timeout); otherwise it is a bug or a broken invariant.
    """

    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate

    @property
    def transient(self) -> bool:
        return _transient(self.sqlstate)


class RecordBusy(RecordRefused):
    """A refusal for now (`transient`): the same work, tried again, may well succeed."""


UNIQUE_VIOLATION = "23505"  # a RecordRefused's sqlstate when a unique index refused the row
QUERY_CANCELED = "57014"  # a statement cancelled (a timeout): transient
LOCK_NOT_AVAILABLE = "55P03"  # a lock not had within its wait: transient


def _transient(sqlstate: str | None) -> bool:
    state = sqlstate or ""
    return state.startswith("40") or state in (LOCK_NOT_AVAILABLE, QUERY_CANCELED)


def _refused(message: str, sqlstate: str | None) -> RecordRefused:
    return (RecordBusy if _transient(sqlstate) else RecordRefused)(message, sqlstate)


# What a background round waits out (engine.RoundsActor's `waits_out`) rather than
# crashing: the record unreachable, or refusing for now (a deadlock; a lock or statement
# timeout behind a table an operator or a long migration holds). As crashes they counted
# toward the supervisor's budget, and a table held for a minute left the actor down.
# A refusal for now is waited out only briefly (`waits_out_briefly`): one that never
# clears is a bug in the round (two rounds deadlocking every time, say), and a crash.
RECORD_AWAY: tuple[type[StorageError], ...] = (StorageUnavailable, RecordBusy)
RECORD_BUSY: tuple[type[StorageError], ...] = (RecordBusy,)


# SQLSTATEs that mean the server, not the statement: connection exceptions, insufficient
# resources (disk full, out of memory, too many connections), the server shutting down,
# starting or gone idle, a read-only server (a failover in progress).
_UNREACHABLE_STATES = ("08", "53", "57P01", "57P02", "57P03", "57P05", "25006")


def translated(exc: BaseException) -> StorageError | None:
    """Our error for a driver or socket failure (None for anything else)."""
    if isinstance(exc, asyncpg.PostgresError):
        state = getattr(exc, "sqlstate", None) or ""
        if state.startswith(_UNREACHABLE_STATES):
            return StorageUnavailable(f"{type(exc).__name__}: {exc}")
        return _refused(f"{type(exc).__name__}: {exc}", state or None)
    if isinstance(exc, asyncpg.exceptions._base.DataError):
        # A value the driver cannot send (an InterfaceError too): our bug, not the server away.
        return _refused(f"{type(exc).__name__}: {exc}", getattr(exc, "sqlstate", None))
    if isinstance(exc, asyncpg.exceptions._base.InternalClientError):
        # The driver lost track of its connection (a protocol error, a connection handed on
        # mid-error): that connection is dropped, and the work may be tried again.
        return StorageUnavailable(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, (OSError, asyncpg.InterfaceError)):
        # OSError covers a query past its command timeout too (TimeoutError is one).
        return StorageUnavailable(str(exc) or type(exc).__name__)
    return None


def _abandoned(exc: BaseException) -> bool:
    """Cancelled (the request went away, a deadline passed) or past the command timeout."""
    return isinstance(exc, (asyncio.CancelledError, TimeoutError))


def _to_drop(exc: BaseException) -> bool:
    """Whether the connection must be dropped, not rolled back or handed on: the work was
    abandoned, or the server or the network went away under it. A connection whose server
    sent a FATAL error is not closed yet when the error is raised (the close comes a moment
    later) and sits mid-error: a ROLLBACK on it, or the next request it was handed to, met
    "another operation is in progress" (a 500, seen with the record SIGKILLed under load)."""
    return _abandoned(exc) or (isinstance(exc, Exception) and isinstance(translated(exc), StorageUnavailable))


def _drop_if_gone(conn: asyncpg.Connection, exc: BaseException) -> None:
    """After `exc`: drop the connection instead of waiting on the server when the work was
    abandoned or the server went away (it rolls back what was open; the pool makes a new one)."""
    if _to_drop(exc) and not _closed(conn):
        conn.terminate()


def _closed(conn: asyncpg.Connection) -> bool:
    """Whether the connection is gone: a pooled one whose server closed it has already been
    detached by the pool, and then answers only with an InterfaceError."""
    try:
        return bool(conn.is_closed())
    except asyncpg.InterfaceError:
        return True


def _clean(conn: asyncpg.Connection) -> bool:
    """Whether the next statement may have the connection as it is: open, no transaction
    open (nor one of asyncpg's own begun), and no query of its still being cancelled (a work
    that caught its own statement's `timeout=`: the pool's release waits for that cancel, in
    the work's own time; kept, the next statement would wait for it in its). asyncpg's
    private state, as its own release reads it; anything unknown there is not clean."""
    try:
        return not (_closed(conn) or conn.is_in_transaction() or conn._top_xact is not None
                    or conn._protocol._is_cancelling())
    except AttributeError:
        return False


def _ours(exc: Exception) -> Exception:
    return translated(exc) or exc


# A connection of a statement that went well is kept beside the pool, not given back to it,
# and the next statement takes it from there: asyncpg's acquire and release cost more CPU
# than a short statement (its release shields itself in a task of its own; under
# trio-asyncio every step of it is a trip through trio): a median of 614 µs of CPU a short
# statement through the pool, 306 µs on a connection kept (decision 0142). One in this many
# is given back to the pool all the same, which then applies its own rules to it (asyncpg
# recycles a connection after 50,000 queries).
THROUGH_THE_POOL_EVERY = 1000


class Database:
    def __init__(self, pool: asyncpg.Pool, dsn: str, acquire_timeout: float | None = ACQUIRE_TIMEOUT,
                 command_timeout: float | None = COMMAND_TIMEOUT) -> None:
        self._pool = pool
        self.dsn = dsn  # for the few things that need a connection of their own (LISTEN)
        self._acquire_timeout = acquire_timeout
        self._command_timeout = math.inf if command_timeout is None else command_timeout
        self._held: list[HeldConnection] = []
        # Connections of the pool, taken and not in use, for the next statement (see
        # THROUGH_THE_POOL_EVERY). The pool counts them as lent, so its size bounds them too.
        self._warm: list[asyncpg.Connection] = []
        self._waiting_for_pool = 0  # a connection given back goes to these, not to `_warm`
        self._given_back = 0
        self._closing = False

    @property
    def command_timeout(self) -> float:
        """What a call to the record may take, unless told otherwise (`math.inf`: no bound)."""
        return self._command_timeout

    async def run(self, work: Work[T], within: float | None = None) -> T:
        """`work` on a connection of the pool, within the command timeout (or `within`
        seconds; `math.inf`: its statements carry their own)."""
        return await self.bounded(self._run_aio, work, False, within=within)

    async def transaction(self, work: Work[T], within: float | None = None) -> T:
        """`work` in one transaction, committed when it returns; bounded as `run`."""
        return await self.bounded(self._run_aio, work, True, within=within)

    async def bounded(self, call: Callable[..., Awaitable[T]], *args: Any, within: float | None = None) -> T:
        """`call(*args, started)` run in asyncio, cut off past the command timeout (or
        `within`) counted from when it calls `started()`, once it has its connection (the
        wait for one has a bound of its own): its statement is cancelled, its connection
        dropped, and the record is away for the caller (StorageUnavailable), as a statement
        past asyncpg's own timeout was."""
        limit = self._command_timeout if within is None else within
        with trio.CancelScope() as bound:
            def started() -> None:
                # Called from asyncio, through trio-asyncio, on this thread and this run.
                bound.deadline = trio.current_time() + limit

            result: T = await trio_asyncio.aio_as_trio(call)(*args, started)
            return result
        assert bound.cancelled_caught
        raise StorageUnavailable(f"the record did not answer within {limit:g} s")

    def held(self) -> HeldConnection:
        """A connection of the pool kept for one caller, given back when the pool closes."""
        held = HeldConnection(self)
        self._held.append(held)
        return held

    async def _acquire(self) -> asyncpg.Connection:
        while self._warm:
            kept = self._warm.pop()  # the last given back: the likeliest to be in the server's caches
            if not _closed(kept):
                return kept
            await self._give_back(kept)  # its server went away meanwhile: the pool finishes with it
        self._waiting_for_pool += 1
        try:
            # Bounds the wait for a free connection and a connect (TimeoutError). Not the
            # pool's own `timeout=`: it wraps the wait in a task of its own (asyncio.wait_for),
            # which under trio-asyncio cost more than a short statement.
            async with asyncio.timeout(self._acquire_timeout):
                conn: asyncpg.Connection = await self._pool.acquire()
        except Exception as exc:
            raise _ours(exc) from exc
        finally:
            self._waiting_for_pool -= 1
        return conn

    async def _run_aio(self, work: Work[T], in_transaction: bool, started: Callable[[], None]) -> T:
        conn = await self._acquire()
        started()
        went_well = False
        try:
            if not in_transaction:
                result: T = await work(conn)
                went_well = True
                return result
            # By hand, not `async with conn.transaction()`: its exit would ROLLBACK first,
            # and a ROLLBACK after a cancelled statement waits for the server to acknowledge
            # the cancel (bounded only by the command timeout; never, with a hung server).
            transaction = conn.transaction()
            await transaction.start()
            try:
                result = await work(conn)
            except BaseException as exc:
                if not _to_drop(exc) and not _closed(conn):
                    await transaction.rollback()
                raise
            await transaction.commit()
            went_well = True
            return result
        except BaseException as exc:
            _drop_if_gone(conn, exc)
            if isinstance(exc, Exception) and translated(exc) is not None:
                raise _ours(exc) from exc
            raise
        finally:
            if went_well:
                try:
                    await self._keep_or_give_back(conn)
                except asyncio.CancelledError:
                    # Cut off (the bound, or the caller gone) while the connection went back:
                    # the work is done and committed, and its answer stands. asyncpg's release
                    # goes on, shielded.
                    if (task := asyncio.current_task()) is not None:
                        task.uncancel()
            else:
                await self._give_back(conn)

    async def _keep_or_give_back(self, conn: asyncpg.Connection) -> None:
        """After work that went well: kept for the next statement, unless a caller waits on
        the pool for one (it gets this one), it is its turn to pass through the pool, or it
        is not clean. The work is done with it: nothing may
        use a connection, or a statement or transaction of it, after its work returned (the
        pool's release would have made that fail; kept, it would run in another's work)."""
        self._given_back += 1
        if (self._waiting_for_pool or self._closing or self._given_back % THROUGH_THE_POOL_EVERY == 0
                or not _clean(conn)):
            await self._give_back(conn)
            return
        self._warm.append(conn)

    async def give_back_warm(self) -> None:
        """Every kept connection back to the pool, and none kept from now on: before the
        pool closes (it waits for the connections it lent)."""
        self._closing = True
        while self._warm:
            await self._give_back(self._warm.pop())

    async def _give_back(self, conn: asyncpg.Connection) -> None:
        """Return a connection to the pool; never fails the work that used it.

        asyncpg resets a connection on release (a ROLLBACK if the server still thinks a
        transaction is open) and, if that fails, terminates it and raises. Raised from a
        `finally`, that error replaced the work's own: a commit that succeeded answered as a
        fault, or the server's death (a 503) as an untranslated driver error (a 500, seen once
        in a hundred SIGKILLs of the record under load). The pool makes a new connection.
        """
        try:
            await self._pool.release(conn)
        except Exception as exc:
            if not isinstance(translated(exc), StorageUnavailable):
                # Not the server or the network (a bug in a reset hook, a connection released
                # twice): said loudly, with its traceback, though the work's answer stands.
                log.error("releasing a connection failed: %s", type(exc).__name__, exc_info=exc)
                return
            log.warning("a connection could not be reset on release and was dropped: %s: %s",
                        type(exc).__name__, exc)

    # Short forms for single statements.
    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return await self.run(lambda c: c.fetch(sql, *args))

    async def fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        return await self.run(lambda c: c.fetchrow(sql, *args))

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self.run(lambda c: c.fetchval(sql, *args))

    async def execute(self, sql: str, *args: Any) -> str:
        return await self.run(lambda c: c.execute(sql, *args))


class HeldConnection:
    """A pooled connection kept between statements, for a caller that sends one statement
    at a time on every request (the budget counter).

    Taking a connection from the pool and giving it back costs about as much CPU as a
    short statement (asyncpg's release shields itself in a task of its own: measured
    70 µs a pair, the statement 120–170 µs); held, it is taken once. On any failure it is
    given back (dropped when the server or the work went away) and the next statement
    takes another, so an outage and a recovery behave as with `Database.run`.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._conn: asyncpg.Connection | None = None
        self._busy = False

    async def run(self, work: Work[T]) -> T:
        """One statement's `work` (never a transaction), as `Database.run` would run it."""
        if self._busy:
            raise RuntimeError("a held connection runs one statement at a time")
        self._busy = True
        try:
            result: T = await self._db.bounded(self._run_aio, work)
        finally:
            self._busy = False
        return result

    async def _run_aio(self, work: Work[T], started: Callable[[], None]) -> T:
        if self._conn is not None and _closed(self._conn):
            # Its server went away while it sat here (a failover): the pool has detached it
            # already; a new one, rather than a statement sent to fail.
            self._conn = None
        if self._conn is None:
            self._conn = await self._db._acquire()
        started()
        conn = self._conn
        try:
            return await work(conn)
        except BaseException as exc:
            self._conn = None
            _drop_if_gone(conn, exc)
            await self._db._give_back(conn)
            if isinstance(exc, Exception) and translated(exc) is not None:
                raise _ours(exc) from exc
            raise

    async def give_back(self) -> None:
        """Back to the pool (the pool waits for it when it closes)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await trio_asyncio.aio_as_trio(self._db._give_back)(conn)


async def _release_without_reset_query(conn: asyncpg.Connection) -> None:
    """Release hook that skips asyncpg's reset query (RESET ALL, UNLISTEN *, advisory unlocks).

    asyncpg still rolls back an open transaction on release. We never set session state
    on pooled connections (no SET, no LISTEN, advisory locks are transaction-scoped), so
    the reset query would only cost a round trip on every release: most of the price of
    a short query.
    """


# A statement whose client has gone (a transaction of ours abandoned past its deadline: the
# connection is dropped, not rolled back) would otherwise run on to its end, its locks held,
# since the server reads the socket only between statements: an OTA revision's apply cut off
# after its 10 s kept its property's lock for as long as its statement ran. The server
# checks for a gone client this often while a statement runs (PostgreSQL 14+; decision 0126).
CLIENT_CHECK_INTERVAL = "1s"


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=_json_dumps, decoder=_json_loads, schema="pg_catalog")
    await builtin_arrays.teach(conn)
    if conn.get_server_version() >= (14,):
        # A setting of the session for its whole life, as the others; set here rather than
        # as a startup parameter, which a server before 14 refuses.
        try:
            await conn.execute(f"SET client_connection_check_interval = '{CLIENT_CHECK_INTERVAL}'")
        except asyncpg.PostgresError as exc:
            # A platform whose server cannot tell a gone client (it refuses any other value
            # than 0): the connection serves all the same, as it did before the setting.
            log.warning("the record cannot check for gone clients on this platform: %s", exc)


def _json_dumps(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def _json_loads(text: str) -> Any:
    import json

    return json.loads(text)


def connect_failures_in_a_line(record: logging.LogRecord) -> bool:
    """asyncpg's pool logs each try to reconnect its floor with a whole traceback (every 1
    to 60 s while the record is away: pages of them in an outage); for a connection that
    failed its reason on the line is enough, the service's own log saying the record is
    away and when it is back. Anything else (a bug in a connection's set-up) keeps its
    traceback."""
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, (OSError, asyncpg.PostgresConnectionError, asyncpg.CannotConnectNowError)):
        record.msg = f"{record.getMessage()}: {type(exc).__name__}: {str(exc) or repr(exc)}"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
    return True


@asynccontextmanager
async def open_database(dsn: str, *, min_size: int = 2, max_size: int = 10,
                        command_timeout: float | None = COMMAND_TIMEOUT,
                        acquire_timeout: float | None = ACQUIRE_TIMEOUT,
                        connect_timeout: float | None = CONNECT_TIMEOUT) -> AsyncIterator[Database]:
    """A pool for the life of the block. Needs a running trio-asyncio loop.

    Each call to the record is bounded by `command_timeout` on Trio's clock (`Database.bounded`:
    no timer of asyncpg's per statement); the wait for a free connection and the making of a
    new one are timed by asyncpg on the loop's clock, which under trio-asyncio is Trio's too.
    Tests that jump a MockClock pass `command_timeout=None`, `acquire_timeout=None` and
    `connect_timeout=None` (a jump while a statement, a wait for a connection or a connect
    runs in real time would time it out).

    No idle-connection expiry (`max_inactive_connection_lifetime=0`): asyncpg arms a
    five-minute timer on every release and cancels it on the next acquire, and under
    trio-asyncio a cancelled timer stays queued until it would have fired, holding a copy
    of the releasing request's context (its headers, scope, session). Under steady load
    that held some 50 MiB (the soak bench: RSS rose for five minutes, then levelled).
    The pool never grows past `max_size` anyway.
    """
    # addFilter keeps one of each: every pool opened adds it, the logger holds it once.
    logging.getLogger("asyncpg.pool").addFilter(connect_failures_in_a_line)
    hosts = hosts_of(dsn)
    # Several hosts (a primary and its replicas): each new connection goes to the primary
    # on the newest timeline, never to a stale one (storage.primary).
    connect = PrimaryFinder(hosts).connect if len(hosts) > 1 else None
    pool = await trio_asyncio.aio_as_trio(asyncpg.create_pool)(
        dsn, min_size=min_size, max_size=max_size, init=_init_connection, command_timeout=None,
        reset=_release_without_reset_query, max_inactive_connection_lifetime=0, timeout=connect_timeout,
        connect=connect, server_settings={
            "idle_in_transaction_session_timeout": IDLE_IN_TRANSACTION_TIMEOUT, **CLIENT_GONE_AFTER},
    )
    db = Database(pool, dsn, acquire_timeout, command_timeout)
    try:
        yield db
    finally:
        for held in db._held:
            with trio.move_on_after(CLOSE_TIMEOUT) as giving_back:
                giving_back.shield = True
                await held.give_back()
        with trio.move_on_after(CLOSE_TIMEOUT) as giving_back:
            giving_back.shield = True
            await trio_asyncio.aio_as_trio(db.give_back_warm)()
        # A graceful close waits for connections in use; past a few seconds, drop them.
        with trio.move_on_after(CLOSE_TIMEOUT) as closing:
            await trio_asyncio.aio_as_trio(pool.close)()
        if closing.cancelled_caught:
            pool.terminate()
