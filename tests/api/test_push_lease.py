"""The push lease in the running service, on the mock clock: a property another process
pushes is left to it, and taken over when that process's lease runs out; this process
holds a property through a pause and gives it back once it is clean."""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta
from typing import Any

import pytest
import trio

from connectapi.actors.push_leases import LEASE_SECONDS, LOOK_AGAIN_AFTER
from connectapi.storage import leases, pushes
from connectapi.storage.database import Database

from .harness import Harness, eventually
from .test_pacing import let_run, sandbox_value, set_night
from .test_pipeline import grid, settled

NIGHT = date(2026, 11, 23)
PUSH = leases.LeaseKind.PUSH


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_PUSH_PAUSED": "0"}


def pushed_at(api: Harness, prop: dict[str, Any]) -> list[datetime]:
    """When (the fake clock) the sandbox took each availability call for the property."""
    assert api.ctx.channel.sandbox is not None
    cm_id = grid(api, prop).id
    return [c.at for c in api.ctx.channel.sandbox.calls if c.kind == "availability" and cm_id in c.property_ids]


async def steps(api: Harness, seconds: int) -> None:
    """The clock on, a second at a time, letting what is due run in between. What runs in
    real time (the record, the sandbox over HTTP) may still be on its way at the next step:
    the assertions after the steps wait for it (settled), never for another step."""
    for _ in range(seconds):
        api.advance(1)
        await let_run()


async def test_a_property_another_process_pushes_is_left_to_it_until_its_lease_runs_out(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    held = await leases.take(api.ctx.db, PUSH, str(prop["id"]), "another-process", api.ctx.clock.shared_time(),
                             LEASE_SECONDS)
    assert held.holder == "another-process"
    lease_ends = api.ctx.clock.now() + timedelta(seconds=LEASE_SECONDS)
    seeded = pushed_at(api, prop)
    await set_night(api, key, room, NIGHT, 3)  # accepted here: this process's pusher is woken
    await let_run()
    await steps(api, int(LEASE_SECONDS) - 1)  # the other process pushes it (it would: it is alive)
    assert pushed_at(api, prop) == seeded and (await pushes.dirty_counts(api.ctx.db, prop["id"]))["availability"] == 1
    # Its lease runs out (it died): this process takes the property over, once it looks
    # again (LOOK_AGAIN_AFTER past the end, counted from when the record said it was held).
    await steps(api, 1 + math.ceil(LOOK_AGAIN_AFTER))
    await settled(api, prop["id"])
    assert sandbox_value(api, prop, NIGHT) == 3
    taken_over = pushed_at(api, prop)[len(seeded):]
    assert len(taken_over) == 1 and taken_over[0] >= lease_ends, (taken_over, lease_ends)
    await eventually(lambda: given_back(api), "the lease given back")


async def test_a_slow_answer_from_the_record_does_not_put_the_take_over_later(
        api: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record says how long the other process's lease runs as the statement ran: the
    look again is counted from then, not from when the answer came back (three seconds
    later here, each time), or every slow answer would put the take-over that much later."""
    taking = leases.take
    slowed: list[float | None] = []

    async def slow_answer(db: Database, kind: leases.LeaseKind, key: str, holder: str, now: float | None,
                          seconds: float) -> leases.Lease:
        lease = await taking(db, kind, key, holder, now, seconds)
        if kind is PUSH and lease.holder != holder:
            slowed.append(now)
            api.advance(3)  # the clock moved on while the answer was on its way
        return lease

    prop, key = await api.keyed_property()
    await leases.take(api.ctx.db, PUSH, str(prop["id"]), "another-process", api.ctx.clock.shared_time(),
                       LEASE_SECONDS)
    lease_ends = api.ctx.clock.now() + timedelta(seconds=LEASE_SECONDS)
    look_again = trio.current_time() + LEASE_SECONDS + LOOK_AGAIN_AFTER
    seeded = pushed_at(api, prop)
    monkeypatch.setattr(leases, "take", slow_answer)
    await set_night(api, key, prop["roomTypes"][0]["id"], NIGHT, 4)
    await let_run()
    while trio.current_time() < look_again:
        await steps(api, 1)
    await settled(api, prop["id"])
    taken_over = pushed_at(api, prop)[len(seeded):]
    assert len(taken_over) == 1 and taken_over[0] >= lease_ends, (taken_over, lease_ends)
    assert slowed


async def test_a_property_left_dirty_by_a_dead_process_is_taken_over_within_30_seconds(api: Harness) -> None:
    """Nothing woke this process (the write went through the dead one): the sweep finds the
    dirty cells, and the property is pushed once the dead process's lease runs out."""
    prop, _ = await api.keyed_property()
    await let_run()
    await steps(api, 1)  # past the sweep at start
    seeded = pushed_at(api, prop)
    await leases.take(api.ctx.db, PUSH, str(prop["id"]), "a-dead-process", api.ctx.clock.shared_time(),
                       LEASE_SECONDS)
    lease_ends = api.ctx.clock.now() + timedelta(seconds=LEASE_SECONDS)
    await api.ctx.db.execute("UPDATE availability_cells SET available = 5, version = version + 1 "
                             "WHERE property_id = $1 AND night = $2", prop["id"], NIGHT)
    await steps(api, 30)  # the clock stops there: pushed within 30 s, or never settled
    await settled(api, prop["id"])
    assert sandbox_value(api, prop, NIGHT) == 5
    taken_over = pushed_at(api, prop)[len(seeded):]
    assert len(taken_over) == 1 and taken_over[0] >= lease_ends, (taken_over, lease_ends)


async def test_the_lease_is_held_through_a_pause_and_given_back_once_clean(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    sandbox.faults.mode, sandbox.faults.remaining, sandbox.faults.retry_after = "429", 1, 60
    await set_night(api, key, room, NIGHT, 2)
    await eventually(lambda: sandbox.stats.throttled == 1, "the push throttled")
    holder = leases.process_holder()  # this process's, on every lease it holds

    async def held_here() -> bool:
        holders = await leases.holders(api.ctx.db, PUSH, api.ctx.clock.shared_time())
        assert list(holders) == [str(prop["id"])] and holders[str(prop["id"])][0] == holder, holders
        return holders[str(prop["id"])][1] > 0

    for _ in range(29):  # paused for a minute: the lease stays here, renewed past its 20 s
        await let_run()
        api.advance(2)  # small steps: a renewal still on its way (real time) when the clock moves is late
        await eventually(held_here, "the lease renewed")  # (never taken: it is still this process's)
    api.advance(2)
    await settled(api, prop["id"])
    assert sandbox_value(api, prop, NIGHT) == 2
    await eventually(lambda: given_back(api), "the lease given back")


async def given_back(api: Harness) -> bool:
    return not await leases.holders(api.ctx.db, PUSH)
