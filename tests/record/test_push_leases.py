"""One process at a time pushes a property: the push lease in the record, and a process's
view of its leases (actors.push_leases), against a real database."""

from __future__ import annotations

from datetime import UTC, date, datetime

import trio

from connectapi.actors.push_leases import PushLeaseKeeper, PushLeases
from connectapi.storage import leases
from connectapi.storage.database import Database, open_database

NOW = 1_795_000_000.0  # seconds since the epoch; the record's clock in production
AT = datetime.fromtimestamp(NOW, UTC)
SECONDS = 20.0
PUSH = leases.LeaseKind.PUSH


async def take_push(db: Database, prop: int, holder: str, now: float | None, seconds: float) -> leases.Lease:
    return await leases.take(db, PUSH, str(prop), holder, now, seconds)


def lease(prop: int, holder: str, remaining: float) -> leases.Lease:
    return leases.Lease(PUSH, str(prop), holder, remaining)


async def a_property(db: Database, dirty_nights: int = 0) -> int:
    """A property with one room type and a night of availability per `dirty_nights`, dirty."""
    property_id: int = await db.fetchval(
        "INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
        "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")
    room = await db.fetchval("INSERT INTO room_types (property_id, name, max_adults, max_occupancy, rooms) "
                             "VALUES ($1, 'Double', 2, 2, 8) RETURNING id", property_id)
    for n in range(dirty_nights):
        await db.execute("INSERT INTO availability_cells (property_id, room_type_id, night, available) "
                         "VALUES ($1, $2, $3, 4)", property_id, room, date(2026, 12, 1 + n))
    return property_id


