"""OTA bookings from the sandbox channel manager's feed to signed webhooks at a real receiver,
and into the PMS inventory, on the mock clock."""

from __future__ import annotations

import json
import logging
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from connectapi.channel.sandbox.bookings import Stay
from connectapi.channel.sandbox.revision import Guest, Revision
from connectapi.domain.webhook_contract import ENVELOPE_SCHEMA
from .harness import API, Harness, eventually
from .test_pipeline import settled
from .webhook_receiver import Receiver, signed_by

NOTIFY_SECRET = "notify-secret-for-tests"
ENVELOPE = Draft202012Validator(ENVELOPE_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
CM_ONLY = {"products": {"channelManager": True, "pms": False}, "pmsEntitled": False}
# What the sandbox's guarantee holds (a masked test card), as keys and values: never kept.
CARD = ("411111******1111", "card_number", "cardholder_name", "expiration_date", "cvv", "ANA LIMA")


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1", "CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET,
            "CONNECTAPI_PUSH_PAUSED": "0", "CONNECTAPI_BUDGETS": "writes=1000,property-writes=1000,requests=1000"}


async def hooked_property(api: Harness, receiver: Receiver, **overrides: Any) -> tuple[dict[str, Any], str]:
    """A property with an endpoint at the receiver; answers it and the endpoint's secret,
    once the registration ping has arrived."""
    prop = await api.create_property(**overrides)
    made = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": receiver.url})
    assert made.status == 201, made.body
    await events_of(receiver, made.data["secret"], 1)
    return prop, made.data["secret"]


async def events_of(receiver: Receiver, secret: str, count: int) -> list[dict[str, Any]]:
    """The first `count` events the receiver got, each verified and checked against the
    contract's envelope schema."""
    await eventually(lambda: len(receiver.received) >= count, f"{count} deliveries")
    events = []
    for headers, body in receiver.received[:count]:
        assert signed_by(secret, headers, body)
        event = json.loads(body)
        ENVELOPE.validate(event)
        assert headers["webhook-id"] == event["id"]
        events.append(event)
    return events


async def ota_booking(api: Harness, prop: dict[str, Any], room: int = 0, check_in: str = "2026-12-10",
                      check_out: str = "2026-12-12", amount: str = "240.00") -> str:
    made = await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings", {
        "roomTypeId": prop["roomTypes"][room]["id"], "ratePlanId": prop["ratePlans"][room]["id"],
        "checkIn": check_in, "checkOut": check_out, "adults": 2,
        "guest": {"name": "Ana", "surname": "Lima", "email": "ana@example.com", "phone": "+351 912 345 678",
                  "country": "PT"},
        "amount": amount})
    assert made.status == 201, made.body
    return str(made.data["reservationCode"])  # the channel's code (modify and cancel take it)


async def map_first_room_type(api: Harness, prop: dict[str, Any], cm_room_type: str) -> None:
    """The property's channel mapping with its first room type mapped to `cm_room_type`,
    the rest as they were."""
    rooms = {str(r["id"]): r["cm_id"] for r in await api.ctx.db.fetch(
        "SELECT id, cm_id FROM room_types WHERE property_id = $1 AND cm_id IS NOT NULL", prop["id"])}
    plans = {str(r["id"]): r["cm_id"] for r in await api.ctx.db.fetch(
        "SELECT id, cm_id FROM rate_plans WHERE property_id = $1 AND cm_id IS NOT NULL", prop["id"])}
    rooms[str(prop["roomTypes"][0]["id"])] = cm_room_type
    mapped = await api.admin("PUT", f"/properties/{prop['id']}/channel-mapping",
                             {"cmPropertyId": cm_ids(api, prop)[0], "roomTypes": rooms, "ratePlans": plans})
    assert mapped.status == 200, mapped.body


