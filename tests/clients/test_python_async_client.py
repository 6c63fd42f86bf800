"""`connectapi_client.AsyncClient` against the live service, under trio (the library runs on
asyncio too, through anyio): the same routes and retries as the sync client, and no wait
that blocks the loop."""

from __future__ import annotations

import time

import pytest
import trio

from connectapi_client import AsyncClient, PreconditionFailedError, RateLimitedError

from .clocks import FakeAsyncClock
from .conftest import Live
from .fault_proxy import Fault, FaultProxy
from .test_python_client import night, rate, stay


async def test_every_route_awaited(live: Live) -> None:
    keyed = live.keyed()
    clock = FakeAsyncClock(pause=0.05)
    async with AsyncClient(base_url=live.url, api_key=keyed.key, clock=clock) as client:
        assert (await client.property()).id == keyed.property["id"]
        assert (await client.catalog()).rate_plans[0].id == keyed.rate_plan_id
        written = await client.availability.set([{"roomTypeId": keyed.room_type_id, "dateFrom": night(3),
                                                  "dateTo": night(4), "available": 3}])
        rated = await client.rates.set([rate(keyed)])
        assert rated.accepted_cells == 3
        restricted = await client.restrictions.set([{"ratePlanId": keyed.rate_plan_id, "dateFrom": night(3),
                                                     "dateTo": night(3), "stopSell": True}])
        assert restricted.accepted_cells == 1
        assert [n.available for n in (await client.availability.get(night(3), night(4))).room_types[0].nights] == [
            3, 3]
        assert (await client.rates.get(night(10), night(10))).rate_plans[0].nights[0].rate_minor == 12000
        assert (await client.restrictions.get(night(3), night(3))).rate_plans[0].nights[0].stop_sell is True
        # The service pushes meanwhile: the three rate cells are dirty until one push takes them
        # all (a push marks a resource's cells in one statement), never some of them.
        assert (await client.sync()).rates.dirty_cells in (0, 3)
        for batch in (written, rated, restricted):
            assert (await client.wait_for_batch(batch.batch_id, timeout=300)).status == "completed"
        assert all(wait >= 15 for wait in clock.waits)
        assert (await client.batch(written.batch_id)).status == "completed"
        # Every batch pushed: nothing this property wrote is dirty any more.
        synced = await client.sync()
        assert (synced.inventory.dirty_cells, synced.rates.dirty_cells, synced.restrictions.dirty_cells,
                synced.inventory.state, synced.newest_pending_batch) == (0, 0, 0, "IN_SYNC", None), synced

        made = [await client.bookings.create(stay(keyed, f"AS-{n}", arrive=30 + n)) for n in range(3)]
        listed = [b.booking_id async for b in client.bookings.list(limit=2)]
        assert listed == [b.booking_id for b in reversed(made)]
        assert (await client.bookings.get(made[0].booking_id)).external_reference == "AS-0"
        changed = await client.bookings.modify(made[0].booking_id, {"guest": {"email": "new@example.com"}},
                                               if_match=f'"{made[0].revision}"')
        assert changed.guest.email == "new@example.com"
        with pytest.raises(PreconditionFailedError):
            await client.bookings.modify(made[0].booking_id, {"notes": "x"}, if_match=made[0].revision)
        assert (await client.bookings.cancel(made[1].booking_id)).status == "CANCELLED"


async def test_retries_are_awaited_with_one_key(live: Live, proxy: FaultProxy) -> None:
    keyed = live.keyed()
    clock = FakeAsyncClock()
    async with AsyncClient(base_url=proxy.url, api_key=keyed.key, clock=clock) as client:
        proxy.script.arm(Fault("429-after", "PUT /rates", retry_after=2), Fault("drop-after", "PUT /rates"))
        result = await client.rates.set([rate(keyed, "111")])
        tries = proxy.script.tries("PUT", "/rates")
        assert [(t.answered, t.replay) for t in tries] == [(429, False), ("dropped", True), (202, True)]
        assert len({t.idempotency_key for t in tries}) == 1 and result.accepted_cells == 3
        assert 2 <= clock.waits[0] <= 3
        proxy.script.arm(Fault("429-before", "GET /sync", retry_after=3600))
        with pytest.raises(RateLimitedError) as refused:
            await client.sync()
        assert refused.value.retry_after == 3600 and len(clock.waits) == 2


async def test_the_default_clock_never_blocks_the_loop(live: Live, proxy: FaultProxy,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def blocking(seconds: float) -> None:
        raise AssertionError("time.sleep in async code blocks the loop")

    monkeypatch.setattr(time, "sleep", blocking)
    keyed = live.keyed()
    ticks = 0

    async def ticking() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.sleep(0)

    proxy.script.arm(Fault("503-before", "GET /property", retry_after=0, count=3))
    async with AsyncClient(base_url=proxy.url, api_key=keyed.key) as client, trio.open_nursery() as nursery:
        nursery.start_soon(ticking)
        assert (await client.property()).id == keyed.property["id"]
        nursery.cancel_scope.cancel()
    assert [t.answered for t in proxy.script.tries("GET", "/property")] == [503, 503, 503, 200]
    assert ticks > 3
