"""Pacing, Retry-After, hangs and fairness of the push pipeline, on the mock clock."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date, timedelta
from typing import Any

import pytest
import trio
import trio.testing

from connectapi.actors.channel_manager import PACING_WINDOW, ChannelManagerActor
from connectapi.actors.messages.channel_manager import ChannelMessage, GridRead, Push, PushOutcome, ReadGrid
from connectapi.channel.client import open_channel_manager
from connectapi.channel.sandbox.serve import serve_sandbox
from connectapi.channel.sandbox.state import SandboxState
from connectapi.domain.channel_values import AvailabilityValue
from connectapi.engine import FakeClock, Mailbox, SystemClock, open_supervisor
from connectapi.storage import pushes
from connectapi.storage.database import Database

from .conftest import START
from .harness import API, Harness, eventually
from .test_pipeline import settled


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_PUSH_PAUSED": "0", "CONNECTAPI_BUDGETS": "writes=1000,property-writes=1000,requests=1000"}


async def let_run(rounds: int = 200) -> None:
    for _ in range(rounds):
        await trio.sleep(0)
    await trio.testing.wait_all_tasks_blocked()


async def set_night(api: Harness, key: str, room: int, night: date, available: int) -> None:
    answer = await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
        {"roomTypeId": room, "dateFrom": str(night), "dateTo": str(night), "available": available}]})
    assert answer.status == 202, answer.body


def sandbox_value(api: Harness, prop: dict[str, Any], night: date) -> int:
    assert api.ctx.channel.sandbox is not None
    held = next(p for p in api.ctx.channel.sandbox.properties.values() if p.title == prop["name"])
    return int(next(iter(held.availability.values()))[night])


async def test_a_burst_of_60_writes_a_minute_draws_no_429(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    first = date(2026, 11, 23)
    for second in range(60):
        await set_night(api, key, room, first + timedelta(days=second), second % 7)
        await let_run(20)
        api.advance(1)
    for _ in range(180):  # let the paced pushes drain
        await let_run(20)
        api.advance(1)
    await settled(api, prop["id"])
    assert api.ctx.channel.sandbox is not None
    assert api.ctx.channel.sandbox.stats.throttled == 0
    assert api.handles.counters.throttled == 0
    assert api.ctx.channel.sandbox.stats.availability_calls <= 10 * 4  # paced: at most 10 a minute
    assert all(sandbox_value(api, prop, first + timedelta(days=s)) == s % 7 for s in range(60))


@pytest.mark.parametrize(("retry_after", "pause"), [(7, 7.0), (None, 60.0)])
async def test_a_429_pauses_the_property_for_its_retry_after(api: Harness, retry_after: int | None,
                                                           pause: float) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    assert api.ctx.channel.sandbox is not None
    faults = api.ctx.channel.sandbox.faults
    faults.mode, faults.remaining, faults.retry_after = "429", 1, retry_after
    await set_night(api, key, room, date(2026, 11, 23), 1)
    await eventually(lambda: api.handles.counters.throttled == 1, "a 429 drawn")
    api.advance(pause - 0.01)
    await let_run()
    assert (await pushes.dirty_counts(api.ctx.db, prop["id"]))["availability"] == 1
    api.advance(0.02)
    await settled(api, prop["id"])
    assert sandbox_value(api, prop, date(2026, 11, 23)) == 1


async def test_a_hang_times_out_and_backs_off(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    assert api.ctx.channel.sandbox is not None
    api.ctx.channel.sandbox.faults.mode, api.ctx.channel.sandbox.faults.remaining = "timeout", 1
    await set_night(api, key, room, date(2026, 11, 23), 4)
    sandbox = api.ctx.channel.sandbox
    await eventually(lambda: sandbox.stats.failed == 1, "the push hanging in the sandbox")
    api.advance(10.5)  # the client's timeout
    await eventually(lambda: has_failures(api, prop["id"], 1), "the push timed out")
    api.advance(76.0)  # the first pause: Channex's minute, jittered up to a quarter more
    await settled(api, prop["id"])
    assert sandbox_value(api, prop, date(2026, 11, 23)) == 4


async def test_a_flooding_property_does_not_delay_another(api: Harness) -> None:
    busy, busy_key = await api.keyed_property(name="Busy")
    quiet, quiet_key = await api.keyed_property(name="Quiet")
    busy_room, quiet_room = busy["roomTypes"][0]["id"], quiet["roomTypes"][0]["id"]
    # Creation seeded the sandbox (one call); nine pushes more use up Busy's minute.
    for i in range(9):
        await set_night(api, busy_key, busy_room, date(2026, 11, 23), i % 2)
        await settled(api, busy["id"])
    await set_night(api, busy_key, busy_room, date(2026, 11, 24), 3)  # this one must wait for a slot
    await let_run()
    await set_night(api, quiet_key, quiet_room, date(2026, 11, 24), 1)
    await settled(api, quiet["id"])  # no time passes: Quiet never waits behind Busy
    assert (await pushes.dirty_counts(api.ctx.db, busy["id"]))["availability"] == 1
    api.advance(PACING_WINDOW)  # the channel manager's minute, and our margin over it
    await settled(api, busy["id"])
    assert sandbox_value(api, busy, date(2026, 11, 24)) == 3


async def test_an_hour_of_outage_is_caught_up_coalesced_without_a_burst(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    assert api.ctx.channel.sandbox is not None
    sandbox = api.ctx.channel.sandbox
    sandbox.faults.mode, sandbox.faults.remaining = "500", 1_000_000  # down
    first = date(2026, 11, 23)
    for minute in range(60):  # a write every minute for an hour, to 30 nights in turn
        await set_night(api, key, room, first + timedelta(days=minute % 30), minute % 5)
        await let_run(20)
        api.advance(60)
    # It kept trying, paused a minute after the first failure, then doubling up to 15
    # minutes (jittered up to a quarter more): 6 to 8 calls in the hour.
    assert 5 <= sandbox.stats.failed <= 9
    calls_before = sandbox.stats.availability_calls
    sandbox.faults.mode, sandbox.faults.remaining = "ok", 0  # back
    # Past the longest backoff in one jump: a jump while the call is on its way (real time)
    # would time it out on the client after the sandbox took it, and it would go again.
    await let_run(20)
    api.advance(19 * 60)
    # A statement still at the record (real time) when the clock jumped timed out: the
    # pusher then waits a second of the clock for the record. Step the clock a second at a
    # time until the cells are clean.
    for _ in range(30):
        try:
            await settled(api, prop["id"], seconds=0.25)
            break
        except AssertionError:
            api.advance(1)
    await settled(api, prop["id"])
    # Everything in one coalesced call; a second when the jump cut the first short (the jump
    # runs out the call's lease while it is on its way in real time), never a burst.
    assert sandbox.stats.availability_calls - calls_before in (1, 2)
    assert sandbox.stats.throttled == 0
    for day in range(30):
        last_minute = max(m for m in range(60) if m % 30 == day)
        assert sandbox_value(api, prop, first + timedelta(days=day)) == last_minute % 5


async def has_failures(api: Harness, property_id: int, count: int) -> bool:
    return await api.cm_failures(property_id) == count


@pytest.mark.parametrize(("mode", "said"), [("malformed", "not JSON (text/html)"), ("reset", "connection")])
async def test_an_answer_we_cannot_read_is_a_failed_push_backed_off(api: Harness, mode: str, said: str) -> None:
    """A 200 that is an HTML page, or a connection closed without an answer: the push failed,
    the cells stay dirty, /sync says what came back, and after the backoff they go through."""
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    assert api.ctx.channel.sandbox is not None
    api.ctx.channel.sandbox.faults.mode, api.ctx.channel.sandbox.faults.remaining = mode, 1  # type: ignore[assignment]
    await set_night(api, key, room, date(2026, 11, 23), 5)
    await eventually(lambda: has_failures(api, prop["id"], 1), "the push failed")

    async def backing_off() -> bool:
        # the failure is counted as it happens; its outcome reaches the record a moment later
        inventory = (await api.call("GET", f"{API}/sync", key=key)).data["inventory"]
        return bool(inventory == {"state": "BACKING_OFF", "dirtyCells": 1, "refusedCells": 0})

    await eventually(backing_off, "the property backing off")
    sync = await api.call("GET", f"{API}/sync", key=key)
    assert sync.data["inventory"] == {"state": "BACKING_OFF", "dirtyCells": 1, "refusedCells": 0}
    assert said in sync.data["projector"]["lastError"] and sync.data["projector"]["lastOutcome"] == "failed"
    api.advance(76.0)  # the first pause: a minute, jittered
    await settled(api, prop["id"])
    assert sandbox_value(api, prop, date(2026, 11, 23)) == 5
    assert (await api.call("GET", f"{API}/sync", key=key)).data["projector"]["lastError"] is None


@asynccontextmanager
async def two_processes_channel_actors(db: Database) -> AsyncIterator[tuple[SandboxState, str, str,
                                                                          list[Mailbox[ChannelMessage]]]]:
    """A sandbox channel manager (one property, one room type) and two channel-manager
    actors on one record, each with its own client, as two processes would have."""
    state, key = SandboxState(), "shared-pacing-key"
    cm_property = state.create_property("Casa Azul", "EUR")
    cm_room = state.create_room_type(cm_property, "Double", 8)
    clock = FakeClock(START)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(serve_sandbox, state, key, SystemClock(), "127.0.0.1", 0, stop)
        async with open_channel_manager(url, key) as one, open_channel_manager(url, key) as other, \
                open_supervisor(shutdown_grace=0) as supervisor:
            actors: list[Mailbox[ChannelMessage]] = []
            for n, client in enumerate((one, other)):
                actors.append(await supervisor.spawn(
                    f"channel-manager-{n}", functools.partial(ChannelManagerActor, client, db, clock)))
            yield state, cm_property, cm_room, actors
        stop.set()


async def test_two_processes_share_a_property_budget_and_the_read_budget(db: Database) -> None:
    """Two channel-manager actors on one record (two processes), each asked for a push of
    the same property and a read every second for three minutes: together they stay
    within the channel manager's budgets (it answers no 429) and use them."""
    mock_clock = trio.lowlevel.current_clock()
    assert isinstance(mock_clock, trio.testing.MockClock)
    async with two_processes_channel_actors(db) as (sandbox, cm_property, cm_room, actors):
        value = AvailabilityValue(property_id=cm_property, room_type_id=cm_room, date_from="2026-12-01",
                                  date_to="2026-12-01", availability=1)
        sent = deferred = reads = 0
        for second in range(180):
            for actor in actors:
                pushed: PushOutcome = await actor.ask(Push(7, "availability", [AvailabilityValue(**{**value, "availability": second})], mode="live"), 30)
                assert pushed.ok or pushed.deferred, pushed
                sent += pushed.ok
                deferred += pushed.deferred
                read: GridRead = await actor.ask(ReadGrid("availability", cm_property, date(2026, 12, 1),
                                                          date(2026, 12, 1)), 30)
                reads += read.grid is not None
            mock_clock.jump(1)
    assert sandbox.stats.throttled == 0
    # Ten a minute for both together: 3 minutes are at most 30 of each (our window is a
    # little longer than the channel manager's), and the budget is used, not left idle.
    # The background reads stop four short of the ten: those are kept for people's.
    assert 27 <= sent == sandbox.stats.availability_calls <= 30
    assert 16 <= reads == sandbox.stats.read_calls <= 18
    assert deferred == 2 * 180 - sent


async def test_a_persons_read_goes_ahead_of_the_background_reads(db: Database) -> None:
    """The reconciler's reads (background) stop four short of the account's ten a minute:
    the operator's look at the channel grid (interactive) finds them, rather than waiting
    a minute behind the reconciler."""
    async with two_processes_channel_actors(db) as (sandbox, cm_property, _, actors):
        night = date(2026, 12, 1)

        async def read(actor: Mailbox[ChannelMessage], interactive: bool) -> GridRead:
            found: GridRead = await actor.ask(ReadGrid("availability", cm_property, night, night,
                                                       interactive=interactive), 30)
            return found
        background = [await read(actors[n % 2], False) for n in range(8)]
        assert [r.grid is not None for r in background] == [True] * 6 + [False] * 2
        assert all(r.retry_at is not None for r in background[6:])  # told when, never sent
        people = [await read(actors[n % 2], True) for n in range(5)]
        assert [r.grid is not None for r in people] == [True] * 4 + [False]
    assert (sandbox.stats.read_calls, sandbox.stats.throttled) == (10, 0)
