"""The storage boundary translates outside failures once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg
import pytest
import trio
import trio.testing
import trio_asyncio

import connectapi.storage.database as database
from connectapi.storage.database import StorageError, StorageUnavailable, Tx, _closed, open_database

from .statements import until_sleeping


async def test_a_query_past_its_command_timeout_is_storage_unavailable(mock_clock: trio.testing.MockClock,
                                                                       fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2, command_timeout=5) as db:
        async with open_database(fresh_dsn, min_size=1, max_size=1, command_timeout=None) as watcher:
            caught: list[BaseException] = []

            async def slow() -> None:
                try:
                    await db.fetchval("SELECT pg_sleep(2)")
                except StorageUnavailable as exc:
                    caught.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow)
                await until_sleeping(watcher)
                mock_clock.jump(6)  # the bound is kept on Trio's clock
    assert len(caught) == 1  # translated at the boundary, not a bare TimeoutError


async def test_a_transaction_past_its_command_timeout_is_storage_unavailable_and_writes_nothing(
        mock_clock: trio.testing.MockClock, fresh_dsn: str) -> None:
    """The bound covers a work of several statements too: cut off in the middle, its
    connection is dropped, what it wrote is rolled back, and the pool serves after."""
    async with open_database(fresh_dsn, min_size=1, max_size=2, command_timeout=5) as db:
        async with open_database(fresh_dsn, min_size=1, max_size=1, command_timeout=None) as watcher:
            await watcher.execute("CREATE TABLE written (id int)")
            caught: list[BaseException] = []

            async def slow(tx: Tx) -> None:
                await tx.execute("INSERT INTO written VALUES (1)")
                await tx.execute("SELECT pg_sleep(30)")  # cut off long before (its connection dropped)

            async def write() -> None:
                try:
                    await db.transaction(slow)
                except StorageUnavailable as exc:
                    caught.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(write)
                await until_sleeping(watcher)
                mock_clock.jump(6)
            assert len(caught) == 1 and "within 5 s" in str(caught[0])
            assert await db.fetchval("SELECT count(*) FROM written") == 0
            assert await db.fetchval("SELECT 1") == 1


async def test_a_committed_transaction_is_answered_though_the_bound_passes_as_its_connection_goes_back(
        mock_clock: trio.testing.MockClock, fresh_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound covers the work and its commit, not the connection's way back to the pool
    after: a write committed is never answered as the record away (a caller without a key
    of its own, the booking writer's batch, would make it again)."""
    async with open_database(fresh_dsn, min_size=1, max_size=2, command_timeout=10) as db, \
            open_database(fresh_dsn, min_size=1, max_size=1, command_timeout=None) as watcher:
        await watcher.execute("CREATE TABLE written (id int)")
        await db.fetchval("SELECT 1")
        # Back to the pool rather than kept, as when a caller waits on it; and the way there slow.
        monkeypatch.setattr(database, "_clean", lambda conn: False)
        releasing = trio.Event()
        real = asyncpg.pool.PoolConnectionHolder.release
        slowed = [True]

        async def slow_release(self: asyncpg.pool.PoolConnectionHolder, timeout: float | None) -> None:
            if slowed.pop() if slowed else False:
                releasing.set()
                await asyncio.sleep(1)  # on the loop's clock: Trio's
            await real(self, timeout)

        monkeypatch.setattr(asyncpg.pool.PoolConnectionHolder, "release", slow_release)
        answers: list[object] = []

        async def write() -> None:
            try:
                answers.append(await db.transaction(lambda tx: tx.execute("INSERT INTO written VALUES (1)")))
            except StorageError as exc:
                answers.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(write)
            await releasing.wait()
            mock_clock.jump(9.5)
            await trio.sleep(0)
            mock_clock.jump(1.0)  # the bound passes while the connection goes back
        assert answers == ["INSERT 0 1"]
        assert await watcher.fetchval("SELECT count(*) FROM written") == 1


