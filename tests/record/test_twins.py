"""A property's test twin in the record (issue 29): its own cells, batches and bookings, its
live property's catalog, its live property's settings but nobody's e-mail."""

from __future__ import annotations

from datetime import UTC, date, datetime

from .ari_writes import apply_write
from connectapi.actors.messages.property_writer import WriteAccepted
from connectapi.domain.admin_models import PropertyIn, PropertyPatch, RoomTypeIn
from connectapi.domain.ari_write import Resource, plan_write
from connectapi.storage import ari, properties, pushes, twins
from connectapi.storage.database import Database

TODAY = date(2026, 11, 22)
NOW = datetime(2026, 11, 22, 10, tzinfo=UTC)
NIGHT = date(2026, 11, 23)


async def a_property(db: Database) -> tuple[int, int, int]:
    body = PropertyIn.model_validate({
        "name": "Casa", "timezone": "Europe/Lisbon", "currency": "EUR",
        "products": {"channelManager": True, "pms": True}, "pmsEntitled": True,
        "ownerEmail": "owner@example.com", "guestConfirmation": True,
        "roomTypes": [{"name": "D", "maxAdults": 2, "rooms": 4}],
        "ratePlans": [{"roomType": 0, "name": "R", "mealPlan": "RO"}],
    })
    prop, catalog = await properties.create_property(db, body, TODAY)
    return prop.id, catalog.room_types[0].id, catalog.rate_plans[0].id


async def with_twin(db: Database) -> tuple[int, int, int, int]:
    """A property and its test twin: (live, twin, room type, rate plan)."""
    live, room, plan = await a_property(db)
    twin = await twins.ensure_twin(db, live, TODAY)
    assert twin is not None
    return live, twin, room, plan


async def write(db: Database, property_id: int, resource: Resource, **values: object) -> None:
    plan = plan_write(resource, {"updates": [{"dateFrom": "2026-11-23", "dateTo": "2026-11-23", **values}]}, TODAY)
    done = await apply_write(db, property_id, plan, NOW)
    assert isinstance(done, WriteAccepted), done


async def test_a_twin_is_made_once_with_its_live_propertys_settings_and_nobodys_email(db: Database) -> None:
    live, _, _ = await a_property(db)
    assert await twins.twin_of(db, live) is None
    twin = await twins.ensure_twin(db, live, TODAY)
    assert twin is not None and twin != live
    assert await twins.ensure_twin(db, live, TODAY) == twin and await twins.twin_of(db, live) == twin
    prop = await properties.get_property(db, twin)
    assert prop is not None
    assert (prop.mode, prop.twin_of, prop.live_id) == ("test", live, live)
    assert (prop.name, prop.timezone, prop.currency, prop.channel_manager, prop.pms, prop.pms_entitled) == (
        "Casa", "Europe/Lisbon", "EUR", True, True, True)
    assert (prop.owner_email, prop.guest_confirmation) == (None, False)
    # A twin has no twin, and nothing is made for a property that is not there.
    assert await twins.ensure_twin(db, twin, TODAY) is None
    assert await twins.ensure_twin(db, 10**9, TODAY) is None


async def test_a_twin_reads_its_live_propertys_catalog_with_its_ids(db: Database) -> None:
    live, twin, room, plan = await with_twin(db)
    assert await properties.get_catalog(db, twin) == await properties.get_catalog(db, live)
    checked_against = await ari.write_catalog(db, twin)
    assert (set(checked_against.room_types), set(checked_against.policies)) == ({room}, {plan})


async def test_cells_written_for_the_twin_are_the_twins_alone_and_the_other_way(db: Database) -> None:
    live, twin, room, plan = await with_twin(db)
    # Both start at the room count: the live property in sync, the twin to be pushed to the
    # test sandbox (here taken as pushed, to look at what writes make dirty).
    for pid in (live, twin):
        assert [(a.room_type_id, a.available) for a in await ari.read_availability(db, pid, NIGHT, NIGHT)] == [(room, 4)]
    assert await pushes.dirty_counts(db, live) == {"availability": 0, "rates": 0, "restrictions": 0}
    seeded = await pushes.dirty_availability(db, twin, 10_000, NOW)
    assert len(seeded) > 300 and {c.value for c in seeded} == {4}
    await pushes.mark_availability_pushed(db, twin, seeded)
    assert await pushes.dirty_counts(db, twin) == {"availability": 0, "rates": 0, "restrictions": 0}
    await write(db, twin, Resource.AVAILABILITY, roomTypeId=room, available=1)
    await write(db, twin, Resource.RATES, ratePlanId=plan, rate=99, currency="EUR")
    await write(db, twin, Resource.RESTRICTIONS, ratePlanId=plan, minStayArrival=3)
    await write(db, live, Resource.RESTRICTIONS, ratePlanId=plan, closedToArrival=True)
    assert [a.available for a in await ari.read_availability(db, twin, NIGHT, NIGHT)] == [1]
    assert [a.available for a in await ari.read_availability(db, live, NIGHT, NIGHT)] == [4]
    assert len(await ari.read_rates(db, twin, NIGHT, NIGHT)) == 1
    assert await ari.read_rates(db, live, NIGHT, NIGHT) == []
    twin_restrictions = await ari.read_restrictions(db, twin, NIGHT, NIGHT)
    live_restrictions = await ari.read_restrictions(db, live, NIGHT, NIGHT)
    assert [(r.fields.get("minStayArrival"), r.fields.get("closedToArrival")) for r in twin_restrictions] == [(3, None)]
    assert [(r.fields.get("minStayArrival"), r.fields.get("closedToArrival")) for r in live_restrictions] == [(None, True)]
    assert await pushes.dirty_counts(db, twin) == {"availability": 1, "rates": 1, "restrictions": 1}
    assert await pushes.dirty_counts(db, live) == {"availability": 0, "rates": 0, "restrictions": 1}


