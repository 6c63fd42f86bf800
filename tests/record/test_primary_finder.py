"""Each new connection of a pool over several database hosts goes to the primary on the
newest timeline (storage.primary): never to a host that is down, a replica, or a primary
older than one this process has used. (The failover itself, with a real replica and a
stale primary: tests/hosts.)"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs, urlsplit

import pytest
import trio
import trio_asyncio

from connectapi.storage.database import open_database
from connectapi.storage import primary
from connectapi.storage.primary import PrimaryFinder


def nowhere() -> str:
    """A host where nothing listens."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


@contextmanager
def silent_host() -> Iterator[str]:
    """A host that takes the connection and never says a word (a server cut off or powered
    off answers no better): only the connect timeout ends a wait for it."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)  # the kernel completes handshakes; nothing ever accepts them
        yield f"postgresql://postgres@127.0.0.1:{listening.getsockname()[1]}/postgres"


async def test_a_silent_host_is_waited_for_once_then_only_a_moment(pg_server: str) -> None:
    async with trio_asyncio.open_loop():
        with silent_host() as silent:
            finder = PrimaryFinder([silent, pg_server])
            first = await trio_asyncio.aio_as_trio(finder.connect)(timeout=0.5)
            assert set(finder.silent) == {0}
            # Had the silent host been waited for again, this connect would take 600 s.
            with trio.fail_after(30):
                second = await trio_asyncio.aio_as_trio(finder.connect)(timeout=600)
            assert set(finder.silent) == {0}
            for conn in (first, second):
                assert await trio_asyncio.aio_as_trio(conn.fetchval)("SELECT pg_is_in_recovery()") is False
                await trio_asyncio.aio_as_trio(conn.close)()
            # With no other primary it is waited for (it might be the primary): until the
            # connect timeout, and no primary.
            finder = PrimaryFinder([nowhere(), silent])
            finder.silent = {1: trio.current_time()}
            with pytest.raises(ConnectionRefusedError, match="TimeoutError"):
                await trio_asyncio.aio_as_trio(finder.connect)(timeout=0.5)
            assert set(finder.silent) == {1}


async def test_a_silent_host_is_asked_in_full_again_after_a_while(pg_server: str) -> None:
    """Passed over, a silent host could be a new primary that answers slowly: after
    SILENT_RECHECK_SECONDS it is waited for in full once more (and marked again)."""
    async with trio_asyncio.open_loop():
        with silent_host() as silent:
            finder = PrimaryFinder([silent, pg_server])
            marked = trio.current_time() - primary.SILENT_RECHECK_SECONDS - 1
            finder.silent = {0: marked}
            started = trio.current_time()
            conn = await trio_asyncio.aio_as_trio(finder.connect)(timeout=0.5)
            await trio_asyncio.aio_as_trio(conn.close)()
            assert trio.current_time() - started >= 0.5  # waited for it in full
            assert finder.silent[0] > marked


async def test_a_primary_older_than_the_one_in_use_does_not_cut_the_wait_short(pg_server: str) -> None:
    async with trio_asyncio.open_loop():
        with silent_host() as silent:
            finder = PrimaryFinder([pg_server, silent])
            finder.timeline = 99  # this process has used a newer primary than the one answering
            finder.silent = {1: trio.current_time()}
            with pytest.raises(ConnectionRefusedError, match="TimeoutError: ") as refused:
                await trio_asyncio.aio_as_trio(finder.connect)(timeout=0.5)
            assert "not waited for" not in str(refused.value)  # the silent host was heard out


async def test_a_silent_host_that_answers_again_is_counted_again(pg_server: str) -> None:
    """Silent last time, the primary now: with no other primary in hand it is waited for,
    taken, and no longer silent; all hosts silent is no different."""
    async with trio_asyncio.open_loop():
        for finder in (PrimaryFinder([pg_server, nowhere()]), PrimaryFinder([pg_server, pg_server])):
            finder.silent = {0: trio.current_time(), 1: trio.current_time()}
            conn = await trio_asyncio.aio_as_trio(finder.connect)(timeout=3)
            await trio_asyncio.aio_as_trio(conn.close)()
            assert finder.silent == {} and finder.timeline >= 1


async def test_the_live_primary_is_chosen_among_hosts_that_are_down(pg_server: str) -> None:
    async with trio_asyncio.open_loop():
        finder = PrimaryFinder([nowhere(), pg_server, nowhere()])
        conn = await trio_asyncio.aio_as_trio(finder.connect)(timeout=3)
        try:
            assert await trio_asyncio.aio_as_trio(conn.fetchval)("SELECT pg_is_in_recovery()") is False
            assert finder.timeline >= 1
        finally:
            await trio_asyncio.aio_as_trio(conn.close)()


async def test_no_primary_and_a_stale_one_are_refused(pg_server: str, caplog: pytest.LogCaptureFixture) -> None:
    async with trio_asyncio.open_loop():
        with pytest.raises(ConnectionRefusedError, match="no primary among the 2 database hosts"):
            await trio_asyncio.aio_as_trio(PrimaryFinder([nowhere(), nowhere()]).connect)(timeout=3)
        finder = PrimaryFinder([pg_server, nowhere()])
        finder.timeline = 99  # this process has used a newer primary: the one reachable is stale
        with caplog.at_level(logging.ERROR, logger="connectapi.storage"), \
                pytest.raises(ConnectionRefusedError):
            await trio_asyncio.aio_as_trio(finder.connect)(timeout=3)
        assert "a stale primary, not written to" in caplog.text


async def test_a_pool_over_several_hosts_answers_from_the_primary(pg_server: str) -> None:
    """The embedded server listens on a socket directory: the libpq form names both hosts."""
    socket_dir = parse_qs(urlsplit(pg_server).query)["host"][0]
    async with trio_asyncio.open_loop():
        async with open_database(pg_server, min_size=1, max_size=1) as db:
            port = int(await db.fetchval("SHOW port"))
        dead = urlsplit(nowhere()).port
        several = (f"postgresql://postgres@/postgres?host=127.0.0.1,{socket_dir}&port={dead},{port}"
                   "&target_session_attrs=read-write")
        async with open_database(several, min_size=1, max_size=2) as db:
            assert await db.fetchval("SELECT NOT pg_is_in_recovery()") is True
