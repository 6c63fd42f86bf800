"""The channel manager's feed treated as input (issue 41): a channel-manager id maps to one
property only, a revision is screened before anything is locked or written, a clash of ids
is kept for review, and no revision holds a property or the intake's round for long. The
feed is the project's sandbox channel manager, served on a real port, fed raw revisions."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Literal, cast

import pytest

from connectapi.actors.booking_intake import APPLY_TRIES
from connectapi.actors.messages.property_writer import OTA_APPLY_WITHIN
from connectapi.actors.ota_writer import LOCK_WAIT
from connectapi.channel.sandbox.bookings import Stay
from connectapi.channel.sandbox.revision import Guest, Revision
from connectapi.storage.database import Database, RecordRefused
from connectapi.storage.migrations import bundled_migrations
from .harness import API, Harness, eventually, held_elsewhere
from .test_ota_bookings import CM_ONLY, NOTIFY_SECRET, cm_ids, events_of, hooked_property, ota_booking, revisions
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


async def test_the_migration_unmaps_every_property_sharing_an_id_and_tells_their_owners(db: Database) -> None:
    """Pairs a version before this one let in: which of two is right cannot be told (the
    first made may be the one that copied), so neither keeps a mapping; a property sharing
    nothing keeps its own."""
    await db.execute("""DROP INDEX properties_cm_property_id; DROP INDEX room_types_cm_id; DROP INDEX rate_plans_cm_id;
        CREATE UNIQUE INDEX room_types_cm_id ON room_types (property_id, cm_id) WHERE cm_id IS NOT NULL;
        CREATE UNIQUE INDEX rate_plans_cm_id ON rate_plans (property_id, cm_id) WHERE cm_id IS NOT NULL""")
    ids = []
    # Copy took First's property id; Plan shares only a rate plan id with First.
    for name, cm_property, cm_room, cm_plan in (("First", "cm-p", "cm-room", "cm-plan"),
                                                ("Copy", "cm-p", "cm-copy-room", "cm-copy-plan"),
                                                ("Plan", "cm-plan-p", "cm-plan-room", "cm-plan"),
                                                ("Own", "cm-own", "cm-own-room", "cm-own-plan")):
        prop = await db.fetchval(
            """INSERT INTO properties (name, timezone, currency, channel_manager, pms, cm_property_id, owner_email)
               VALUES ($1, 'Europe/Lisbon', 'EUR', true, false, $2, $3) RETURNING id""",
            name, cm_property, f"{name.lower()}@example.com")
        room = await db.fetchval("INSERT INTO room_types (property_id, name, max_adults, max_occupancy, rooms, cm_id) "
                                 "VALUES ($1, 'Double', 2, 2, 4, $2) RETURNING id", prop, cm_room)
        await db.execute("INSERT INTO rate_plans (property_id, room_type_id, name, meal_plan, cm_id) "
                         "VALUES ($1, $2, 'Flex', 'RO', $3)", prop, room, cm_plan)
        ids.append(prop)
    [migration] = [m for m in bundled_migrations() if m.name == "one_property_per_channel_id"]
    await db.transaction(lambda conn: conn.execute(migration.sql))
    held = {r["id"]: (r["cm_property_id"], r["room"], r["plan"]) for r in await db.fetch(
        """SELECT p.id, p.cm_property_id, r.cm_id AS room, q.cm_id AS plan FROM properties p
           JOIN room_types r ON r.property_id = p.id JOIN rate_plans q ON q.property_id = p.id""")}
    assert held == {ids[0]: (None, None, None), ids[1]: (None, None, None), ids[2]: (None, None, None),
                    ids[3]: ("cm-own", "cm-own-room", "cm-own-plan")}
    told = await db.fetch("SELECT property_id, kind, to_address FROM notifications ORDER BY property_id")
    assert [tuple(r) for r in told] == [(ids[0], "channel.unmapped", "first@example.com"),
                                        (ids[1], "channel.unmapped", "copy@example.com"),
                                        (ids[2], "channel.unmapped", "plan@example.com")]


# --- 1 and 4. A revision screened before anything is locked or written -------------------------

GUEST: Guest = {"name": "Ana", "surname": "Lima", "mail": "ana@example.com", "phone": "+351 912 345 678", "country": "PT"}


def offered(api: Harness, prop: dict[str, Any], change: Callable[[dict[str, Any]], None] = lambda r: None,
            check_in: date = date(2026, 12, 10), check_out: date = date(2026, 12, 12)) -> Revision:
    """A new revision for `prop`'s first room type and plan in the sandbox's feed, as Channex
    documents one, then changed by `change` (made hostile) before the intake can read it:
    nothing here awaits between the two."""
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    cm = cm_ids(api, prop)
    made = sandbox.bookings.new(Stay(cm[0], cm[1], cm[1 + len(prop["roomTypes"])], check_in, check_out, 2, 0,
                                     GUEST.copy(), Decimal("240.00"), "EUR", "BookingCom"), api.ctx.clock.now())
    change(cast("dict[str, Any]", made))  # made hostile: any JSON, whatever its type says
    return made


def stay(arrival: str, departure: str) -> Callable[[dict[str, Any]], None]:
    def change(revision: dict[str, Any]) -> None:
        revision["arrival_date"], revision["departure_date"] = arrival, departure
        revision["rooms"][0]["checkin_date"], revision["rooms"][0]["checkout_date"] = arrival, departure
    return change


async def settled_as(api: Harness, prop: dict[str, Any], count: int) -> list[tuple[str, str]]:
    """(state, note) of the property's `count` revisions, oldest first, once each is settled
    and acknowledged."""
    return [(r["state"], r["note"]) for r in reversed(await revisions(api, prop, count))]


def revised(api: Harness, earlier: Revision, ident: str, *, status: Literal["modified", "cancelled"] | None = None,
            under: dict[str, Any] | None = None, later: bool = False) -> Revision:
    """`earlier`'s booking revised: a copy under a new id and system id (`ident`), of
    `status`, naming `under`'s channel ids when given, dated after it when `later`; put in
    the sandbox's feed, and the intake woken."""
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    made = copy.deepcopy(earlier)
    made["id"] = made["revision_id"] = ident
    made["system_id"] = f"{earlier['system_id']}-{ident}"
    if status is not None:
        made["status"] = status
    if under is not None:
        theirs = cm_ids(api, under)
        made["property_id"] = theirs[0]
        made["rooms"][0]["room_type_id"] = theirs[1]
        made["rooms"][0]["rate_plan_id"] = theirs[1 + len(under["roomTypes"])]
    if later:
        made["inserted_at"] = earlier["inserted_at"][:-6] + "999999"
    sandbox.bookings.revisions[ident] = made
    api.ctx.properties.wakeups.revisions_waiting()
    return made


