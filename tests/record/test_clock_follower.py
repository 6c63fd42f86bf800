"""A process's wall clock follows the database server's: the offset measured against the
record, and the system clock moved by it."""

from __future__ import annotations

from datetime import UTC, datetime

import trio_asyncio

from connectapi.actors.clock_follower import MEASURE_AGAIN_SOON, ClockFollower
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


class Measures:
    """Offsets and round trips handed out one by one, as a loaded host might measure them."""

    def __init__(self, *measures: tuple[float, float]) -> None:
        self._left = list(measures)

    async def __call__(self, db: object) -> tuple[float, float]:
        return self._left.pop(0)


async def test_on_a_loaded_host_the_closest_measure_is_followed_until_one_is_trusted() -> None:
    """A host ten minutes ahead whose first measures take seconds (its start, under load):
    it used to keep its own clock, and date what it recorded by it, until a measure within
    TRUSTED_ROUND_TRIP came, a minute or more later (a webhook queued ten minutes ahead then
    waited for ten minutes, and every later one of its endpoint behind it)."""
    clock = SystemClock()
    follower = ClockFollower(None, clock, measure=Measures(  # type: ignore[arg-type] # never asked
        (-600.0, 3.0), (-610.0, 4.0), (-601.0, 1.0), (-600.2, 0.1), (-900.0, 2.0)))
    first = await follower.round()
    assert clock.offset == -600.0 and first.due_in == MEASURE_AGAIN_SOON  # untrusted, and soon again
    farther = await follower.round()
    assert clock.offset == -600.0 and farther.due_in == MEASURE_AGAIN_SOON  # no closer: kept
    closer = await follower.round()
    assert clock.offset == -601.0 and closer.due_in == MEASURE_AGAIN_SOON
    trusted = await follower.round()
    assert clock.offset == -600.2 and trusted.due_in is None  # trusted: the usual interval
    after = await follower.round()
    assert clock.offset == -600.2 and after.due_in is None  # an untrusted one never undoes a trusted one
