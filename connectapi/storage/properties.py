"""Properties and their catalog (room types, rate plans)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import asyncpg

from ..domain.ari_write import HORIZON_DAYS
from ..domain import sell_modes
from ..domain.admin_models import (PropertyIn, PropertyPatch, RatePlanIn, RatePlanInProperty, RoomTypeIn,
                                   per_person_too_large)
from . import twins
from .database import UNIQUE_VIOLATION, Database, RecordRefused
from .pushes import pushable
from .records import Catalog, Property, RatePlan, RoomType


_PROPERTY_COLUMNS = """id, name, timezone, currency, channel_manager, pms, pms_entitled, status,
    owner_email, bookings_per_day, guest_confirmation, created_at, mode, twin_of"""


def property_of(row: asyncpg.Record) -> Property:
    return Property(
        id=row["id"], name=row["name"], timezone=row["timezone"], currency=row["currency"],
        channel_manager=row["channel_manager"], pms=row["pms"], pms_entitled=row["pms_entitled"],
        status=row["status"], owner_email=row["owner_email"], bookings_per_day=row["bookings_per_day"],
        guest_confirmation=row["guest_confirmation"], created_at=row["created_at"], mode=row["mode"],
        twin_of=row["twin_of"],
    )


def _room_type_of(row: asyncpg.Record) -> RoomType:
    return RoomType(row["id"], row["name"], row["max_adults"], row["max_occupancy"], row["rooms"])


# A plan's columns, and its room type's maxAdults (the occupancies it is priced for).
_RATE_PLAN_COLUMNS = ("q.id, q.room_type_id, q.name, q.meal_plan, q.min_rate, q.max_rate, q.sell_mode, "
                      "(SELECT r.max_adults FROM room_types r WHERE r.id = q.room_type_id) AS max_adults")


def _rate_plan_of(row: asyncpg.Record) -> RatePlan:
    return RatePlan(row["id"], row["room_type_id"], row["name"], row["meal_plan"], row["min_rate"], row["max_rate"],
                    row["sell_mode"], row["max_adults"])


async def _insert_room_type(conn: asyncpg.Connection, property_id: int, room: RoomTypeIn, today: date) -> RoomType:
    row = await conn.fetchrow(
        """INSERT INTO room_types (property_id, name, max_adults, max_occupancy, rooms)
           VALUES ($1, $2, $3, $4, $5) RETURNING id, name, max_adults, max_occupancy, rooms""",
        property_id, room.name, room.maxAdults, room.maxOccupancy or room.maxAdults, room.rooms,
    )
    # Every night of the writable horizon starts at the room count: already in sync for the
    # property (the sandbox's seeding holds it), to be pushed for its test twin if it has one
    # (the test sandbox knows only what it was sent; twins.py).
    await conn.execute(
        """INSERT INTO availability_cells (property_id, room_type_id, night, available, version, pushed_version,
                                          pushed_available)
           SELECT p.id, $2, d::date, $3::integer, 1, CASE WHEN p.mode = 'live' THEN 1 ELSE 0 END,
                  CASE WHEN p.mode = 'live' THEN $3::integer END
           FROM properties p, generate_series($4::date, $5::date, interval '1 day') AS d
           WHERE p.id = $1 OR p.twin_of = $1""",
        property_id, row["id"], room.rooms, today, today + timedelta(days=HORIZON_DAYS),
    )
    return _room_type_of(row)


async def _insert_rate_plan(conn: asyncpg.Connection, property_id: int, room_type_id: int,
                            plan: RatePlanIn | RatePlanInProperty) -> RatePlan:
    row = await conn.fetchrow(
        f"""WITH q AS (INSERT INTO rate_plans (property_id, room_type_id, name, meal_plan, min_rate, max_rate,
                                              sell_mode)
                       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *)
            SELECT {_RATE_PLAN_COLUMNS} FROM q""",
        property_id, room_type_id, plan.name, plan.mealPlan, plan.minRate, plan.maxRate,
        sell_modes.RECORD_NAMES[plan.sellMode],
    )
    return _rate_plan_of(row)


async def create_property(db: Database, body: PropertyIn, today: date) -> tuple[Property, Catalog]:
    """The property, its room types and rate plans, and its availability, in one transaction."""

    async def work(conn: asyncpg.Connection) -> tuple[Property, Catalog]:
        row = await conn.fetchrow(
            f"""INSERT INTO properties (name, timezone, currency, channel_manager, pms, pms_entitled,
                    status, owner_email, bookings_per_day, guest_confirmation)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING {_PROPERTY_COLUMNS}""",
            body.name, body.timezone, body.currency, body.products.channelManager, body.products.pms,
            body.pmsEntitled, body.status, body.ownerEmail, body.bookingsPerDay, body.guestConfirmation,
        )
        prop = property_of(row)
        rooms = [await _insert_room_type(conn, prop.id, room, today) for room in body.roomTypes]
        plans = [await _insert_rate_plan(conn, prop.id, rooms[p.roomType].id, p) for p in body.ratePlans]
        return prop, Catalog(tuple(rooms), tuple(plans))

    return await db.transaction(work)


async def mode_of(db: Database, property_id: int) -> str | None:
    """The property's mode (`live` or `test`); None when there is no such property."""
    found = await db.fetchval("SELECT mode FROM properties WHERE id = $1", property_id)
    return None if found is None else str(found)