async def test_a_statement_arms_no_timer_on_the_asyncio_loop(fresh_dsn: str) -> None:
    """The command timeout is kept on Trio's clock, not as asyncpg's per-statement timer:
    under trio-asyncio a timer cancelled when its statement ends stayed queued for its 10 s,
    two more turns of the loop and the caller's context held meanwhile (decision 0143).
    (asyncpg arms one when a statement enters a connection's cache: those are made first.)"""
    loop = asyncio.get_event_loop()
    armed: list[float] = []
    real = loop.call_later

    def counting(delay: float, callback: Callable[..., object], *args: object, **kwargs: Any) -> asyncio.TimerHandle:
        armed.append(delay)
        return real(delay, callback, *args, **kwargs)

    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:  # the default command timeout
        held = db.held()

        async def statements() -> None:
            assert await db.fetchval("SELECT 1") == 1
            assert await db.transaction(lambda c: c.fetchval("SELECT 2")) == 2
            assert await held.run(lambda c: c.fetchval("SELECT 3")) == 3

        for _ in range(2):  # each in its connection's statement cache (the held one took the first)
            await statements()
        loop.call_later = counting  # type: ignore[method-assign]
        try:
            for _ in range(5):
                await statements()
        finally:
            del loop.call_later
    assert armed == []


async def test_what_the_record_refuses_is_told_apart_from_it_being_away(fresh_dsn: str) -> None:
    from connectapi.storage.database import RECORD_AWAY, RecordRefused

    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        await db.execute("CREATE TABLE t (id int PRIMARY KEY)")
        await db.execute("INSERT INTO t VALUES (1)")
        refusals: list[RecordRefused] = []
        for sql, *args in (
                ("INSERT INTO t VALUES (1)",),  # a broken invariant: our bug
                ("DO $$ BEGIN RAISE EXCEPTION 'retry me' USING ERRCODE = '40001'; END $$",),  # serialization
                ("SELECT $1::int", "not a number"),  # a value the driver cannot send
        ):
            async def statement(tx: Tx, sql: str = sql, args: Sequence[object] = args) -> object:
                return await tx.execute(sql, *args)

            try:
                await db.transaction(statement)
            except RecordRefused as exc:
                assert exc.__cause__ is not None  # the driver's error kept
                refusals.append(exc)
        assert [(r.sqlstate, r.transient) for r in refusals] == [("23505", False), ("40001", True), ("22000", False)]
        # A refusal for now is the kind a background round waits out (RECORD_AWAY); the others are bugs.
        assert [isinstance(r, RECORD_AWAY) for r in refusals] == [False, True, False]
        # each was rolled back whole, and the pool still serves
        assert await db.fetchval("SELECT count(*) FROM t") == 1


async def test_a_cancelled_transaction_drops_its_connection_at_once(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=1) as db:
        await db.execute("CREATE TABLE t (id int)")
        with trio.move_on_after(0.5) as scope:
            await db.transaction(lambda tx: tx.execute("INSERT INTO t VALUES (1); SELECT pg_sleep(30)"))
        assert scope.cancelled_caught
        started = trio.current_time()
        assert await db.fetchval("SELECT count(*) FROM t") == 0  # rolled back by the server
        assert trio.current_time() - started < 5