async def nothing_written_for(api: Harness, prop: dict[str, Any]) -> None:
    db = api.ctx.db
    assert await db.fetchval("SELECT count(*) FROM bookings WHERE property_id = $1", prop["id"]) == 0
    assert await db.fetchval("SELECT count(*) FROM inventory_events WHERE property_id = $1", prop["id"]) == 0
    assert await db.fetchval("SELECT count(*) FROM webhook_events WHERE property_id = $1 AND type LIKE 'channel.%'",
                             prop["id"]) == 0
    # The cells a new property starts with, and none more.
    assert await db.fetchval(
        """SELECT count(*) FROM availability_cells c JOIN room_types r ON r.id = c.room_type_id
           WHERE c.property_id = $1 AND (c.available <> r.rooms OR c.night > DATE '2026-11-22' + 366)""",
        prop["id"]) == 0


async def test_stays_a_property_cannot_hold_are_refused_kept_told_and_acknowledged(api: Harness,
                                                                                   receiver: Receiver) -> None:
    prop, _ = await hooked_property(api, receiver)  # with the PMS: a stay applied would take its rooms
    hostile = [stay("2026-12-01", "3026-12-01"), stay("9999-12-01", "9999-12-03"), stay("0001-01-01", "0001-01-03"),
               stay("2026-12-01", "2126-12-01"), stay("2026-12-01", "2027-03-02")]
    for change in hostile:
        offered(api, prop, change)
    settled = await settled_as(api, prop, len(hostile))
    assert [state for state, _ in settled] == ["refused"] * len(hostile)
    assert [note for _, note in settled] == [
        "its stay of 365,242 nights is longer than 90", "its arrival 9999-12-01 is past the horizon (2027-12-22)",
        "its arrival 0001-01-01 is more than a year ago", "its stay of 36,524 nights is longer than 90",
        "its stay of 91 nights is longer than 90"]
    await nothing_written_for(api, prop)
    told = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.unapplied"] * len(hostile)
    assert api.ctx.channel.sandbox is not None and api.ctx.channel.sandbox.bookings.feed(None) == []
    # The longest stay the contract takes, at the edges of the window, is applied.
    offered(api, prop, stay("2027-12-22", "2028-03-21"))
    offered(api, prop, stay("2025-11-22", "2025-11-23"))
    assert [state for state, _ in await settled_as(api, prop, len(hostile) + 2)][-2:] == ["applied", "applied"]


