"""A process's wall clock follows the database server's: the offset measured against the
record, and the system clock moved by it."""

from __future__ import annotations

from datetime import UTC, datetime

import trio_asyncio

from connectapi.actors.clock_follower import ClockFollower
from connectapi.engine import SystemClock
from connectapi.storage.clock import database_offset
from connectapi.storage.database import open_database


def test_a_system_clock_follows_the_offset_it_is_given() -> None:
    clock = SystemClock()
    assert abs((clock.now() - datetime.now(UTC)).total_seconds()) < 1
    clock.follow(-600.0)  # this host is ten minutes ahead of the database
    assert abs((clock.now() - datetime.now(UTC)).total_seconds() + 600) < 1 and clock.offset == -600.0


async def test_the_offset_is_measured_against_the_record_and_followed(pg_server: str) -> None:
    async with trio_asyncio.open_loop(), open_database(pg_server, min_size=1, max_size=1) as db:
        offset, round_trip = await database_offset(db)
        assert abs(offset) < 1 and 0 <= round_trip < 1  # one machine: the same clock
        clock = SystemClock()
        clock.follow(123.0)
        await ClockFollower(db, clock).round()
        assert abs(clock.offset) < 1  # measured again: the host's own clock is the database's