async def test_a_lease_is_held_renewed_given_back_and_taken_over_when_it_runs_out(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        prop = await a_property(db)
        assert await take_push(db, prop, "a", NOW, SECONDS) == lease(prop, "a", SECONDS)
        # held: b is told by whom, and for how long
        assert await take_push(db, prop, "b", NOW + 5, SECONDS) == lease(prop, "a", 15.0)
        # renewed by a (taking it again is renewing it too): 20 s from then
        assert await leases.renew(db, PUSH, "a", [str(prop)], NOW + 15, SECONDS) == [str(prop)]
        assert await take_push(db, prop, "a", NOW + 16, SECONDS) == lease(prop, "a", SECONDS)
        assert await take_push(db, prop, "b", NOW + 35, SECONDS) == lease(prop, "a", 1.0)
        # given back: b takes it at once
        assert await leases.give_back_push(db, prop, "a", AT) == leases.DirtyAfter(False, False)
        assert await take_push(db, prop, "b", NOW + 36, SECONDS) == lease(prop, "b", SECONDS)
        # b dies: its lease runs out, and a takes the property over then, not a moment before
        assert (await take_push(db, prop, "a", NOW + 55.9, SECONDS)).holder == "b"
        assert await take_push(db, prop, "a", NOW + 56, SECONDS) == lease(prop, "a", SECONDS)
        # b, back from a stall, has nothing: no renewal, and its give-back leaves a's lease alone
        assert await leases.renew(db, PUSH, "b", [str(prop)], NOW + 57, SECONDS) == []
        await leases.give_back_push(db, prop, "b", AT)
        assert await leases.holders(db, PUSH, NOW + 57) == {str(prop): ("a", 19.0)}
        # a lease that ran out is still its holder's until another takes it
        assert await leases.renew(db, PUSH, "a", [str(prop)], NOW + 100, SECONDS) == [str(prop)]
        assert await leases.give_back_all(db, "a", PUSH) == 1 and await leases.holders(db, PUSH) == {}


async def test_three_processes_racing_for_a_lease_one_holds_it(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=3, max_size=6) as db:
        props = [await a_property(db) for _ in range(10)]
        for prop in props:
            told: dict[str, leases.Lease] = {}

            async def take(holder: str, prop: int = prop) -> None:
                told[holder] = await take_push(db, prop, holder, None, SECONDS)  # the record's clock

            async with trio.open_nursery() as nursery:
                for holder in ("a", "b", "c"):
                    nursery.start_soon(take, holder)
            winners = {lease.holder for lease in told.values()}
            assert len(winners) == 1, told  # every one of them is told the same holder
            (winner,) = winners
            assert told[winner or ""].remaining > SECONDS - 1
            assert (await leases.holders(db, PUSH))[str(prop)][0] == winner


class SteppedClock:
    """The two times a process's leases read: monotonic, and the shared one (the record's)."""

    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        return self.t

    def shared_time(self) -> float:
        return NOW + self.t

    def now(self) -> datetime:
        return datetime.fromtimestamp(NOW + self.t, UTC)


class Woken:
    def __init__(self) -> None:
        self.calls: list[tuple[int, bool, bool]] = []

    async def __call__(self, property_id: int, availability: bool, rates_or_restrictions: bool) -> None:
        self.calls.append((property_id, availability, rates_or_restrictions))


def process(db: Database, name: str, clock: SteppedClock, woken: Woken | None = None) -> PushLeases:
    return PushLeases(db, clock, woken or Woken(), holder=name, seconds=SECONDS)  # type: ignore[arg-type]


async def test_a_process_holds_a_property_while_either_of_its_pushers_has_work(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        clock = SteppedClock()
        prop = await a_property(db)
        woken = Woken()
        a, b = process(db, "a", clock, woken), process(db, "b", clock)
        assert await a.take(prop, "availability") is None
        assert await a.take(prop, "rates-and-restrictions") is None  # the same lease, shared
        assert await b.take(prop, "availability") == SECONDS
        await a.leave(prop, "availability")
        assert a.held() == [prop] and (await leases.holders(db, PUSH, NOW))[str(prop)][0] == "a"  # the projector works on
        await a.leave(prop, "rates-and-restrictions")
        assert a.held() == [] and await leases.holders(db, PUSH) == {}  # given back at once
        assert woken.calls == []  # nothing dirty: nobody to wake
        assert await b.take(prop, "rates-and-restrictions") is None


async def test_a_lease_given_back_with_cells_dirty_again_wakes_the_pushers(fresh_dsn: str) -> None:
    """A write accepted by another process while this one held the lease: that process's
    pusher found it held and left it; this one looks once more after giving it back."""
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        clock = SteppedClock()
        prop = await a_property(db, dirty_nights=2)
        woken = Woken()
        a = process(db, "a", clock, woken)
        assert await a.take(prop, "availability") is None
        await a.leave(prop, "availability")
        assert woken.calls == [(prop, True, False)]


async def test_renewed_while_held_and_checked_before_each_call(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        clock = SteppedClock()
        prop, other = await a_property(db), await a_property(db)
        a, b = process(db, "a", clock), process(db, "b", clock)
        keeper = PushLeaseKeeper(a, every=5.0)
        assert await a.take(prop, "availability") is None and await a.take(other, "rates-and-restrictions") is None
        for _ in range(10):  # a minute waiting out a pause, say: the keeper renews both
            clock.t += 5.0
            await keeper.round()
        assert a.held() == [prop, other]
        assert await a.ensure(prop, 14.0) == clock.t + SECONDS  # enough left: no statement
        assert await b.take(prop, "availability") == SECONDS
        # a stalls past its lease (no renewal): b takes the property over
        clock.t += SECONDS
        assert await b.take(prop, "availability") is None
        # a, back, is told before its next call that the property is no longer its own
        assert await a.ensure(prop, 14.0) is None and a.held() == [other]
        assert await a.take(prop, "availability") == SECONDS  # and waits for b's lease to run out
        # the keeper finds a lease taken over too, and drops it
        clock.t += SECONDS
        assert await b.take(other, "rates-and-restrictions") is None
        await keeper.round()
        assert a.held() == []


async def test_a_pusher_started_afresh_drops_its_part_and_a_stop_gives_every_lease_back(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        clock = SteppedClock()
        props = [await a_property(db) for _ in range(3)]
        a, b = process(db, "a", clock), process(db, "b", clock)
        for prop in props:
            assert await a.take(prop, "availability") is None
        a.forget(props[0], "availability")  # no longer renewed here: it runs out
        assert a.held() == props[1:]
        assert await a.give_back_all() == 3 and a.held() == []
        for prop in props:
            assert await b.take(prop, "availability") is None