async def test_rooms_and_amounts_a_property_cannot_hold_are_refused(api: Harness, receiver: Receiver) -> None:
    prop, _ = await hooked_property(api, receiver)  # its first room type has 8 rooms

    def rooms(count: int) -> Callable[[dict[str, Any]], None]:
        return lambda revision: revision.update(rooms=[copy.deepcopy(revision["rooms"][0]) for _ in range(count)])

    def amount(value: str, where: str = "booking") -> Callable[[dict[str, Any]], None]:
        def change(revision: dict[str, Any]) -> None:
            (revision if where == "booking" else revision["rooms"][0])["amount"] = value
        return change

    hostile = [rooms(10_000), rooms(9), rooms(101), amount("-500.00"), amount("-1.00", "room"), amount("1e12"),
               amount("NaN"), amount("Infinity", "room")]
    for change in hostile:
        offered(api, prop, change)
    settled = await settled_as(api, prop, len(hostile))
    assert [state for state, _ in settled] == ["refused"] * len(hostile)
    assert settled[0][1].startswith("it was too large to keep whole: rooms (10,000 items), the revision (")
    assert [note for _, note in settled[1:]] == [
        "it sells 9 rooms of a room type the property has 8 of",
        "it sells 101 rooms, more than 100 in one booking",
        "a negative amount (-500.00)", "a negative amount (-1.00)", "an amount of ten or more integer digits",
        "an amount that is not a number", "an amount that is not a number"]
    await nothing_written_for(api, prop)
    # What is kept for review is bounded too, and the cuts recorded.
    [kept] = [r for r in await revisions(api, prop, len(hostile)) if r["cut"]]
    assert kept["cut"][0] == "rooms (10,000 items)" and kept["cut"][1].startswith("the revision (")
    assert await api.ctx.db.fetchval("SELECT max(length(payload::text)) FROM ota_revisions") < 1_000_000


async def test_oversized_guest_fields_are_cut_recorded_and_the_webhook_stays_small(api: Harness,
                                                                                   receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver)

    def hostile(revision: dict[str, Any]) -> None:
        revision["customer"].update(mail="a" * 200_000 + "@example.com", phone="9" * 100_000, country="P" * 100_000,
                                    name="N" * 500, address="x" * 50_000)
    offered(api, prop, hostile)
    [(state, note)] = await settled_as(api, prop, 1)
    assert state == "applied"
    # Read from what was kept: its strings at most 4,000 characters (the cuts below).
    assert note == ("guest name cut (505 characters); guest e-mail dropped (4,000 characters, not an address); "
                    "guest phone dropped (4,000 characters, not a number); "
                    "guest country dropped (4,000 characters, not a two-letter code); "
                    "guest address cut (4,000 characters)")
    [kept] = await revisions(api, prop, 1)
    assert kept["cut"] == ["customer.mail (200,012 characters)", "customer.phone (100,000 characters)",
                           "customer.country (100,000 characters)", "customer.address (50,000 characters)"]
    assert (await events_of(receiver, secret, 2))[1]["type"] == "channel.booking.created"
    headers, body = receiver.received[1]
    assert len(body) < 10_000
    booking = json.loads(body)["data"]["booking"]
    assert booking["guest"] == {"name": "N" * 199 + "…", "email": None, "phone": None, "country": None,
                                "language": None, "company": None,
                                "address": {"line": "x" * 199 + "…", "city": None, "zip": None, "country": None}}
    assert await api.ctx.db.fetchval("SELECT max(length(payload::text)) FROM ota_revisions") < 30_000


# --- 3. Clashing ids are kept, never dropped ------------------------------------------------------

