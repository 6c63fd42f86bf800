"""The channel manager's feed treated as input (issue 41): a channel-manager id maps to one
property only, a revision is screened before anything is locked or written, a clash of ids
is kept for review, and no revision holds a property or the intake's round for long. The
feed is the project's sandbox channel manager, served on a real port, fed raw revisions."""

from __future__ import annotations

from typing import Any

import pytest

from connectapi.storage.database import Database, RecordRefused
from connectapi.storage.migrations import bundled_migrations
from .harness import Harness
from .test_ota_bookings import CM_ONLY, NOTIFY_SECRET, cm_ids, events_of, hooked_property, ota_booking
from .webhook_receiver import Receiver


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1", "CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET,
            "CONNECTAPI_PUSH_PAUSED": "0", "CONNECTAPI_BUDGETS": "writes=1000,property-writes=1000,requests=1000"}


def mapping_of(api: Harness, prop: dict[str, Any]) -> dict[str, Any]:
    """The sandbox's mapping of `prop` as a channel-mapping body (its ids in the sandbox)."""
    cm = cm_ids(api, prop)
    rooms = len(prop["roomTypes"])
    return {"cmPropertyId": cm[0],
            "roomTypes": {str(r["id"]): cm[1 + i] for i, r in enumerate(prop["roomTypes"])},
            "ratePlans": {str(p["id"]): cm[1 + rooms + i] for i, p in enumerate(prop["ratePlans"])}}


async def mapped_ids(api: Harness, property_id: int) -> tuple[Any, ...]:
    row = await api.ctx.db.fetchrow(
        """SELECT cm_property_id, (SELECT array_agg(cm_id ORDER BY id) FROM room_types WHERE property_id = $1),
                  (SELECT array_agg(cm_id ORDER BY id) FROM rate_plans WHERE property_id = $1)
           FROM properties WHERE id = $1""", property_id)
    assert row is not None
    return tuple(row)


# --- 2. One channel-manager id, one property ---------------------------------------------------

async def test_a_channel_managers_ids_mapped_to_a_second_property_are_refused(api: Harness,
                                                                              receiver: Receiver) -> None:
    first, secret = await hooked_property(api, receiver, **CM_ONLY)
    second = await api.create_property(name="Another Hotel", **CM_ONLY)
    before = await mapped_ids(api, second["id"])
    theirs = mapping_of(api, first)
    ours = mapping_of(api, second)
    # The copy-paste mistake of the review: the whole of the first hotel's mapping.
    copied = {"cmPropertyId": theirs["cmPropertyId"],
              "roomTypes": dict(zip(ours["roomTypes"], theirs["roomTypes"].values())),
              "ratePlans": dict(zip(ours["ratePlans"], theirs["ratePlans"].values()))}
    refused = await api.admin("PUT", f"/properties/{second['id']}/channel-mapping", copied)
    assert (refused.status, refused.code) == (409, "CHANNEL_MAPPING_TAKEN")
    assert refused.data["details"] == {"path": "cmPropertyId", "propertyId": first["id"]}
    # Its own property id, but one room type of the first hotel's: refused too, naming it.
    [(our_room, _), *_] = ours["roomTypes"].items()
    one_room = {**ours, "roomTypes": {**ours["roomTypes"], our_room: theirs["roomTypes"][str(first["roomTypes"][0]["id"])]}}
    refused = await api.admin("PUT", f"/properties/{second['id']}/channel-mapping", one_room)
    assert (refused.status, refused.code) == (409, "CHANNEL_MAPPING_TAKEN")
    assert refused.data["details"] == {"path": f"roomTypes.{our_room}", "propertyId": first["id"]}
    [(our_plan, _), *_] = ours["ratePlans"].items()
    one_plan = {**ours, "ratePlans": {**ours["ratePlans"], our_plan: next(iter(theirs["ratePlans"].values()))}}
    refused = await api.admin("PUT", f"/properties/{second['id']}/channel-mapping", one_plan)
    assert refused.data["details"] == {"path": f"ratePlans.{our_plan}", "propertyId": first["id"]}
    assert await mapped_ids(api, second["id"]) == before
    # The property's own mapping given again is no clash with itself.
    again = await api.admin("PUT", f"/properties/{first['id']}/channel-mapping", theirs)
    assert again.status == 200, again.body
    # And the first hotel's OTA booking lands on the first hotel alone.
    await ota_booking(api, first)
    [created] = (await events_of(receiver, secret, 2))[1:]
    assert created["property"]["id"] == first["id"]
    assert not await api.ctx.db.fetchval("SELECT count(*) FROM bookings WHERE property_id = $1", second["id"])