async def revisions(api: Harness, prop: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """The property's revisions (newest first), once `count` of them are settled and acknowledged."""
    found: list[dict[str, Any]] = []

    async def all_settled() -> bool:
        nonlocal found
        found = (await api.admin("GET", f"/properties/{prop['id']}/ota-revisions")).data
        return len(found) == count and all(r["state"] != "received" and r["acknowledged"] for r in found)
    await eventually(all_settled, f"{count} revisions settled")
    return found


def cm_ids(api: Harness, prop: dict[str, Any]) -> list[str]:
    """The sandbox's own ids for the property and its catalog: never to appear in an event."""
    assert api.ctx.channel.sandbox is not None
    held = next(p for p in api.ctx.channel.sandbox.properties.values() if p.title == prop["name"])
    return [held.id, *held.room_types, *held.rate_plans]


async def availability(api: Harness, prop: dict[str, Any], key: str, first: str, last: str) -> list[int]:
    """The first room type's availability in the record, night by night."""
    got = await api.call("GET", f"{API}/availability?from={first}&to={last}", key=key)
    assert got.status == 200, got.body
    group = next(g for g in got.data["roomTypes"] if g["roomTypeId"] == prop["roomTypes"][0]["id"])
    return [night["available"] for night in group["nights"]]


async def test_created_modified_cancelled_on_a_channel_manager_only_property(api: Harness,
                                                                           receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver, name="Only Channels", **CM_ONLY)
    code = await ota_booking(api, prop)
    created = (await events_of(receiver, secret, 2))[1]
    assert created["type"] == "channel.booking.created"
    assert (created["changes"], created["previous"]) == (None, None)
    booking = created["data"]["booking"]
    assert booking["status"] == "UPCOMING" and booking["reference"].startswith(f"PMS-{prop['id']}-")
    assert booking["stay"] == {"checkIn": "2026-12-10", "checkOut": "2026-12-12", "nights": 2}
    assert booking["rooms"] == [{
        "roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"], "adults": 2,
        "children": 0, "amount": "240.00",
        "nights": [{"date": "2026-12-10", "amount": "120.00"}, {"date": "2026-12-11", "amount": "120.00"}],
        "taxes": [{"name": "VAT (5%)", "type": "Value Added Tax (VAT)", "inclusive": True, "amount": "11.43"}],
        "services": [], "childrenAges": [], "infants": 0}]
    assert booking["guest"] == {"name": "Ana Lima", "email": "ana@example.com", "phone": "+351912345678",
                                "country": "PT", "language": None, "address": None, "company": None}
    assert booking["amounts"] == {"total": "240.00", "currency": "EUR", "commission": "36.00",
                                  "paymentCollect": None, "paymentType": None,
                                  "guarantee": {"virtualCard": False, "cardType": "VI"}}
    assert booking["channel"] == {"name": "BookingCom", "reservationCode": code}

    changed = await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings/{code}/modify",
                              {"checkOut": "2026-12-13", "amount": "360.00"})
    assert changed.status == 200, changed.body
    modified = (await events_of(receiver, secret, 3))[2]
    assert modified["type"] == "channel.booking.modified"
    assert modified["data"]["booking"]["reference"] == booking["reference"]
    assert set(modified["changes"]) == set(modified["previous"]) == {"stay", "rooms", "amounts"}
    assert modified["changes"]["stay"]["checkOut"] == "2026-12-13" and modified["previous"]["stay"] == booking["stay"]
    assert (modified["changes"]["amounts"]["total"], modified["previous"]["amounts"]["total"]) == ("360.00", "240.00")

    assert (await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings/{code}/cancel")).status == 200
    cancelled = (await events_of(receiver, secret, 4))[3]
    assert cancelled["type"] == "channel.booking.cancelled"
    assert cancelled["data"]["booking"]["status"] == "CANCELLED"
    assert [r["state"] for r in await revisions(api, prop, 3)] == ["applied"] * 3
    assert api.ctx.channel.sandbox is not None and api.ctx.channel.sandbox.bookings.feed(None) == []  # all acknowledged
    sent = list(api.ctx.channel.sandbox.bookings.revisions.values())
    cm_booking_ids = {r["booking_id"] for r in sent} | {r["id"] for r in sent} | {r["system_id"] for r in sent}
    assert all((card := r["guarantee"]) is not None and card["card_number"] for r in sent)  # each came with a (masked) card
    for _, body in receiver.received:
        assert not any(cm_id in body for cm_id in [*cm_ids(api, prop), *cm_booking_ids])  # no channel-manager id
        assert not any(card in body for card in CARD)
    stored = await api.ctx.db.fetch("SELECT payload::text AS text FROM ota_revisions WHERE property_id = $1",
                                    prop["id"])
    assert len(stored) == 3 and not any(card in row["text"] for row in stored for card in CARD)
    # No PMS here: the record's inventory is not touched.
    assert await api.ctx.db.fetchval("SELECT count(*) FROM inventory_events WHERE property_id = $1", prop["id"]) == 0
    assert await api.ctx.db.fetchval(
        """SELECT count(*) FROM availability_cells c JOIN room_types rt ON rt.id = c.room_type_id
           WHERE c.property_id = $1 AND c.available <> rt.rooms""", prop["id"]) == 0


async def test_on_a_pms_property_availability_is_taken_given_back_and_drained(api: Harness,
                                                                             receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver)
    key = (await api.create_key(prop["id"], ["ari:read", "bookings:read"]))["key"]
    code = await ota_booking(api, prop, check_in="2026-12-10", check_out="2026-12-12")
    await events_of(receiver, secret, 2)
    assert await availability(api, prop, key, "2026-12-09", "2026-12-12") == [8, 7, 7, 8]
    await settled(api, prop["id"])
    assert sandbox_nights(api, prop, ["2026-12-10", "2026-12-11"]) == [7, 7]

    await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings/{code}/modify",
                    {"checkIn": "2026-12-11", "checkOut": "2026-12-13"})
    await events_of(receiver, secret, 3)
    assert await availability(api, prop, key, "2026-12-09", "2026-12-13") == [8, 8, 7, 7, 8]
    await settled(api, prop["id"])
    assert sandbox_nights(api, prop, ["2026-12-10", "2026-12-11", "2026-12-12"]) == [8, 7, 7]

    await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings/{code}/cancel")
    await events_of(receiver, secret, 4)
    assert await availability(api, prop, key, "2026-12-09", "2026-12-13") == [8] * 5
    await settled(api, prop["id"])
    assert sandbox_nights(api, prop, ["2026-12-11", "2026-12-12"]) == [8, 8]
    listed = await api.call("GET", f"{API}/bookings", key=key)
    assert listed.status == 200 and listed.data["bookings"] == []  # OTA bookings are not the API's