async def test_a_connection_that_fails_its_reset_never_replaces_the_works_own_answer(
        fresh_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """asyncpg resets a connection on release and raises if that fails (the server died under
    it); that error came out of our `finally` instead of the work's result or error."""
    import asyncpg

    from connectapi.storage.database import RecordRefused

    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        release = asyncpg.pool.Pool.release

        async def failing_release(pool: asyncpg.Pool, conn: asyncpg.Connection, **kwargs: object) -> None:
            # what asyncpg does when the reset's ROLLBACK meets a dead server
            conn.terminate()
            await release(pool, conn)
            raise asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation")

        monkeypatch.setattr(asyncpg.pool.Pool, "release", failing_release)
        assert await db.fetchval("SELECT 41 + 1") == 42

        async def committed(tx: Tx) -> object:
            return await tx.fetchval("SELECT 7")

        assert await db.transaction(committed) == 7

        async def refused(tx: Tx) -> None:
            await tx.execute("SELECT 1/0")

        with pytest.raises(RecordRefused) as caught:
            await db.transaction(refused)
        assert caught.value.sqlstate == "22012"
        monkeypatch.undo()
        assert await db.fetchval("SELECT 1") == 1  # the pool made new connections


async def test_a_connection_whose_server_ended_it_mid_statement_is_not_handed_on(fresh_dsn: str) -> None:
    """The server ends a session (FATAL 57P01) under a running statement, as a dying or
    restarting server does to every session: the request gets StorageUnavailable, and the
    connection, still mid-error when the error is raised, is dropped. Handed on, the next
    request on it met "another operation is in progress" (a 500)."""

    async with open_database(fresh_dsn, min_size=1, max_size=1) as db, \
            open_database(fresh_dsn, min_size=1, max_size=1) as killer:
        for in_transaction in (False, True, False, True):
            pid = await db.fetchval("SELECT pg_backend_pid()")

            async def sleeper(tx: Tx) -> object:
                return await tx.fetchval("SELECT pg_sleep(5)")

            async def kill() -> None:
                while not await killer.fetchval(
                        "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'SELECT pg_sleep%'", pid):
                    await trio.sleep(0.01)
                await killer.fetchval("SELECT pg_terminate_backend($1)", pid)

            caught: list[BaseException] = []
            async with trio.open_nursery() as nursery:
                nursery.start_soon(kill)
                try:
                    await (db.transaction(sleeper) if in_transaction else db.run(sleeper))
                except StorageUnavailable as exc:
                    caught.append(exc)
            assert len(caught) == 1
            assert await db.fetchval("SELECT 41 + 1") == 42  # the one pooled connection is a new one


async def test_a_held_connection_is_kept_between_statements_and_taken_anew_after_a_failure(fresh_dsn: str) -> None:
    """The budget counter's connection: one backend for every statement while it works; a
    server that ends it gives StorageUnavailable at most once, and the next statement runs on
    a new one. Closing the pool gives it back (the pool would otherwise wait for it)."""
    from connectapi.storage.database import RecordRefused

    async with open_database(fresh_dsn, min_size=1, max_size=2) as db, \
            open_database(fresh_dsn, min_size=1, max_size=1) as killer:
        held = db.held()

        async def backend() -> int:
            pid: int = await held.run(lambda conn: conn.fetchval("SELECT pg_backend_pid()"))
            return pid

        first = await backend()
        assert [await backend() for _ in range(5)] == [first] * 5
        # A refusal gives the connection back too (it is not trusted mid-error): the next takes one again.
        with pytest.raises(RecordRefused):
            await held.run(lambda conn: conn.execute("SELECT 1/0"))
        again = await backend()
        assert await backend() == again
        await killer.fetchval("SELECT pg_terminate_backend($1)", again)
        # Once the driver has heard that the server ended it, the next statement takes a new
        # connection (test_held_connection_gone.py); before, that statement fails, once.
        try:
            await backend()
        except StorageUnavailable:
            pass
        renewed = await backend()
        assert renewed != again and await backend() == renewed
        # While it is held the other statements share what is left of the pool.
        assert await db.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", renewed) == 1
        idle = db._pool.get_idle_size()
        await held.give_back()  # its owner is done: back to the pool
        assert db._pool.get_idle_size() == idle + 1
        assert await backend() != 0  # and taken again if asked
    with trio.fail_after(2):  # the pool's close did not wait out its timeout for the held one
        async with open_database(fresh_dsn, min_size=1, max_size=1) as db:
            held = db.held()
            await held.run(lambda conn: conn.fetchval("SELECT 1"))


async def test_a_transaction_left_idle_gives_its_locks_back(fresh_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process cut off from the server mid-transaction says nothing more: the server ends
    its session after IDLE_IN_TRANSACTION_TIMEOUT, and another process's write of the rows
    it had locked goes through (it waited the cut out, before: issue 31's partition)."""
    import asyncio

    import trio_asyncio

    from connectapi.storage import database

    monkeypatch.setattr(database, "IDLE_IN_TRANSACTION_TIMEOUT", "300ms")
    async with open_database(fresh_dsn, min_size=1, max_size=1) as cut, \
            open_database(fresh_dsn, min_size=1, max_size=1) as other:
        await other.execute("CREATE TABLE t (id int PRIMARY KEY, v int)")
        await other.execute("INSERT INTO t VALUES (1, 0)")
        locked = asyncio.Event()

        async def left_idle(tx: database.Tx) -> None:
            await tx.execute("UPDATE t SET v = 1 WHERE id = 1")
            locked.set()
            await asyncio.Event().wait()  # its process gone quiet, as the server sees it

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cut.transaction, left_idle)
            await trio_asyncio.aio_as_trio(locked.wait)()
            with trio.fail_after(8):  # the command timeout is 10 s: it would be a 503
                await other.execute("UPDATE t SET v = 2 WHERE id = 1")
            nursery.cancel_scope.cancel()
        assert await other.fetchval("SELECT v FROM t WHERE id = 1") == 2  # the idle one rolled back


async def test_a_statement_that_went_well_leaves_its_connection_for_the_next(fresh_dsn: str) -> None:
    """Kept beside the pool (asyncpg's acquire and release cost more than a short
    statement), but only after work that went well: a failed statement's connection goes
    back to the pool. Before the pool closes, every kept one is given back to it."""
    from connectapi.storage.database import RecordRefused

    async with open_database(fresh_dsn, min_size=1, max_size=3) as db:
        pids = [await db.fetchval("SELECT pg_backend_pid()") for _ in range(5)]
        assert len(set(pids)) == 1
        assert db._pool.get_idle_size() == db._pool.get_size() - 1  # lent, as far as the pool knows
        with pytest.raises(RecordRefused):
            await db.execute("SELECT 1/0")
        assert db._warm == [] and db._pool.get_idle_size() == db._pool.get_size()

        async def in_a_transaction(tx: Tx) -> bool:
            return bool(tx.is_in_transaction())

        assert await db.transaction(in_a_transaction) is True
        assert len(db._warm) == 1  # committed: kept
        assert await db.run(in_a_transaction) is False  # and the next statement runs outside it

        async def timed_out(tx: Tx) -> str:
            try:
                await tx.fetchval("SELECT pg_sleep(5)", timeout=0.05)
            except TimeoutError:
                return "gave up"  # the work went well, but its connection is still cancelling that query
            return "slept"

        assert await db.run(timed_out) == "gave up"
        assert db._warm == []
        assert await db.fetchval("SELECT 1") == 1 and len(db._warm) == 1

        await trio_asyncio.aio_as_trio(db.give_back_warm)()
        assert db._warm == [] and db._pool.get_idle_size() == db._pool.get_size()
        assert await db.fetchval("SELECT 1") == 1
        assert db._warm == []  # none kept once the pool is closing
    with trio.fail_after(2):  # the pool's close did not wait out its timeout for a kept connection
        async with open_database(fresh_dsn, min_size=1, max_size=1) as db:
            await db.fetchval("SELECT 1")
            assert len(db._warm) == 1


async def test_a_caller_waiting_on_the_pool_gets_the_connection_a_statement_gives_back(fresh_dsn: str) -> None:
    """With every connection lent, a caller waits on the pool: a statement that ends gives its
    connection to it rather than keep it (kept, the caller would wait out its 5 s and fail)."""

    async with open_database(fresh_dsn, min_size=1, max_size=1) as db:
        go_on = trio.Event()
        answers: list[object] = []

        async def holding(tx: Tx) -> object:
            pid = await tx.fetchval("SELECT pg_backend_pid()")
            await trio_asyncio.trio_as_aio(go_on.wait)()
            return pid

        async def first() -> None:
            answers.append(await db.run(holding))

        async def second() -> None:
            answers.append(await db.fetchval("SELECT pg_backend_pid()"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            with trio.fail_after(5):
                while db._pool.get_idle_size():
                    await trio.sleep(0.01)
            nursery.start_soon(second)
            with trio.fail_after(5):
                while not db._waiting_for_pool:
                    await trio.sleep(0.01)
            # A caller that gives up its wait is no longer counted as waiting.
            with trio.move_on_after(0.2) as given_up:
                await db.fetchval("SELECT 1")
            assert given_up.cancelled_caught and db._waiting_for_pool == 1
            go_on.set()
        assert len(answers) == 2 and answers[0] == answers[1]  # one connection, handed on
        assert len(db._warm) == 1 and db._waiting_for_pool == 0  # the second kept it: nobody waits any more


async def test_a_kept_connection_whose_server_ended_it_while_idle_is_passed_over(fresh_dsn: str,
                                                                                pg_server: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db, \
            open_database(pg_server, min_size=1, max_size=1) as admin:
        first = await db.fetchval("SELECT pg_backend_pid()")
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", first)
        with trio.fail_after(5):  # the driver hears of it: the connection died while kept
            while not _closed(db._warm[-1]):
                await trio.sleep(0.01)
        second = await db.fetchval("SELECT pg_backend_pid()")
        assert second != first
        assert len(db._warm) == 1 and not _closed(db._warm[0])  # the new one kept in its place
        assert db._pool.get_idle_size() == db._pool.get_size() - 1