async def test_the_record_itself_holds_one_property_per_channel_id(api: Harness) -> None:
    """A mapping that raced past the look (or a restore, or a hand-made row) meets the
    record's unique indexes."""
    first = await api.create_property()
    second = await api.create_property(name="Another Hotel")
    theirs = mapping_of(api, first)
    for statement, value in (
            ("UPDATE properties SET cm_property_id = $2 WHERE id = $1", theirs["cmPropertyId"]),
            ("UPDATE room_types SET cm_id = $2 WHERE id = $1", next(iter(theirs["roomTypes"].values()))),
            ("UPDATE rate_plans SET cm_id = $2 WHERE id = $1", next(iter(theirs["ratePlans"].values())))):
        target = {"properties": second["id"], "room_types": second["roomTypes"][0]["id"],
                  "rate_plans": second["ratePlans"][0]["id"]}[statement.split()[1]]
        with pytest.raises(RecordRefused) as refused:
            await api.ctx.db.execute(statement, target, value)
        assert refused.value.sqlstate == "23505"


async def test_the_migration_unmaps_the_later_of_two_properties_sharing_an_id(db: Database) -> None:
    """Pairs a version before this one let in: the property mapped first keeps the id."""
    await db.execute("""DROP INDEX properties_cm_property_id; DROP INDEX room_types_cm_id; DROP INDEX rate_plans_cm_id;
        CREATE UNIQUE INDEX room_types_cm_id ON room_types (property_id, cm_id) WHERE cm_id IS NOT NULL;
        CREATE UNIQUE INDEX rate_plans_cm_id ON rate_plans (property_id, cm_id) WHERE cm_id IS NOT NULL""")
    ids = []
    for name, cm_property in (("First", "cm-p"), ("Copy", "cm-p"), ("Own", "cm-own")):
        prop = await db.fetchval(
            """INSERT INTO properties (name, timezone, currency, channel_manager, pms, cm_property_id)
               VALUES ($1, 'Europe/Lisbon', 'EUR', true, false, $2) RETURNING id""", name, cm_property)
        room = await db.fetchval("INSERT INTO room_types (property_id, name, max_adults, max_occupancy, rooms, cm_id) "
                                 "VALUES ($1, 'Double', 2, 2, 4, $2) RETURNING id",
                                 prop, "cm-room" if name != "Own" else "cm-own-room")
        await db.execute("INSERT INTO rate_plans (property_id, room_type_id, name, meal_plan, cm_id) "
                         "VALUES ($1, $2, 'Flex', 'RO', $3)", prop, room, "cm-plan" if name == "First" else
                         "cm-plan" if name == "Own" else "cm-copy-plan")
        ids.append(prop)
    [migration] = [m for m in bundled_migrations() if m.name == "one_property_per_channel_id"]
    await db.execute(migration.sql)
    held = {r["id"]: (r["cm_property_id"], r["room"], r["plan"]) for r in await db.fetch(
        """SELECT p.id, p.cm_property_id, r.cm_id AS room, q.cm_id AS plan FROM properties p
           JOIN room_types r ON r.property_id = p.id JOIN rate_plans q ON q.property_id = p.id""")}
    assert held == {ids[0]: ("cm-p", "cm-room", "cm-plan"), ids[1]: (None, None, "cm-copy-plan"),
                    ids[2]: ("cm-own", "cm-own-room", None)}