async def mail_body(api: Harness, prop: dict[str, Any]) -> str:
    return str(await api.ctx.db.fetchval("SELECT body FROM notifications WHERE property_id = $1", prop["id"]))


def sandbox_nights(api: Harness, prop: dict[str, Any], nights: list[str]) -> list[int]:
    assert api.ctx.channel.sandbox is not None
    held = next(p for p in api.ctx.channel.sandbox.properties.values() if p.title == prop["name"])
    cm_room = next(iter(held.availability))
    return [int(held.availability[cm_room][date.fromisoformat(n)]) for n in nights]


async def test_an_ota_booking_on_a_full_night_is_kept_and_the_owner_told(api: Harness, receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver)
    key = (await api.create_key(prop["id"], ["ari:write", "ari:read"]))["key"]
    room = prop["roomTypes"][0]["id"]
    closed = await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
        {"roomTypeId": room, "dateFrom": "2026-12-10", "dateTo": "2026-12-10", "available": 0}]})
    assert closed.status == 202
    await ota_booking(api, prop, check_in="2026-12-10", check_out="2026-12-12")
    await events_of(receiver, secret, 2)  # the OTA sold it: it is a booking all the same
    assert await availability(api, prop, key, "2026-12-10", "2026-12-11") == [0, 7]
    told = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.overbooked"]
    assert "2026-12-10" in await mail_body(api, prop) and "2026-12-11" not in await mail_body(api, prop)