async def get_property(db: Database, property_id: int) -> Property | None:
    row = await db.fetchrow(f"SELECT {_PROPERTY_COLUMNS} FROM properties WHERE id = $1", property_id)
    return None if row is None else property_of(row)


async def get_live_property(db: Database, property_id: int) -> Property | None:
    """A property as the operator and its owner know it: a test twin is reached only through
    its live property, never by its own id."""
    row = await db.fetchrow(f"SELECT {_PROPERTY_COLUMNS} FROM properties WHERE id = $1 AND mode = 'live'",
                            property_id)
    return None if row is None else property_of(row)


async def get_catalog(db: Database, property_id: int) -> Catalog:
    async def work(conn: asyncpg.Connection) -> Catalog:
        return await catalog_in(conn, property_id)

    return await db.run(work)


async def catalog_in(conn: asyncpg.Connection, property_id: int) -> Catalog:
    """The property's room types and rate plans, read on a connection (inside a transaction)."""
    rooms = await conn.fetch(
        f"""SELECT id, name, max_adults, max_occupancy, rooms FROM room_types
            WHERE property_id = {twins.catalog_owner("$1")} ORDER BY id""",
        property_id,
    )
    plans = await conn.fetch(
        f"""SELECT {_RATE_PLAN_COLUMNS} FROM rate_plans q
            WHERE q.property_id = {twins.catalog_owner("$1")} ORDER BY q.id""",
        property_id,
    )
    return Catalog(tuple(map(_room_type_of, rooms)), tuple(map(_rate_plan_of, plans)))


_PATCH_COLUMNS: dict[str, str] = {
    "name": "name",
    "status": "status",
    "pmsEntitled": "pms_entitled",
    "ownerEmail": "owner_email",
    "bookingsPerDay": "bookings_per_day",
    "guestConfirmation": "guest_confirmation",
}


async def patch_property(db: Database, property_id: int, patch: PropertyPatch) -> Property | None:
    sent = patch.model_dump(exclude_unset=True)
    assignments: list[str] = []
    values: list[Any] = [property_id]
    for name, value in sent.items():
        if name == "products":
            for column, key in (("channel_manager", "channelManager"), ("pms", "pms")):
                values.append(value[key])
                assignments.append(f"{column} = ${len(values)}")
        else:
            values.append(value)
            assignments.append(f"{_PATCH_COLUMNS[name]} = ${len(values)}")
    assignments.append("updated_at = now()")

    async def work(conn: asyncpg.Connection) -> Property | None:
        row = await conn.fetchrow(f"""UPDATE properties SET {', '.join(assignments)}
                                      WHERE id = $1 AND mode = 'live' RETURNING {_PROPERTY_COLUMNS}""", *values)
        if row is None:
            return None
        await twins.follow_live(conn, property_id)
        return property_of(row)

    return await db.transaction(work)


async def add_room_type(db: Database, property_id: int, body: RoomTypeIn, today: date) -> RoomType:
    return await db.transaction(lambda conn: _insert_room_type(conn, property_id, body, today))


class PlanNotSellable(Exception):
    """A rate plan that cannot be sold as asked (its message says why)."""


class RoomTypeNotInProperty(Exception):
    pass


