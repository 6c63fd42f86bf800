"""The push lease in the running service, on the mock clock: a property another process
pushes is left to it, and taken over when that process's lease runs out; this process
holds a property through a pause and gives it back once it is clean."""

from __future__ import annotations

from datetime import date

import pytest

from connectapi.actors.push_leases import LEASE_SECONDS
from connectapi.storage import leases, pushes

from .harness import Harness, eventually
from .test_pacing import let_run, sandbox_value, set_night
from .test_pipeline import settled

NIGHT = date(2026, 11, 23)


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_PUSH_PAUSED": "0"}


async def calls(api: Harness) -> int:
    assert api.ctx.channel.sandbox is not None
    return api.ctx.channel.sandbox.stats.availability_calls


async def test_a_property_another_process_pushes_is_left_to_it_until_its_lease_runs_out(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    held = await leases.take_push(api.ctx.db, prop["id"], "another-process", api.ctx.clock.shared_time(),
                                  LEASE_SECONDS)
    assert held.holder == "another-process"
    before = await calls(api)
    await set_night(api, key, room, NIGHT, 3)  # accepted here: this process's pusher is woken
    for _ in range(int(LEASE_SECONDS) - 1):  # the other process pushes it (it would: it is alive)
        await let_run()
        api.advance(1)
    await let_run()
    assert await calls(api) == before and (await pushes.dirty_counts(api.ctx.db, prop["id"]))["availability"] == 1
    for _ in range(5):  # its lease runs out (it died): this process takes the property over
        api.advance(1)
        await let_run()
        if not (await pushes.dirty_counts(api.ctx.db, prop["id"]))["availability"]:
            break
    await settled(api, prop["id"])
    assert sandbox_value(api, prop, NIGHT) == 3
    await eventually(lambda: given_back(api), "the lease given back")


async def test_a_property_left_dirty_by_a_dead_process_is_taken_over_within_30_seconds(api: Harness) -> None:
    """Nothing woke this process (the write went through the dead one): the sweep finds the
    dirty cells, and the property is pushed once the dead process's lease runs out."""
    prop, _ = await api.keyed_property()
    await let_run()
    api.advance(1)  # past the sweep at start
    await let_run()
    await leases.take_push(api.ctx.db, prop["id"], "a-dead-process", api.ctx.clock.shared_time(), LEASE_SECONDS)
    await api.ctx.db.execute("UPDATE availability_cells SET available = 5, version = version + 1 "
                             "WHERE property_id = $1 AND night = $2", prop["id"], NIGHT)
    for second in range(1, 31):
        api.advance(1)
        await let_run()
        if not any((await pushes.dirty_counts(api.ctx.db, prop["id"])).values()):
            break
    assert LEASE_SECONDS <= second <= 30
    assert sandbox_value(api, prop, NIGHT) == 5


async def test_the_lease_is_held_through_a_pause_and_given_back_once_clean(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    sandbox.faults.mode, sandbox.faults.remaining, sandbox.faults.retry_after = "429", 1, 60
    await set_night(api, key, room, NIGHT, 2)
    await eventually(lambda: sandbox.stats.throttled == 1, "the push throttled")
    for _ in range(29):  # paused for a minute: the lease stays here, renewed past its 20 s
        await let_run()
        api.advance(2)  # small steps: a renewal still on its way (real time) when the clock moves is late
        await let_run()
        holders = await leases.push_holders(api.ctx.db, api.ctx.clock.shared_time())
        assert list(holders) == [prop["id"]] and holders[prop["id"]][1] > 0, holders
    api.advance(2)
    await settled(api, prop["id"])
    assert sandbox_value(api, prop, NIGHT) == 2
    await eventually(lambda: given_back(api), "the lease given back")


async def given_back(api: Harness) -> bool:
    return not await leases.push_holders(api.ctx.db)