async def test_out_of_order_and_repeated_revisions(api: Harness, receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver, **CM_ONLY)
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    sandbox.bookings.newest_first = True
    cm_property, cm_room, cm_plan = cm_ids(api, prop)[0], cm_ids(api, prop)[1], cm_ids(api, prop)[3]
    stay = Stay(cm_property, cm_room, cm_plan, date(2026, 12, 10), date(2026, 12, 12), 2, 0,
                {"name": "Ana", "surname": None, "mail": None, "phone": None, "country": None}, Decimal("200"),
                "EUR", "Expedia")
    # Both revisions wait in the feed before the intake looks: it gets the newer one first.
    first = sandbox.bookings.new(stay, api.ctx.clock.now())
    second = sandbox.bookings.modify(first["ota_reservation_code"], {"departure": date(2026, 12, 14)},
                                     api.ctx.clock.now())
    created = (await events_of(receiver, secret, 2))[1]
    assert created["type"] == "channel.booking.created"
    assert created["data"]["booking"]["stay"]["checkOut"] == "2026-12-14"  # the newer revision's
    states = {r["revisionId"]: r["state"] for r in await revisions(api, prop, 2)}
    assert states == {second["id"]: "applied", first["id"]: "stale"}

    # Offered again (as if our acknowledgement were lost), and once more under a new id with
    # the same system_id: nothing is applied or sent again, and both are acknowledged.
    sandbox.bookings.acked.discard(second["id"])
    sandbox.bookings.revisions["a-new-id"] = {**second, "id": "a-new-id"}
    refused = await api.call("POST", "/api/v1/channel-manager/notify", headers={"X-Notify-Secret": "wrong"},
                             body={"revision_id": "a-new-id"})
    assert (refused.status, refused.code) == (401, "NOTIFY_SECRET_INVALID")
    told = await api.call("POST", "/api/v1/channel-manager/notify", headers={"X-Notify-Secret": NOTIFY_SECRET},
                          body={"booking_id": "x", "property_id": "y", "revision_id": "a-new-id"})
    assert (told.status, told.data) == (200, {"received": True})
    await eventually(lambda: sandbox.bookings.feed(None) == [], "the repeats acknowledged")
    assert len(await revisions(api, prop, 2)) == 2
    assert len(receiver.received) == 2


async def sold_on_a_room_type_we_do_not_map(api: Harness, prop: dict[str, Any], cm_room: str) -> Revision:
    """An OTA booking of one night whose room type is `cm_room` at the channel manager; its revision."""
    assert api.ctx.channel.sandbox is not None
    stay = Stay(cm_ids(api, prop)[0], cm_room, cm_ids(api, prop)[3], date(2026, 12, 10), date(2026, 12, 11), 1, 0,
                {"name": "Bo", "surname": None, "mail": None, "phone": None, "country": None}, Decimal("90"),
                "EUR", "Airbnb")
    return api.ctx.channel.sandbox.bookings.new(stay, api.ctx.clock.now())


async def test_an_unmapped_room_type_is_kept_flagged_and_told(api: Harness, receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver)
    await sold_on_a_room_type_we_do_not_map(api, prop, "a-room-type-nobody-mapped")
    [kept] = await revisions(api, prop, 1)
    assert kept["state"] == "unmapped" and "a-room-type-nobody-mapped" in kept["note"]
    stored = await api.ctx.db.fetchval("SELECT payload FROM ota_revisions WHERE id = $1", kept["revisionId"])
    assert json.loads(stored)["rooms"][0]["room_type_id"] == "a-room-type-nobody-mapped"  # kept as it came
    told = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.unapplied"]
    assert len(receiver.received) == 1  # the ping only: nothing applied, nothing told
    assert await api.ctx.db.fetchval("SELECT count(*) FROM bookings WHERE property_id = $1", prop["id"]) == 0


async def test_cancelling_a_checked_in_booking_is_refused_and_told(api: Harness, receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver)
    code = await ota_booking(api, prop)
    created = (await events_of(receiver, secret, 2))[1]
    booking_id = await api.ctx.db.fetchval("SELECT id FROM bookings WHERE reference = $1",
                                           created["data"]["booking"]["reference"])
    assert (await api.admin("POST", f"/bookings/{booking_id}/check-in")).status == 200
    await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings/{code}/cancel")
    states = [r["state"] for r in await revisions(api, prop, 2)]
    assert states == ["refused", "applied"]
    assert len(receiver.received) == 2  # no cancelled event
    assert await api.ctx.db.fetchval("SELECT status FROM bookings WHERE id = $1", booking_id) == "CHECKED_IN"
    told = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.unapplied"] and "checked in" in await mail_body(api, prop)
    key = (await api.create_key(prop["id"], ["ari:read"]))["key"]
    assert await availability(api, prop, key, "2026-12-10", "2026-12-11") == [7, 7]  # the guest's room stays taken