class NotInProperty(Exception):
    """Ids named in a mapping that are not the property's."""

    def __init__(self, room_types: list[int], rate_plans: list[int]) -> None:
        super().__init__(room_types, rate_plans)
        self.room_types = room_types
        self.rate_plans = rate_plans


async def map_room_type(db: Database, room_type_id: int, cm_id: str) -> None:
    await db.execute("UPDATE room_types SET cm_id = $2 WHERE id = $1", room_type_id, cm_id)


async def map_rate_plan(db: Database, rate_plan_id: int, cm_id: str) -> None:
    await db.execute("UPDATE rate_plans SET cm_id = $2 WHERE id = $1", rate_plan_id, cm_id)


class MappingTaken(Exception):
    """A channel-manager id the mapping names is another property's already: one id maps to
    one property only (docs/decisions/0125-one-property-per-channel-id.md)."""

    def __init__(self, path: str, cm_id: str, property_id: int) -> None:
        super().__init__(path, cm_id, property_id)
        self.path = path  # `cmPropertyId`, `roomTypes.<our id>` or `ratePlans.<our id>`
        self.cm_id = cm_id
        self.property_id = property_id  # the property that holds it


async def set_channel_mapping(
    db: Database, property_id: int, cm_property_id: str, room_types: dict[int, str], rate_plans: dict[int, str]
) -> None:
    """Replace the property's mapping: ids not named lose theirs. All or nothing; MappingTaken
    when another property holds one of the channel manager's ids."""

    async def work(conn: asyncpg.Connection) -> None:
        own_rooms = {r["id"] for r in await conn.fetch("SELECT id FROM room_types WHERE property_id = $1", property_id)}
        own_plans = {r["id"] for r in await conn.fetch("SELECT id FROM rate_plans WHERE property_id = $1", property_id)}
        foreign_rooms = sorted(set(room_types) - own_rooms)
        foreign_plans = sorted(set(rate_plans) - own_plans)
        if foreign_rooms or foreign_plans:
            raise NotInProperty(foreign_rooms, foreign_plans)
        taken = await _taken(conn, property_id, cm_property_id, room_types, rate_plans)
        if taken is not None:
            raise taken
        await conn.execute("UPDATE properties SET cm_property_id = $2, updated_at = now() WHERE id = $1",
                           property_id, cm_property_id)
        await conn.execute("UPDATE room_types SET cm_id = NULL WHERE property_id = $1", property_id)
        await conn.execute("UPDATE rate_plans SET cm_id = NULL WHERE property_id = $1", property_id)
        await conn.executemany("UPDATE room_types SET cm_id = $2 WHERE id = $1", list(room_types.items()))
        await conn.executemany("UPDATE rate_plans SET cm_id = $2 WHERE id = $1", list(rate_plans.items()))

    try:
        await db.transaction(work)
    except RecordRefused as exc:
        if exc.sqlstate != UNIQUE_VIOLATION:
            raise
        # Another mapping took one of these ids between the look and the write: the unique
        # indexes (migration 0028) refused it; name the holder as the look would have.
        taken = await db.run(lambda conn: _taken(conn, property_id, cm_property_id, room_types, rate_plans))
        if taken is None:
            raise
        raise taken from None


async def _taken(conn: asyncpg.Connection, property_id: int, cm_property_id: str, room_types: dict[int, str],
                 rate_plans: dict[int, str]) -> MappingTaken | None:
    """The first of the mapping's channel-manager ids another property holds, or None."""
    holder = await conn.fetchval("SELECT id FROM properties WHERE cm_property_id = $1 AND id <> $2",
                                 cm_property_id, property_id)
    if holder is not None:
        return MappingTaken("cmPropertyId", cm_property_id, holder)
    for table, path, named in (("room_types", "roomTypes", room_types), ("rate_plans", "ratePlans", rate_plans)):
        ours = {cm_id: ident for ident, cm_id in named.items()}
        row = await conn.fetchrow(
            f"""SELECT cm_id, property_id FROM {table} WHERE cm_id = ANY($1::text[]) AND property_id <> $2
                ORDER BY cm_id LIMIT 1""", list(ours), property_id)
        if row is not None:
            return MappingTaken(f"{path}.{ours[row['cm_id']]}", row["cm_id"], row["property_id"])
    return None