async def test_a_change_of_the_live_property_reaches_its_twin_but_not_its_email(db: Database) -> None:
    live, twin, _, _ = await with_twin(db)
    await properties.patch_property(db, live, PropertyPatch.model_validate(
        {"name": "Casa Nova", "ownerEmail": "new@example.com", "products": {"channelManager": False, "pms": True}}))
    prop = await properties.get_property(db, twin)
    assert prop is not None
    assert (prop.name, prop.channel_manager, prop.owner_email) == ("Casa Nova", False, None)
    # A twin is changed only through its live property.
    assert await properties.patch_property(db, twin, PropertyPatch.model_validate({"name": "x"})) is None


async def test_a_room_type_added_later_has_the_twins_nights_too(db: Database) -> None:
    live, twin, _, _ = await with_twin(db)
    added = await properties.add_room_type(db, live, RoomTypeIn.model_validate(
        {"name": "S", "maxAdults": 1, "rooms": 2}), TODAY)
    for pid in (live, twin):
        found = await ari.read_availability(db, pid, NIGHT, NIGHT)
        assert (added.id, 2) in [(a.room_type_id, a.available) for a in found]


async def test_marking_one_propertys_cells_pushed_or_dirty_leaves_the_others_alone(db: Database) -> None:
    live, twin, room, _ = await with_twin(db)
    await pushes.mark_availability_pushed(db, twin, await pushes.dirty_availability(db, twin, 10_000, NOW))
    await write(db, live, Resource.AVAILABILITY, roomTypeId=room, available=2)
    await write(db, twin, Resource.AVAILABILITY, roomTypeId=room, available=3)
    live_dirty = await pushes.dirty_availability(db, live, 100, NOW)
    twin_dirty = await pushes.dirty_availability(db, twin, 100, NOW)
    assert [c.value for c in live_dirty] == [2] and [c.value for c in twin_dirty] == [3]
    # The twin's cell is a later version of the same (room, night): a live mark must not take it.
    assert await pushes.mark_availability_pushed(db, live, live_dirty + twin_dirty) == 1
    assert [c.value for c in await pushes.dirty_availability(db, twin, 100, NOW)] == [3]
    assert await pushes.mark_availability_pushed(db, twin, twin_dirty) == 1
    # The reconciler's "push again" for the live cell leaves the twin's in sync.
    assert await pushes.mark_dirty_again(db, live, "availability", live_dirty + twin_dirty) == 1
    assert await pushes.dirty_counts(db, twin) == {"availability": 0, "rates": 0, "restrictions": 0}
    assert await pushes.dirty_counts(db, live) == {"availability": 1, "rates": 0, "restrictions": 0}


async def test_the_operators_status_leaves_test_records_out(db: Database) -> None:
    from connectapi.storage import record_status
    live, twin, _, _ = await with_twin(db)
    # A twin failing to sync (an integrator's armed fault) is not the service's problem.
    await db.execute("UPDATE properties SET cm_failures = 5, cm_last_outcome = 'failed' WHERE id = $1", twin)
    found = await record_status.read_record_facts(db)
    assert [p.property_id for p in found.properties] == [live]


async def test_the_metrics_dirty_gauge_counts_live_cells_only(db: Database) -> None:
    live, twin, room, _ = await with_twin(db)
    await write(db, live, Resource.AVAILABILITY, roomTypeId=room, available=2)
    # The twin's seeded horizon is dirty (to be pushed to the test sandbox): not counted.
    assert await pushes.dirty_counts(db, twin) != {"availability": 0, "rates": 0, "restrictions": 0}
    assert await pushes.dirty_totals(db) == {"availability": 1, "rates": 0, "restrictions": 0}