async def test_a_receiver_down_then_up_gets_every_event_in_order(api: Harness, receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver, **CM_ONLY)
    receiver.answers = [503, 503, 503]  # down for the first three attempts
    code = await ota_booking(api, prop)
    await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings/{code}/modify", {"adults": 1})
    await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings/{code}/cancel")
    await revisions(api, prop, 3)  # all three applied while the receiver is down
    for attempt, wait in enumerate((5, 300, 1800), start=2):
        await eventually(lambda: len(receiver.received) == attempt, f"attempt {attempt - 1}")
        api.advance(wait * 1.1 + 1)  # past the schedule's wait and its jitter
    events = await events_of(receiver, secret, 7)
    kinds = [e["type"].removeprefix("channel.booking.") for e in events[1:]]
    # The first event tried until it got through, and nothing behind it overtook it.
    assert kinds == ["created"] * 4 + ["modified", "cancelled"]
    assert len({e["id"] for e in events[1:5]}) == 1
    assert events[5]["changes"] == {"rooms": [{**events[1]["data"]["booking"]["rooms"][0], "adults": 1}]}


async def test_a_revision_the_record_refuses_does_not_hold_up_the_others(api: Harness, receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver, **CM_ONLY)
    # Injected: the record refuses the first OTA booking (a trigger on its row).
    await api.ctx.db.execute("""CREATE FUNCTION refuse_first_ota() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN IF NEW.check_in = DATE '2026-12-10' THEN RAISE EXCEPTION 'injected'; END IF; RETURN NEW; END $$""")
    await api.ctx.db.execute("CREATE TRIGGER refuse_first_ota BEFORE INSERT ON bookings FOR EACH ROW "
                             "EXECUTE FUNCTION refuse_first_ota()")
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    await ota_booking(api, prop, check_in="2026-12-10", check_out="2026-12-11")
    await ota_booking(api, prop, check_in="2026-12-20", check_out="2026-12-21")
    states = [(r["state"], r["note"]) for r in await revisions(api, prop, 2)]
    assert states == [("applied", None), ("refused", "could not be applied (RaiseError)")]
    created = (await events_of(receiver, secret, 2))[1]
    assert created["data"]["booking"]["stay"]["checkIn"] == "2026-12-20"
    told = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.unapplied"]


async def test_revisions_behind_a_page_of_another_integrations_are_taken(api: Harness, receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver, **CM_ONLY)
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    cm_property, cm_room, cm_plan = cm_ids(api, prop)[0], cm_ids(api, prop)[1], cm_ids(api, prop)[3]
    guest: Guest = {"name": "Ana", "surname": None, "mail": None, "phone": None, "country": None}
    # The account's feed begins with more than a page of revisions for a property we do not
    # map: they are not ours to acknowledge, and stay in the feed ahead of ours.
    theirs = [sandbox.bookings.new(Stay("a-property-we-do-not-map", "r", "p", date(2026, 12, 10),
                                        date(2026, 12, 11), 1, 0, guest, Decimal("90"), "EUR", "Expedia"),
                                   api.ctx.clock.now()) for _ in range(25)]
    ours = sandbox.bookings.new(Stay(cm_property, cm_room, cm_plan, date(2026, 12, 10), date(2026, 12, 12), 2, 0,
                                     guest, Decimal("200"), "EUR", "Expedia"), api.ctx.clock.now())
    created = (await events_of(receiver, secret, 2))[1]
    assert created["data"]["booking"]["channel"]["reservationCode"] == ours["ota_reservation_code"]
    assert [r["revisionId"] for r in await revisions(api, prop, 1)] == [ours["id"]]
    assert [r["id"] for r in sandbox.bookings.feed(None)] == [r["id"] for r in theirs]