async def add_rate_plan(db: Database, property_id: int, body: RatePlanIn) -> RatePlan:
    """RoomTypeNotInProperty, or PlanNotSellable (a per-person plan on a room type for more
    adults than Channex prices)."""
    async def work(conn: asyncpg.Connection) -> RatePlan:
        room = await conn.fetchrow("SELECT property_id, max_adults FROM room_types WHERE id = $1", body.roomTypeId)
        if room is None or room["property_id"] != property_id:
            raise RoomTypeNotInProperty(body.roomTypeId)
        why = per_person_too_large(body.sellMode, room["max_adults"])
        if why is not None:
            raise PlanNotSellable(why)
        return await _insert_rate_plan(conn, property_id, body.roomTypeId, body)

    return await db.transaction(work)


@dataclass(frozen=True, slots=True)
class ChannelIds:
    """The channel manager's ids for a property and its catalog; None where unmapped."""

    property_id: str | None
    currency: str
    room_types: dict[int, str]
    rate_plans: dict[int, str]
    timezone: str = "UTC"
    # When the property's pipe may call again after a failure (pushes.next_attempt), read
    # here too: a push round reads this once.
    next_attempt_at: datetime | None = None
    failures: int = 0  # failed calls in a row: the next failure's pause doubles on from them
    # `test`: a test twin, whose ids are its live property's and whose calls go to the test
    # sandbox only (docs/decisions/0115-test-mode-twins.md).
    mode: str = "live"
    # The mapped plans sold per person, with the adult counts each is priced for.
    occupancies: dict[int, list[int]] = field(default_factory=dict)


async def channel_ids(db: Database, property_id: int) -> ChannelIds | None:
    """One statement: every push round reads it."""
    # A test twin answers its live property's ids (`l`), with its own pause (`p`).
    row = await db.fetchrow(
        """SELECT l.cm_property_id, p.currency, p.timezone, p.cm_next_attempt_at, p.cm_failures, p.mode,
                  (SELECT array_agg(r.id ORDER BY r.id) FROM room_types r
                   WHERE r.property_id = l.id AND r.cm_id IS NOT NULL) AS room_ids,
                  (SELECT array_agg(r.cm_id ORDER BY r.id) FROM room_types r
                   WHERE r.property_id = l.id AND r.cm_id IS NOT NULL) AS room_cm_ids,
                  (SELECT array_agg(r.id ORDER BY r.id) FROM rate_plans r
                   WHERE r.property_id = l.id AND r.cm_id IS NOT NULL) AS plan_ids,
                  (SELECT array_agg(r.cm_id ORDER BY r.id) FROM rate_plans r
                   WHERE r.property_id = l.id AND r.cm_id IS NOT NULL) AS plan_cm_ids,
                  (SELECT array_agg(CASE WHEN r.sell_mode = 'per_person' THEN t.max_adults END ORDER BY r.id)
                   FROM rate_plans r JOIN room_types t ON t.id = r.room_type_id
                   WHERE r.property_id = l.id AND r.cm_id IS NOT NULL) AS plan_most_adults
           FROM properties p JOIN properties l ON l.id = coalesce(p.twin_of, p.id)
           WHERE p.id = $1""", property_id)
    if row is None:
        return None
    per_person = {plan: sell_modes.occupancies(sell_modes.PER_PERSON, most)
                  for plan, most in zip(row["plan_ids"] or [], row["plan_most_adults"] or [], strict=True)
                  if most is not None}
    return ChannelIds(row["cm_property_id"], row["currency"], dict(zip(row["room_ids"] or [], row["room_cm_ids"] or [])),
                      dict(zip(row["plan_ids"] or [], row["plan_cm_ids"] or [])), row["timezone"],
                      row["cm_next_attempt_at"], row["cm_failures"], row["mode"], per_person)


async def properties_with_dirty_cells(db: Database, now: datetime) -> list[int]:
    """Properties with cells to push: dirty, refused ones once their retry is due."""
    rows = await db.fetch(
        f"""SELECT c.property_id FROM availability_cells c WHERE {pushable("availability_cells", "c", "$1")}
            UNION SELECT c.property_id FROM rate_cells c WHERE {pushable("rate_cells", "c", "$1")}
            UNION SELECT c.property_id FROM restriction_cells c WHERE {pushable("restriction_cells", "c", "$1")}""",
        now)
    return sorted(r["property_id"] for r in rows)