async def test_a_revision_reusing_another_propertys_revision_id_is_kept_and_told(api: Harness,
                                                                                 receiver: Receiver) -> None:
    first, secret = await hooked_property(api, receiver, **CM_ONLY)
    second = await api.create_property(name="Another Hotel", **CM_ONLY)
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    applied = offered(api, first)
    [(state, _)] = await settled_as(api, first, 1)
    assert state == "applied"
    # The second hotel's revision comes under the id of the first's, applied and acknowledged.
    theirs = offered(api, second, check_in=date(2026, 12, 20), check_out=date(2026, 12, 21))
    del sandbox.bookings.revisions[theirs["id"]]
    theirs["id"] = theirs["revision_id"] = applied["id"]
    sandbox.bookings.revisions[applied["id"]] = theirs
    sandbox.bookings.acked.discard(applied["id"])
    api.ctx.properties.wakeups.revisions_waiting()
    [(state, note)] = await settled_as(api, second, 1)
    assert state == "refused"
    assert note == ("its id or system id is an earlier revision's, of another booking or property: kept for review, "
                    "not applied")
    [kept] = await revisions(api, second, 1)
    assert kept["clash"] and kept["acknowledged"] and kept["revisionId"] == applied["id"]
    assert sandbox.bookings.feed(None) == []
    told = (await api.admin("GET", f"/properties/{second['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.unapplied"]
    # The first hotel's revision and booking are as they were; nothing reached the second's.
    assert [(r["state"], r["clash"]) for r in await revisions(api, first, 1)] == [("applied", False)]
    assert await api.ctx.db.fetchval("SELECT count(*) FROM bookings WHERE property_id = $1", second["id"]) == 0
    assert len([event for event in await events_of(receiver, secret, 2)]) == 2 and len(receiver.received) == 2
    # Offered again (our acknowledgement lost), it is the same clash, not another.
    sandbox.bookings.acked.discard(applied["id"])
    api.ctx.properties.wakeups.revisions_waiting()
    await eventually(lambda: not sandbox.bookings.feed(None), "the clash acknowledged again")
    assert await api.ctx.db.fetchval("SELECT count(*) FROM ota_revisions WHERE id = $1", applied["id"]) == 2


async def test_a_booking_of_one_property_revised_under_another_is_kept_and_never_made_there(
        api: Harness, receiver: Receiver) -> None:
    # An outside review: a booking applied at the first hotel, then a revision of the same
    # channel-manager booking (new id, new system id) naming the second hotel. Made there,
    # the first hotel's guest would reach the second's owner and integrator (decision 0149).
    first, secret = await hooked_property(api, receiver, **CM_ONLY)
    second = await api.create_property(name="Another Hotel", **CM_ONLY)
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    earlier = offered(api, first)
    assert [state for state, _ in await settled_as(api, first, 1)] == ["applied"]
    moved = revised(api, earlier, "moved-to-another-property", status="modified", under=second)
    [(state, note)] = await settled_as(api, second, 1)
    assert state == "refused"
    assert note == ("its booking is another property's (the channel manager's booking id is known there): kept for "
                    "review, not applied")
    [kept] = await revisions(api, second, 1)
    assert kept["clash"] and kept["acknowledged"]
    assert await api.ctx.db.fetchval("SELECT count(*) FROM bookings WHERE property_id = $1", second["id"]) == 0
    told = (await api.admin("GET", f"/properties/{second['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.unapplied"]
    # The first hotel's booking is as it was, its guest told to its receiver alone.
    assert [(r["state"], r["clash"]) for r in await revisions(api, first, 1)] == [("applied", False)]
    assert len(await events_of(receiver, secret, 2)) == 2 and len(receiver.received) == 2
    # Offered again (our acknowledgement lost), it is the same clash, not another.
    sandbox.bookings.acked.discard(moved["id"])
    api.ctx.properties.wakeups.revisions_waiting()
    await eventually(lambda: not sandbox.bookings.feed(None), "the clash acknowledged again")
    assert await api.ctx.db.fetchval("SELECT count(*) FROM ota_revisions WHERE id = $1", moved["id"]) == 1
    # A revision of the first hotel's own booking still applies there.
    revised(api, earlier, "the-first-hotels-cancellation", status="cancelled", later=True)
    assert [state for state, _ in await settled_as(api, first, 2)] == ["applied", "applied"]


async def test_a_revision_kept_here_offered_again_after_its_booking_went_elsewhere_is_no_new_clash(
        api: Harness, receiver: Receiver) -> None:
    first, _ = await hooked_property(api, receiver, **CM_ONLY)
    second = await api.create_property(name="Another Hotel", **CM_ONLY)
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    kept = offered(api, first, lambda r: r["rooms"][0].update(room_type_id="a-room-type-nobody-mapped"))
    assert [state for state, _ in await settled_as(api, first, 1)] == ["unmapped"]
    revised(api, kept, "applied-at-the-other-hotel", under=second)
    assert [state for state, _ in await settled_as(api, second, 1)] == ["applied"]
    # The first hotel's revision offered again (our acknowledgement lost): the same one, kept.
    sandbox.bookings.acked.discard(kept["id"])
    api.ctx.properties.wakeups.revisions_waiting()
    await eventually(lambda: not sandbox.bookings.feed(None), "acknowledged again")
    assert await api.ctx.db.fetchval("SELECT count(*) FROM ota_revisions WHERE id = $1", kept["id"]) == 1
    told = (await api.admin("GET", f"/properties/{first['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.unapplied"]


async def test_a_revision_dated_far_ahead_is_kept_for_review_and_the_cancellation_still_counts(
        api: Harness, receiver: Receiver) -> None:
    # An outside review: a `new` dated in the year 8999 was applied, and every later revision
    # of its booking was older than it: the cancellation changed nothing, the rooms stayed
    # taken and no event was sent (decision 0150).
    prop, secret = await hooked_property(api, receiver)  # with the PMS: the booking takes rooms
    made = offered(api, prop, lambda r: r.update(inserted_at="8999-01-01T00:00:00.000000"))
    [(state, note)] = await settled_as(api, prop, 1)
    assert state == "refused" and note.startswith("its inserted_at is ") and "days ahead" in note, note
    await nothing_written_for(api, prop)
    told = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.unapplied"]
    # The OTA's cancellation, dated as Channex dates it, is the booking as the record knows it.
    cancelled = await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings/"
                                        f"{made['ota_reservation_code']}/cancel")
    assert cancelled.status == 200, cancelled.body
    assert [state for state, _ in await settled_as(api, prop, 2)] == ["refused", "applied"]
    assert await api.ctx.db.fetchval("SELECT status FROM bookings WHERE property_id = $1", prop["id"]) == "CANCELLED"
    assert await api.ctx.db.fetchval("SELECT count(*) FROM inventory_events WHERE property_id = $1",
                                     prop["id"]) == 0  # no room was ever taken
    assert [event["type"] for event in await events_of(receiver, secret, 2)][-1] == "channel.booking.cancelled"
    # Within the hour ahead a channel manager's clock may run, a revision applies as dated.
    soon = (api.ctx.clock.now() + timedelta(minutes=30)).replace(tzinfo=None).isoformat()
    offered(api, prop, lambda r: r.update(inserted_at=soon), check_in=date(2026, 12, 20), check_out=date(2026, 12, 21))
    assert [state for state, _ in await settled_as(api, prop, 3)][-1] == "applied"


async def test_an_amount_whose_digits_were_cut_to_keep_the_revision_refuses_it(api: Harness,
                                                                               receiver: Receiver) -> None:
    # An outside review: "000…0240.00" cut at 4,000 characters was applied as 0.00.
    prop, _ = await hooked_property(api, receiver, **CM_ONLY)
    padded = "0" * 4100 + "240.00"

    def hostile(r: dict[str, Any]) -> None:
        r["amount"] = r["rooms"][0]["amount"] = padded
    offered(api, prop, hostile)
    [(state, note)] = await settled_as(api, prop, 1)
    assert state == "refused" and note.startswith("it was too large to keep whole: "), note
    assert "4,106 digits" in note
    await nothing_written_for(api, prop)


async def test_a_booking_in_another_currency_than_the_propertys_is_applied_noted_and_told(
        api: Harness, receiver: Receiver) -> None:
    # An outside review: a EUR hotel's OTA booking in USD was applied with no word to anyone.
    # Applied (its rooms are sold: refusing it would risk an overbooking), told as sent, the
    # note and the owner saying so (decision 0153).
    prop, secret = await hooked_property(api, receiver, **CM_ONLY)  # EUR
    offered(api, prop, lambda r: r.update(currency="USD"))
    [(state, note)] = await settled_as(api, prop, 1)
    assert state == "applied" and "its amounts are in USD, the property's currency is EUR" in (note or ""), note
    told = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.amounts"]
    booking = (await events_of(receiver, secret, 2))[1]["data"]["booking"]
    assert booking["amounts"]["currency"] == "USD"


async def test_a_new_revision_repeating_another_bookings_system_id_is_kept_and_told(api: Harness,
                                                                                    receiver: Receiver) -> None:
    prop, _ = await hooked_property(api, receiver, **CM_ONLY)
    earlier = offered(api, prop)
    await settled_as(api, prop, 1)
    offered(api, prop, lambda r: r.update(system_id=earlier["system_id"]), check_in=date(2026, 12, 20),
            check_out=date(2026, 12, 21))
    settled = await settled_as(api, prop, 2)
    assert [state for state, _ in settled] == ["applied", "refused"]
    assert [r["clash"] for r in reversed(await revisions(api, prop, 2))] == [False, True]
    assert await api.ctx.db.fetchval("SELECT count(*) FROM bookings WHERE property_id = $1", prop["id"]) == 1
    # The same booking's revision offered again under a new id is a repeat, as before: no clash.
    again = earlier.copy()
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    again["id"] = again["revision_id"] = "a-new-id-for-the-same-revision"
    sandbox.bookings.revisions[again["id"]] = again
    api.ctx.properties.wakeups.revisions_waiting()
    await eventually(lambda: not sandbox.bookings.feed(None), "the repeat acknowledged")
    assert await api.ctx.db.fetchval("SELECT count(*) FROM ota_revisions WHERE property_id = $1", prop["id"]) == 2


# --- 1. No revision holds its property, or another property's, for long ----------------------------

async def test_a_slow_revision_holds_up_no_other_property_and_is_refused_after_its_tries(api: Harness,
                                                                                          receiver: Receiver) -> None:
    slow = await api.create_property(**CM_ONLY)
    other, secret = await hooked_property(api, receiver, name="Another Hotel", **CM_ONLY)
    # Injected: the slow property's bookings take far longer than any apply may.
    await api.ctx.db.execute(f"""CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN IF NEW.property_id = {slow['id']} THEN PERFORM pg_sleep(20); END IF; RETURN NEW; END $$""")
    await api.ctx.db.execute("CREATE TRIGGER stall BEFORE INSERT ON bookings FOR EACH ROW EXECUTE FUNCTION stall()")
    offered(api, slow)
    offered(api, other)
    # The other hotel's booking is applied and told while the slow one's apply is stuck.
    created = (await events_of(receiver, secret, 2))[1]
    assert created["property"]["id"] == other["id"] and created["type"] == "channel.booking.created"
    # Each try of the slow one is rolled back once past its time, and the property's lock with
    # it (the record ends the statement of a client gone): the next try takes the lock again.
    async def stalled() -> bool:
        return bool(await api.ctx.db.fetchval("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"))

    for tries in range(1, APPLY_TRIES + 1):
        await eventually(stalled, f"try {tries} stalled")
        api.advance(OTA_APPLY_WITHIN + 1)
        await eventually(lambda: api.ctx.db.fetchval("SELECT attempts = $2 OR state <> 'received' FROM ota_revisions "
                                                     "WHERE property_id = $1", slow["id"], tries),
                         f"try {tries} rolled back")
        api.ctx.properties.wakeups.revisions_waiting()  # the next round, if the intake has not begun it
    [(state, note)] = await settled_as(api, slow, 1)
    assert (state, note) == ("refused", f"it could not be applied in {APPLY_TRIES} tries (its apply ran past "
                                        f"{OTA_APPLY_WITHIN:g} s and was rolled back)")
    assert await api.ctx.db.fetchval("SELECT count(*) FROM bookings WHERE property_id = $1", slow["id"]) == 0
    told = (await api.admin("GET", f"/properties/{slow['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.unapplied"]
    assert not await stalled()


async def test_waiting_for_the_propertys_lock_is_no_try_of_the_revisions(
        api: Harness, receiver: Receiver, db_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    prop, secret = await hooked_property(api, receiver, **CM_ONLY)

    def gave_way() -> int:
        return caplog.text.count("waits for its property's lock")

    async def waiting() -> int:
        return int(await api.ctx.db.fetchval("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"))

    async def waiting_none() -> bool:
        return await waiting() == 0

    async def round_waiting(round_: int) -> None:
        """The intake's next round waiting for the lock. A round that gave way may still be
        finishing (acknowledgements) when its wait has ended: its next is due a sweep after
        it ends, so the clock goes on in steps until a round waits, never past one's wait."""
        if round_:
            api.advance(60.0)  # a sweep: the next round, when the last had ended by now
        for _ in range(20):
            with contextlib.suppress(AssertionError):
                await eventually(waiting, f"round {round_} waiting", seconds=2.0)
                return
            api.advance(5.0)  # less than LOCK_WAIT: never past a wait begun meanwhile
        raise AssertionError(f"round {round_} never waited for the lock")

    async with held_elsewhere(db_dsn, ("SELECT 1 FROM properties WHERE id = $1 FOR NO KEY UPDATE",
                                       (prop["id"],))) as held:
        offered(api, prop)
        for round_ in range(APPLY_TRIES + 1):  # more rounds than a revision has tries
            await round_waiting(round_)
            api.advance(LOCK_WAIT + 1)
            await eventually(lambda: gave_way() > round_, f"round {round_} giving way")
            await eventually(waiting_none, "the abandoned wait ended by the record")
        assert await api.ctx.db.fetchval("SELECT attempts || state FROM ota_revisions") == "0received"
        await held.rollback()
    api.ctx.properties.wakeups.revisions_waiting()
    [(state, _)] = await settled_as(api, prop, 1)
    assert state == "applied"
    assert (await events_of(receiver, secret, 2))[1]["type"] == "channel.booking.created"


async def test_a_revision_whose_instant_is_off_the_calendar_is_left_and_the_others_go_on(
        api: Harness, receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    prop, secret = await hooked_property(api, receiver, **CM_ONLY)
    odd = offered(api, prop, lambda r: r.update(inserted_at="0001-01-01T00:00:00+14:00"))
    offered(api, prop, check_in=date(2026, 12, 20), check_out=date(2026, 12, 21))
    [(state, _)] = await settled_as(api, prop, 1)
    assert state == "applied"
    assert (await events_of(receiver, secret, 2))[1]["data"]["booking"]["stay"]["checkIn"] == "2026-12-20"
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None and [r["id"] for r in sandbox.bookings.feed(None)] == [odd["id"]]
    assert "inserted_at in the year" in caplog.text or "no readable inserted_at" in caplog.text


async def test_a_number_no_one_can_hold_fails_its_revision_alone(api: Harness, receiver: Receiver) -> None:
    """NaN in one revision of a feed page made the page, and every revision on it, unreadable
    round after round; a number of thousands of digits (over 4,300: the same) is read as the
    item's own problem too."""
    prop, secret = await hooked_property(api, receiver, **CM_ONLY)
    offered(api, prop, lambda r: r["rooms"][0]["occupancy"].update(adults=float("nan")))
    offered(api, prop, lambda r: r["rooms"][0]["occupancy"].update(children=10**4000), check_in=date(2026, 12, 14),
            check_out=date(2026, 12, 15))
    offered(api, prop, check_in=date(2026, 12, 20), check_out=date(2026, 12, 21))
    settled = await settled_as(api, prop, 3)
    assert [state for state, _ in settled] == ["refused", "refused", "applied"]
    # Kept as text, its digits cut: nothing can be read from it (decision 0152).
    assert settled[1][1] == "it was too large to keep whole: rooms[0].occupancy.children (4,001 digits)"
    assert (await events_of(receiver, secret, 2))[1]["data"]["booking"]["stay"]["checkIn"] == "2026-12-20"


async def test_the_same_system_id_under_a_new_id_saying_something_else_is_a_clash(api: Harness,
                                                                                  receiver: Receiver) -> None:
    prop, _ = await hooked_property(api, receiver, **CM_ONLY)
    earlier = offered(api, prop)
    await settled_as(api, prop, 1)
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    other = copy.deepcopy(earlier)
    other["id"] = other["revision_id"] = "the-same-system-id-another-amount"
    other["amount"] = other["rooms"][0]["amount"] = "1.00"
    sandbox.bookings.revisions[other["id"]] = other
    api.ctx.properties.wakeups.revisions_waiting()
    assert [(r["state"], r["clash"]) for r in await revisions(api, prop, 2)] == [("refused", True),
                                                                                 ("applied", False)]
    assert await api.ctx.db.fetchval("SELECT total_minor FROM bookings WHERE property_id = $1", prop["id"]) == 24000
    # An operator who finds it genuine has it applied: the booking says what it says now.
    again = await api.admin("POST", f"/properties/{prop['id']}/ota-revisions/{other['id']}/apply")
    assert again.status == 202, again.body
    await eventually(lambda: api.ctx.db.fetchval(
        "SELECT total_minor = 100 FROM bookings WHERE property_id = $1", prop["id"]), "the clash applied")


# --- 6. Small ones ------------------------------------------------------------------------------

async def test_the_admin_sandbox_routes_refuse_a_test_twins_id(api: Harness, receiver: Receiver) -> None:
    prop, _ = await hooked_property(api, receiver)
    test_key = (await api.create_key(prop["id"], ["ari:read"], mode="test"))["key"]
    assert (await api.call("GET", f"{API}/property", key=test_key)).status == 200  # its test record made
    twin = await api.ctx.db.fetchval("SELECT id FROM properties WHERE twin_of = $1", prop["id"])
    assert twin is not None
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    body = {"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"],
            "checkIn": "2026-12-10", "checkOut": "2026-12-12", "adults": 2,
            "guest": {"name": "Ana", "surname": "Lima", "email": "ana@example.com"}, "amount": "240.00"}
    for path, sent in ((f"/properties/{twin}/sandbox/ota-bookings", body),
                       (f"/properties/{twin}/sandbox/ota-bookings/123/modify", {"adults": 1}),
                       (f"/properties/{twin}/sandbox/ota-bookings/123/cancel", None)):
        refused = await api.admin("POST", path, sent)
        assert (refused.status, refused.code) == (404, "PROPERTY_NOT_FOUND"), path
    assert (await api.admin("GET", f"/properties/{twin}/channel-grid")).code == "PROPERTY_NOT_FOUND"
    assert sandbox.bookings.revisions == {}
    # The live property's own id still makes one.
    assert (await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings", body)).status == 201


async def test_booking_ids_and_references_tell_nothing_of_other_properties(api: Harness) -> None:
    keys = {}
    props = []
    for name in ("First", "Second"):
        prop = await api.create_property(name=name)
        props.append(prop)
        keys[prop["id"]] = (await api.create_key(prop["id"], ["bookings:read", "bookings:write"]))["key"]
        keys[-prop["id"]] = (await api.create_key(prop["id"], ["bookings:read", "bookings:write"], mode="test"))["key"]
    made: list[dict[str, Any]] = []
    # Interleaved, live and test: each property's references count its own bookings only.
    for n in range(3):
        for prop in props:
            for key in (keys[prop["id"]], keys[-prop["id"]]):
                answer = await api.call("POST", f"{API}/bookings", key=key, body={
                    "externalReference": f"WEB-{n}", "checkIn": "2026-12-01", "checkOut": "2026-12-02",
                    "currency": "EUR", "guest": {"name": "Ana Silva", "phone": "+351 912 345 678"},
                    "rooms": [{"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"],
                               "adults": 2, "nightlyRate": "100.00"}]})
                assert answer.status == 201, answer.body
                made.append(answer.data)
    twins = [r["id"] for r in await api.ctx.db.fetch("SELECT id FROM properties WHERE mode = 'test'")]
    assert len(twins) == 2
    for prop in props:
        for kind in ("PMS", "TEST"):
            mine = [b["reference"] for b in made if b["reference"].startswith(f"{kind}-{prop['id']}-")]
            assert mine == [f"{kind}-{prop['id']}-{n:06d}" for n in (1, 2, 3)]
    assert not any(f"-{twin}-" in b["reference"] for b in made for twin in twins)
    # Ids from a keyed permutation: unrelated from one booking to the next, exact in JavaScript.
    ids = [b["bookingId"] for b in made] + [room["bookingRoomId"] for b in made for room in b["rooms"]]
    assert all(2**32 <= i < 2**53 for i in ids) and len(set(ids)) == len(ids)
    assert min(abs(a - b) for a, b in zip(ids, ids[1:])) > 2**20
    assert sorted(ids[:len(made)]) != ids[:len(made)]  # not in the order they were made (1 in 12! by chance)