async def test_a_kept_revision_is_applied_again_once_its_mapping_is_fixed(api: Harness, receiver: Receiver) -> None:
    prop, secret = await hooked_property(api, receiver)
    other = await api.create_property(name="Another Hotel")
    sent = await sold_on_a_room_type_we_do_not_map(api, prop, "a-room-type-mapped-late")
    [kept] = await revisions(api, prop, 1)
    assert kept["state"] == "unmapped"
    apply_path = f"/properties/{prop['id']}/ota-revisions/{sent['id']}/apply"

    for path, code in ((f"/properties/{prop['id']}/ota-revisions/no-such-revision/apply", "REVISION_NOT_FOUND"),
                       (f"/properties/{other['id']}/ota-revisions/{sent['id']}/apply", "REVISION_NOT_FOUND"),
                       (f"/properties/999999/ota-revisions/{sent['id']}/apply", "PROPERTY_NOT_FOUND")):
        refused = await api.admin("POST", path)
        assert (refused.status, refused.code) == (404, code)
    assert [r["state"] for r in await revisions(api, prop, 1)] == ["unmapped"]

    # The owner maps the channel manager's room type to the first room type, keeping the rest.
    await map_first_room_type(api, prop, "a-room-type-mapped-late")

    again = await api.admin("POST", apply_path)
    assert (again.status, again.data) == (202, {"revisionId": sent["id"], "state": "received", "before": "unmapped"})
    created = (await events_of(receiver, secret, 2))[1]
    assert created["type"] == "channel.booking.created"
    assert created["data"]["booking"]["rooms"][0]["roomTypeId"] == prop["roomTypes"][0]["id"]
    [applied] = await revisions(api, prop, 1)
    assert (applied["state"], applied["reference"]) == ("applied", created["data"]["booking"]["reference"])
    key = (await api.create_key(prop["id"], ["ari:read"]))["key"]
    assert await availability(api, prop, key, "2026-12-10", "2026-12-10") == [7]  # the room is taken

    settled = await api.admin("POST", apply_path)
    assert (settled.status, settled.code) == (409, "REVISION_NOT_KEPT")
    assert settled.body["data"]["details"] == {"state": "applied"}
    assert len(receiver.received) == 2  # applied once


async def test_an_acknowledgement_the_channel_manager_answers_500_twice_is_asked_again(
        api: Harness, receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="connectapi")
    prop, secret = await hooked_property(api, receiver)
    key = (await api.create_key(prop["id"], ["ari:write", "ari:read"]))["key"]
    closed = await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
        {"roomTypeId": prop["roomTypes"][0]["id"], "dateFrom": "2026-12-10", "dateTo": "2026-12-10", "available": 0}]})
    assert closed.status == 202  # a full night: the owner is e-mailed of the booking, once
    sandbox = api.ctx.channel.sandbox
    assert sandbox is not None
    # The sandbox's fault selector (POST /_sandbox/faults {"mode": "500", "count": 2, "calls": "ack"}).
    sandbox.faults.mode, sandbox.faults.remaining, sandbox.faults.calls = "500", 2, "ack"
    await ota_booking(api, prop)
    await events_of(receiver, secret, 2)

    async def acknowledged() -> bool:
        if sandbox.bookings.feed(None):
            api.ctx.properties.wakeups.revisions_waiting()  # a round, as the channel manager's notification brings one
            return False
        return all(r["acknowledged"] for r in (await api.admin("GET", f"/properties/{prop['id']}/ota-revisions")).data)
    await eventually(acknowledged, "the acknowledgement, at the third try")
    assert sandbox.faults.remaining == 0 and (sandbox.stats.acks, sandbox.stats.acks_repeated) == (1, 0)
    assert [r["state"] for r in await revisions(api, prop, 1)] == ["applied"]
    assert len(receiver.received) == 2  # the ping and the booking: told once
    told = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
    assert [n["kind"] for n in told] == ["ota.overbooked"]
    assert await availability(api, prop, key, "2026-12-10", "2026-12-11") == [0, 7]  # taken once
    assert caplog.text.count("could not acknowledge a revision") == 2
    assert not any(card in caplog.text for card in CARD)
