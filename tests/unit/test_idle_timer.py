"""The keep-alive timer a connection runs with one task for its life (http/serving/idle.py):
it keeps hypercorn's `restart` and `stop` as they were, without a task per idle spell."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from hypercorn.trio.task_group import TaskGroup

from connectapi.http.serving.idle import IdleTimer

KEEP_ALIVE = 5.0


class Closes:
    """A connection's idle timeout: waits KEEP_ALIVE, then says when it closed."""

    def __init__(self) -> None:
        self.at: list[float] = []

    async def __call__(self) -> None:
        await trio.sleep(KEEP_ALIVE)
        self.at.append(trio.current_time())


class Spawned(trio.abc.Instrument):
    def __init__(self) -> None:
        self.names: list[str] = []

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)


@pytest.mark.parametrize(("answered_after", "idle_again_at"), [
    (1.0, 4.0),  # a request arrives (stop) and is answered a second later (restart)
    (None, 3.0),  # a restart while the timeout runs, with no stop before it
])
async def test_the_timeout_runs_from_the_latest_restart(autojump_clock: trio.testing.MockClock,
                                                        answered_after: float | None, idle_again_at: float) -> None:
    closes, timer = Closes(), IdleTimer()
    async with TaskGroup() as group:
        start = trio.current_time()
        await timer.restart(group, closes)
        await trio.sleep(3)
        if answered_after is not None:
            await timer.stop()
            await trio.sleep(answered_after)
        await timer.restart(group, closes)
        await trio.sleep(KEEP_ALIVE * 3)
        timer.end()
    assert closes.at == [start + idle_again_at + KEEP_ALIVE]


async def test_a_request_arriving_stops_the_timeout(autojump_clock: trio.testing.MockClock) -> None:
    closes, timer = Closes(), IdleTimer()
    async with TaskGroup() as group:
        await timer.restart(group, closes)
        await trio.sleep(KEEP_ALIVE - 1)
        await timer.stop()
        await trio.sleep(KEEP_ALIVE * 3)
        timer.end()
    assert closes.at == []


async def test_a_restart_then_a_stop_before_the_task_runs_runs_nothing(autojump_clock: trio.testing.MockClock) -> None:
    closes, timer = Closes(), IdleTimer()
    async with TaskGroup() as group:
        await timer.restart(group, closes)
        await timer.stop()
        await trio.sleep(KEEP_ALIVE * 3)
        timer.end()
    assert closes.at == []


async def test_the_task_ends_with_the_reading_and_a_later_restart_still_times_out(
        autojump_clock: trio.testing.MockClock) -> None:
    closes, timer = Closes(), IdleTimer()
    with trio.move_on_after(KEEP_ALIVE * 10) as never:
        async with TaskGroup() as group:
            await timer.restart(group, closes)
            await timer.stop()
            timer.end()  # nothing is left in the group to wait for an idle spell
    assert not never.cancelled_caught
    with trio.move_on_after(KEEP_ALIVE * 10) as never:
        async with TaskGroup() as group:
            await timer.restart(group, closes)  # an answer finished after the reading ended
            start = trio.current_time()
    assert not never.cancelled_caught
    assert closes.at == [start + KEEP_ALIVE]


async def test_a_connection_spawns_one_task_for_all_its_idle_spells(autojump_clock: trio.testing.MockClock) -> None:
    closes, timer, spawned = Closes(), IdleTimer(), Spawned()
    trio.lowlevel.add_instrument(spawned)
    try:
        async with TaskGroup() as group:
            for _ in range(100):  # a hundred requests on one keep-alive connection
                await timer.restart(group, closes)
                await trio.sleep(0.01)
                await timer.stop()
            await timer.restart(group, closes)
            await trio.sleep(KEEP_ALIVE + 1)
            timer.end()
    finally:
        trio.lowlevel.remove_instrument(spawned)
    assert len(spawned.names) == 1, spawned.names
    assert len(closes.at) == 1


async def test_a_restart_or_the_end_during_the_shielded_close_does_not_cut_it(
        autojump_clock: trio.testing.MockClock) -> None:
    closed: list[float] = []

    async def closes_slowly() -> None:
        await trio.sleep(KEEP_ALIVE)
        with trio.CancelScope(shield=True):  # as the connection's close is
            await trio.sleep(1)
            closed.append(trio.current_time())

    timer = IdleTimer()
    async with TaskGroup() as group:
        start = trio.current_time()
        await timer.restart(group, closes_slowly)
        await trio.sleep(KEEP_ALIVE + 0.5)  # inside the close
        await timer.restart(group, closes_slowly)
        await trio.sleep(0.1)
        timer.end()
    assert closed == [start + KEEP_ALIVE + 1]


async def test_an_error_in_the_timeout_ends_the_connection_as_hypercorns_did(
        autojump_clock: trio.testing.MockClock) -> None:
    async def fails() -> None:
        await trio.sleep(KEEP_ALIVE)
        raise OSError("the socket went away")

    timer = IdleTimer()
    try:
        async with TaskGroup() as group:
            await timer.restart(group, fails)
            await trio.sleep_forever()
    except BaseExceptionGroup as failed:
        assert failed.subgroup(OSError) is not None
    else:
        raise AssertionError("the error was lost")
