"""The pushers' view of the record: dirty cells, and marking exactly the versions sent."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import trio

from .ari_writes import apply_write
from connectapi.actors.messages.property_writer import WriteAccepted
from connectapi.domain.admin_models import PropertyIn
from connectapi.domain.ari_write import Resource, plan_write
from connectapi.storage import properties, pushes
from connectapi.storage.database import Database
from connectapi.storage.key_directory import KeyDirectory

from ..api.harness import held_elsewhere
from ..listening import listening

TODAY = date(2026, 11, 22)
NOW = datetime(2026, 11, 22, 10, tzinfo=UTC)


async def a_property(db: Database) -> tuple[int, int, int]:
    body = PropertyIn.model_validate({
        "name": "P", "timezone": "UTC", "currency": "EUR", "products": {"channelManager": True, "pms": False},
        "roomTypes": [{"name": "D", "maxAdults": 2, "rooms": 4}],
        "ratePlans": [{"roomType": 0, "name": "R", "mealPlan": "RO"}],
    })
    prop, catalog = await properties.create_property(db, body, TODAY)
    return prop.id, catalog.room_types[0].id, catalog.rate_plans[0].id


async def write(db: Database, property_id: int, resource: Resource, *updates: dict[str, object]) -> None:
    plan = plan_write(resource, {"updates": list(updates)}, TODAY)
    done = await apply_write(db, property_id, plan, NOW)
    assert isinstance(done, WriteAccepted), done


async def test_new_property_is_in_sync(db: Database) -> None:
    pid, _, _ = await a_property(db)
    assert await pushes.dirty_counts(db, pid) == {"availability": 0, "rates": 0, "restrictions": 0}
    assert await pushes.dirty_availability(db, pid, 100, NOW) == []


async def test_marking_pushed_keeps_a_newer_write_dirty(db: Database) -> None:
    pid, room, plan = await a_property(db)
    await write(db, pid, Resource.AVAILABILITY, {"roomTypeId": room, "dateFrom": "2026-11-23",
                                                 "dateTo": "2026-11-24", "available": 2})
    dirty = await pushes.dirty_availability(db, pid, 100, NOW)
    assert [(c.night, c.value, c.pushed) for c in dirty] == [(date(2026, 11, 23), 2, 4), (date(2026, 11, 24), 2, 4)]
    # a write lands between the read and the mark
    await write(db, pid, Resource.AVAILABILITY, {"roomTypeId": room, "dateFrom": "2026-11-24",
                                                 "dateTo": "2026-11-24", "available": 1})
    assert await pushes.mark_availability_pushed(db, pid, dirty) == 2
    still = await pushes.dirty_availability(db, pid, 100, NOW)
    assert [(c.night, c.value, c.pushed) for c in still] == [(date(2026, 11, 24), 1, 2)]
    # marking the same versions again changes nothing
    assert await pushes.mark_availability_pushed(db, pid, dirty) == 0


async def test_rates_and_restrictions(db: Database) -> None:
    pid, _, plan = await a_property(db)
    await write(db, pid, Resource.RATES, {"ratePlanId": plan, "dateFrom": "2026-11-23", "dateTo": "2026-11-23",
                                          "rate": 120, "currency": "EUR"})
    await write(db, pid, Resource.RESTRICTIONS, {"ratePlanId": plan, "dateFrom": "2026-11-23",
                                                 "dateTo": "2026-11-23", "stopSell": True, "maxStay": 4})
    assert await pushes.dirty_counts(db, pid) == {"availability": 0, "rates": 1, "restrictions": 1}
    rates = await pushes.dirty_rates(db, pid, 10, NOW)
    assert [(c.value, c.pushed) for c in rates] == [(12000, None)]
    restrictions = await pushes.dirty_restrictions(db, pid, 10, NOW)
    assert restrictions[0].value == {"stopSell": True, "closedToArrival": None, "closedToDeparture": None,
                                     "minStayArrival": None, "minStayThrough": None, "maxStay": 4}
    assert await pushes.mark_rates_pushed(db, pid, rates) == 1
    assert await pushes.mark_restrictions_pushed(db, pid, restrictions) == 1
    assert await pushes.dirty_counts(db, pid) == {"availability": 0, "rates": 0, "restrictions": 0}
    # what the channel manager holds is remembered
    await write(db, pid, Resource.RESTRICTIONS, {"ratePlanId": plan, "dateFrom": "2026-11-23",
                                                 "dateTo": "2026-11-23", "maxStay": 5})
    again = await pushes.dirty_restrictions(db, pid, 10, NOW)
    assert again[0].pushed == restrictions[0].value


async def test_outcome_is_recorded_without_clearing_the_key_cache(db: Database) -> None:
    pid, _, _ = await a_property(db)
    directory = KeyDirectory(db)
    async with listening(directory):
        before = directory.generation
        await pushes.record_outcome(db, pid, NOW, "failed", "HTTP 500")
        await db.execute("UPDATE properties SET status = 'active' WHERE id = $1", pid)  # this one notifies
        with trio.fail_after(5):
            while directory.generation == before:
                await trio.sleep(0.01)
        await trio.sleep(0.2)
        assert directory.generation == before + 1
    row = await db.fetchrow("SELECT cm_last_outcome, cm_last_error FROM properties WHERE id = $1", pid)
    assert row is not None and tuple(row) == ("failed", "HTTP 500")


async def test_no_answer_shortens_a_pause_the_record_holds(db: Database) -> None:
    """The pause after a failed call is the record's alone (decision 0132): both pipes of a
    property, in any process, record into it, and none may shorten it."""
    pid, _, _ = await a_property(db)

    async def pause() -> tuple[object, int]:
        ids = await properties.channel_ids(db, pid)
        assert ids is not None
        return ids.next_attempt_at, ids.failures

    throttled_until = NOW + timedelta(seconds=600)
    await pushes.record_outcome(db, pid, NOW, "failed", "HTTP 429", throttled_until, 2)
    # The other pipe's failure with a shorter pause, and an unmapped round naming none.
    await pushes.record_outcome(db, pid, NOW + timedelta(seconds=1), "failed", "HTTP 500",
                                NOW + timedelta(seconds=61), 1)
    await pushes.record_outcome(db, pid, NOW + timedelta(seconds=2), "failed", "not mapped")
    assert await pause() == (throttled_until, 2)
    # The answer of a call that went out before the pause was recorded leaves it standing.
    await pushes.record_outcome(db, pid, NOW - timedelta(seconds=1), "ok", None)
    assert await pause() == (throttled_until, 2)
    row = await db.fetchrow("SELECT cm_last_outcome FROM properties WHERE id = $1", pid)
    assert row is not None and row["cm_last_outcome"] == "failed"
    # One started after it ended clears it.
    await pushes.record_outcome(db, pid, throttled_until, "ok", None)
    assert await pause() == (None, 0)


async def test_a_refused_cell_is_read_again_only_once_its_retry_is_due(db: Database) -> None:
    from datetime import timedelta

    from connectapi.storage import channel_refusals
    from connectapi.storage.leases import give_back_push as give_back

    pid, room, _ = await a_property(db)
    await write(db, pid, Resource.AVAILABILITY, {"roomTypeId": room, "dateFrom": "2026-11-23",
                                                 "dateTo": "2026-11-24", "available": 2})
    dirty = await pushes.dirty_availability(db, pid, 100, NOW)
    assert await channel_refusals.mark_refused(db, pid, "availability", [(dirty[0], '{"availability": ["no"]}')]) == 1
    await pushes.mark_availability_pushed(db, pid, dirty[1:])
    retry = await channel_refusals.refused_again(db, pid, "availability", NOW, False, lambda n: timedelta(minutes=n))
    assert retry == NOW + timedelta(minutes=1)
    # Held: still dirty (GET /sync counts it), but no pusher reads it and nobody is woken.
    assert await pushes.dirty_counts(db, pid) == {"availability": 1, "rates": 0, "restrictions": 0}
    assert await pushes.dirty_availability(db, pid, 100, NOW) == []
    assert await properties.properties_with_dirty_cells(db, NOW) == []
    assert (await give_back(db, pid, "nobody", NOW)).availability is False
    # Due: read again, marked refused, what the channel manager held there forgotten.
    later = NOW + timedelta(minutes=1)
    again = await pushes.dirty_availability(db, pid, 100, later)
    assert [(c.night, c.refused, c.pushed) for c in again] == [(date(2026, 11, 23), True, None)]
    assert await properties.properties_with_dirty_cells(db, later) == [pid]
    # Refused again when offered: the next try is put off longer; a new refusal elsewhere
    # while it waits does not put it off further.
    assert await channel_refusals.refused_again(db, pid, "availability", later, True,
                                                lambda n: timedelta(minutes=n)) == later + timedelta(minutes=2)
    assert await channel_refusals.refused_again(db, pid, "availability", later, False,
                                                lambda n: timedelta(minutes=n)) == later + timedelta(minutes=1)
    # A newer write is no refused version: it is read at once.
    await write(db, pid, Resource.AVAILABILITY, {"roomTypeId": room, "dateFrom": "2026-11-23",
                                                 "dateTo": "2026-11-23", "available": 3})
    assert [(c.value, c.refused) for c in await pushes.dirty_availability(db, pid, 100, later)] == [(3, False)]


async def test_marking_cells_waits_behind_a_writer_of_the_property_instead_of_deadlocking(
        db: Database, fresh_dsn: str) -> None:
    """A run of bookings locks the property, then each booking's nights in turn, in whatever
    order they come. The pusher marking several of those cells pushed meanwhile must not
    hold one of them while it waits for another: the bookings bench saw the server break
    such a deadlock after a second by failing the mark."""
    pid, room, _ = await a_property(db)
    await write(db, pid, Resource.AVAILABILITY, {"roomTypeId": room, "dateFrom": "2026-11-23",
                                                 "dateTo": "2026-11-24", "available": 2})
    dirty = await pushes.dirty_availability(db, pid, 100, NOW)
    assert [c.night for c in dirty] == [date(2026, 11, 23), date(2026, 11, 24)]
    sell = "SELECT connectapi_move_availability($1, ARRAY[$2::bigint], ARRAY[$3::date], ARRAY[-1], ARRAY[4])"
    marked: list[int] = []

    async def mark() -> None:
        marked.append(await pushes.mark_availability_pushed(db, pid, dirty))

    async def waiting() -> list[str]:
        """The tables whose row a session waiting on a lock (the mark's) waits for: a row
        lock's waiter holds the row's tuple lock while it waits for the holder."""
        return [r["waits_for"] for r in await db.fetch(
            """SELECT l.relation::regclass::text AS waits_for FROM pg_stat_activity a
               JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'tuple'
               WHERE a.wait_event_type = 'Lock' AND a.datname = current_database()""")]

    # A run of bookings (bookings.lock_for_bookings): the property's lock, then a first booking's later night.
    async with held_elsewhere(fresh_dsn, ("SELECT 1 FROM properties WHERE id = $1 FOR NO KEY UPDATE", (pid,)),
                              (sell, (pid, room, date(2026, 11, 24)))) as writer:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(mark)
                while not (tables := await waiting()):
                    await trio.sleep(0.01)
                # It waits for the property, holding no cell (whatever order its plan takes them in).
                assert tables == ["properties"], tables
                await writer.execute(sell, pid, room, date(2026, 11, 23))  # the next booking: the earlier night
                await writer.commit()
    assert marked == [2]  # the versions it read; both nights were sold since, so both stay dirty
    assert [(c.night, c.value) for c in await pushes.dirty_availability(db, pid, 100, NOW)] == [
        (date(2026, 11, 23), 1), (date(2026, 11, 24), 1)]
