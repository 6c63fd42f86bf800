"""An OTA revision's apply is bounded by its own deadlines (LOCK_WAIT for the property's
lock, then its `within` once it holds it: decision 0126), not also by the record's command
timeout, which would end it as "the record away" and never count it as a try."""

from __future__ import annotations

from collections.abc import Callable

import trio
import trio.testing

from connectapi.actors.ota_writer import _under_the_lock
from connectapi.storage.database import QUERY_CANCELED, RecordBusy, StorageError, Tx, open_database

from .statements import until_sleeping


async def test_an_apply_past_its_time_under_the_lock_is_a_try_not_the_record_away(
        mock_clock: trio.testing.MockClock, fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2, command_timeout=10) as db, \
            open_database(fresh_dsn, min_size=1, max_size=1, command_timeout=None) as watcher:
        await watcher.execute("CREATE TABLE p (id int PRIMARY KEY)")
        await watcher.execute("INSERT INTO p VALUES (1)")
        caught: list[BaseException] = []

        async def work(tx: Tx, locked: Callable[[], None]) -> str:
            await tx.execute("SELECT 1 FROM p WHERE id = 1 FOR NO KEY UPDATE")
            mock_clock.jump(0.001)  # the lock's round trip took a millisecond
            locked()
            await tx.execute("SELECT pg_sleep(30)")  # the apply stalls
            return "done"

        async def apply() -> None:
            try:
                await _under_the_lock(db, work, 10.0, "its apply ran past 10 s and was rolled back")  # type: ignore[arg-type]
            except StorageError as exc:
                caught.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(apply)
            await until_sleeping(watcher)
            mock_clock.jump(9.9995)  # 10 s since the connection was in hand; the lock held a little less
            for _ in range(2000):
                if caught:
                    break
                await trio.sleep(0)
            if not caught:
                mock_clock.jump(1.0)  # past the apply's `within`
        assert len(caught) == 1
        assert isinstance(caught[0], RecordBusy) and caught[0].sqlstate == QUERY_CANCELED, caught[0]
