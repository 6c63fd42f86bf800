"""Revisions in Channex's documented full shape, through the real intake, record and webhook
sender, from a channel manager on a real port (tests/api/channel_stub.py): applied once,
told without a channel-manager id or a card, stored without the card, and acknowledged only
on a 2xx (a 404: gone), asked again otherwise without being applied or told again."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
import trio

from connectapi.actors.booking_intake import BookingIntake
from connectapi.channel.client import FEED_MAX_PAGES, FEED_PAGE_LIMIT
from connectapi.storage.database import Database
from connectapi.storage.migrations import bundled_migrations
from tests.channex_documented import (
    BOOKING_COM_CANCELLED, BOOKING_COM_MODIFIED, BOOKING_COM_NEW, as_revision, attributes, moved,
)
from .channel_stub import ChannelStub, serving
from .conftest import open_harness
from .harness import API, Harness, eventually
from .test_ota_bookings import events_of, hooked_property
from .webhook_receiver import Receiver, signed_by

DOC = attributes(BOOKING_COM_NEW)
CM_PROPERTY, CM_BOOKING = DOC["property_id"], DOC["id"]
CM_ROOM, CM_PLAN = DOC["rooms"][0]["room_type_id"], DOC["rooms"][0]["rate_plan_id"]
# The documented stay (13 to 15 November 2020) moved to 10 to 12 December 2026.
DAYS = (date(2026, 12, 10) - date(2020, 11, 13)).days
# What the channel manager names that must never reach an integrator.
CM_IDS = (CM_PROPERTY, CM_BOOKING, CM_ROOM, CM_PLAN, DOC["revision_id"], "d0f5a93b-12ba-40b5-a134-48bbf1c77532",
          "5c0a93d1-10f8-4871-bd30-a850c3d98e9b", "rev-new-1", "rev-modified-2", "rev-cancelled-3", "sys-")
CARD = ("411111******1111", "CARDHOLDER NAME", "11/2021", "card_number", "cardholder_name", "expiration_date",
        "cvv")


def revision(document: dict[str, Any], revision_id: str, second: int) -> dict[str, Any]:
    """A documented message as the feed hands it out: its own ids and instant, and the stay moved."""
    return moved(as_revision(document, revision_id, f"2026-11-22T10:00:{second:02d}.250000",
                             system_id=f"sys-{revision_id}"), DAYS)


@asynccontextmanager
async def with_channel(db: Database, stub: ChannelStub) -> AsyncIterator[Harness]:
    """The service with `stub` as its channel manager (pushes held, as in every API test)."""
    async with serving(stub), open_harness(db, {
            "CONNECTAPI_CM_URL": stub.url, "CONNECTAPI_CM_KEY": stub.key,
            "CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"}) as api:
        yield api


async def rounds_until(api: Harness, check: Any, what: str) -> None:
    """Intake rounds one after another, as the channel manager's notifications bring them,
    until `check()` holds. The clock stands still: no call in flight runs out of time."""
    async def woken() -> bool:
        held = check()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return True
        api.ctx.properties.wakeups.revisions_waiting()  # a mailbox already full: a round is due anyway
        return False
    await eventually(woken, what)


async def all_acknowledged(api: Harness, stub: ChannelStub) -> bool:
    """Gone from the feed, and the record knows it (it writes that after the answer)."""
    return not stub.feed and all(r["acked"] for r in await stored(api))


async def mapped_property(api: Harness, receiver: Receiver) -> tuple[dict[str, Any], str]:
    """Casa Azul (with the PMS) mapped to the documented property, room type and rate plan,
    and priced in the documented revisions' currency."""
    prop, secret = await hooked_property(api, receiver, currency="GBP")
    mapped = await api.admin("PUT", f"/properties/{prop['id']}/channel-mapping", {
        "cmPropertyId": CM_PROPERTY, "roomTypes": {str(prop["roomTypes"][0]["id"]): CM_ROOM},
        "ratePlans": {str(prop["ratePlans"][0]["id"]): CM_PLAN}})
    assert mapped.status == 200, mapped.body
    return prop, secret


async def whole_record(api: Harness) -> str:
    """Every row of every table of the record as text (jsonb included)."""
    tables = [r["table_name"] for r in await api.ctx.db.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'")]
    texts = [await api.ctx.db.fetchval(f'SELECT coalesce(string_agg(t::text, chr(10)), \'\') FROM "{name}" t')
             for name in tables]
    return "\n".join(texts)


async def stored(api: Harness) -> list[dict[str, Any]]:
    rows = await api.ctx.db.fetch("SELECT id, state, acked_at, payload FROM ota_revisions ORDER BY seq")
    return [{"id": r["id"], "state": r["state"], "acked": r["acked_at"] is not None,
             "payload": json.loads(r["payload"])} for r in rows]


async def test_the_documented_booking_com_messages_are_applied_told_and_acknowledged(
        db: Database, receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="connectapi")
    stub = ChannelStub()
    async with with_channel(db, stub) as api:
        prop, secret = await mapped_property(api, receiver)
        stub.offer(revision(BOOKING_COM_NEW, "rev-new-1", 1))
        await rounds_until(api, lambda: len(receiver.received) >= 2, "the created event")
        created = (await events_of(receiver, secret, 2))[1]
        assert created["type"] == "channel.booking.created"
        booking = created["data"]["booking"]
        # Every member the documented message carries, in the property's ids (issue 42).
        assert booking["guest"] == {"name": "Name Surname", "email": "customer_email@guest.booking.com",
                                    "phone": None, "country": "GB", "language": None,
                                    "address": {"line": None, "city": ".", "zip": None, "country": "GB"},
                                    "company": None}
        assert booking["stay"] == {"checkIn": "2026-12-10", "checkOut": "2026-12-12", "nights": 2}
        assert booking["rooms"] == [{
            "roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"], "adults": 2,
            "children": 0, "amount": "153.00",
            "nights": [{"date": "2026-12-10", "amount": "76.50"}, {"date": "2026-12-11", "amount": "76.50"}],
            "taxes": [{"name": "VAT (5%)", "type": "Value Added Tax (VAT)", "inclusive": True, "amount": "7.29"}],
            "services": [], "childrenAges": [], "infants": 0}]
        assert booking["amounts"] == {"total": "153.00", "currency": "GBP", "commission": "10.00",
                                      "paymentCollect": None, "paymentType": None,
                                      "guarantee": {"virtualCard": False, "cardType": "VI"}}
        assert booking["channel"] == {"name": "BookingCom", "reservationCode": "3333333333"}
        assert (booking["taxes"], booking["services"], booking["arrivalHour"], booking["notes"]) == ([], [], None, None)

        stub.offer(revision(BOOKING_COM_MODIFIED, "rev-modified-2", 2))
        await rounds_until(api, lambda: len(receiver.received) >= 3, "the modified event")
        modified = (await events_of(receiver, secret, 3))[2]
        assert modified["type"] == "channel.booking.modified"
        assert modified["changes"] == {"guest": {**booking["guest"], "name": "New Customer Name New Customer Surname"}}

        stub.offer(revision(BOOKING_COM_CANCELLED, "rev-cancelled-3", 3))
        await rounds_until(api, lambda: len(receiver.received) >= 4, "the cancelled event")
        cancelled = (await events_of(receiver, secret, 4))[3]
        assert cancelled["type"] == "channel.booking.cancelled"
        assert cancelled["data"]["booking"]["amounts"]["total"] == "76.50"
        assert cancelled["data"]["booking"]["services"] == [{"name": "Cancellation Fee", "type": "Cancellation Fee",
                                                             "amount": "76.50", "priceMode": "Per stay",
                                                             "persons": 0, "nights": 0}]
        await rounds_until(api, lambda: all_acknowledged(api, stub), "every revision acknowledged")

        kept = await stored(api)
        assert [(r["id"], r["state"], r["acked"]) for r in kept] == [
            ("rev-new-1", "applied", True), ("rev-modified-2", "applied", True), ("rev-cancelled-3", "applied", True)]
        # Stored as it came, less the card: the surname, the days, the taxes and the rest are there.
        assert all(r["payload"]["guarantee"] == {"is_virtual": False, "card_type": "VI"} for r in kept)
        assert kept[0]["payload"]["customer"]["surname"] == "Surname"
        assert kept[0]["payload"]["rooms"][0]["days"] == {"2026-12-10": "76.50", "2026-12-11": "76.50"}
        assert kept[0]["payload"]["rooms"][0]["taxes"][0]["name"] == "VAT (5%)"
        record = await whole_record(api)
        assert "New Customer Surname" in record  # the scan does read the record's rows
        assert not any(card in record for card in CARD)
        key = (await api.create_key(prop["id"], ["ari:read"]))["key"]
        got = await api.call("GET", f"{API}/availability?from=2026-12-10&to=2026-12-11", key=key)
        nights = next(g for g in got.data["roomTypes"] if g["roomTypeId"] == prop["roomTypes"][0]["id"])["nights"]
        assert [n["available"] for n in nights] == [8, 8]  # taken, then given back
    bodies = [body for _, body in receiver.received]
    assert len(bodies) == 4
    for body in bodies:
        assert not any(cm_id in body for cm_id in CM_IDS)
        assert not any(card in body for card in CARD)
    assert caplog.records  # the log was listened to
    assert not any(card in caplog.text for card in CARD)


async def test_a_room_the_channel_manager_left_unmapped_is_kept_and_the_owner_told(
        db: Database, receiver: Receiver) -> None:
    stub = ChannelStub()
    async with with_channel(db, stub) as api:
        prop, _ = await mapped_property(api, receiver)
        unmapped = revision(BOOKING_COM_NEW, "rev-new-1", 1)
        unmapped["rooms"][0]["room_type_id"] = None
        stub.offer(unmapped)
        await rounds_until(api, lambda: all_acknowledged(api, stub), "the revision acknowledged")
        [kept] = await stored(api)
        assert kept["state"] == "unmapped"
        told = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
        assert [n["kind"] for n in told] == ["ota.unapplied"]
        body = str(await api.ctx.db.fetchval("SELECT body FROM notifications WHERE property_id = $1", prop["id"]))
        assert "not mapped to a room type" in body and not any(card in body for card in CARD)
        assert len(receiver.received) == 1  # the ping only


@pytest.mark.parametrize("refusals", [[500, 500], [401], [403, 503]])
async def test_an_acknowledgement_not_answered_2xx_is_asked_again_and_nothing_applied_twice(
        db: Database, receiver: Receiver, caplog: pytest.LogCaptureFixture, refusals: list[int]) -> None:
    caplog.set_level(logging.DEBUG, logger="connectapi")
    stub = ChannelStub(ack_answers=list(refusals), acks_released=trio.Event())
    async with with_channel(db, stub) as api:
        prop, secret = await mapped_property(api, receiver)
        # The first night is full: the booking is taken all the same and the owner told, once.
        key = (await api.create_key(prop["id"], ["ari:write", "ari:read"]))["key"]
        closed = await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
            {"roomTypeId": prop["roomTypes"][0]["id"], "dateFrom": "2026-12-10", "dateTo": "2026-12-10",
             "available": 0}]})
        assert closed.status == 202, closed.body
        stub.offer(revision(BOOKING_COM_NEW, "rev-new-1", 1))
        await rounds_until(api, lambda: stub.acks, "a first acknowledgement")
        # Refused: applied, the acknowledgement pending, and the revision still in the feed.
        [kept] = await stored(api)
        assert (kept["state"], kept["acked"]) == ("applied", False)
        listed = (await api.admin("GET", f"/properties/{prop['id']}/ota-revisions")).data
        assert [(r["state"], r["acknowledged"]) for r in listed] == [("applied", False)]
        assert "rev-new-1" in stub.feed

        assert stub.acks_released is not None
        stub.acks_released.set()
        await rounds_until(api, lambda: all_acknowledged(api, stub), "the acknowledgement at last")
        assert stub.acks == [("rev-new-1", status) for status in [*refusals, 200]]
        assert [(r["state"], r["acked"]) for r in await stored(api)] == [("applied", True)]
        events = await events_of(receiver, secret, 2)
        assert events[1]["type"] == "channel.booking.created"
        assert len(receiver.received) == 2  # the ping and the booking: told once
        told = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
        assert [n["kind"] for n in told] == ["ota.overbooked"]  # the owner e-mailed once
        assert await api.ctx.db.fetchval("SELECT count(*) FROM bookings WHERE property_id = $1", prop["id"]) == 1
        record = await whole_record(api)
        assert "Overbooking" in record and not any(card in record for card in CARD)  # the e-mail included
        # Taken once: one room on the second night (the first had none left).
        assert await api.ctx.db.fetchval(
            "SELECT coalesce(sum(delta), 0) FROM inventory_events WHERE property_id = $1 AND booking_id IS NOT NULL",
            prop["id"]) == -1
        # Nothing is asked of the channel manager any more.
        acks = len(stub.acks)
        reads = stub.feed_reads
        await rounds_until(api, lambda: stub.feed_reads >= reads + 1, "another round")
        assert len(stub.acks) == acks
    assert "could not acknowledge" in caplog.text
    assert not any(card in caplog.text for card in CARD)


async def test_an_acknowledgement_answered_404_is_done(db: Database, receiver: Receiver) -> None:
    stub = ChannelStub(ack_answers=[404])
    async with with_channel(db, stub) as api:
        await mapped_property(api, receiver)
        stub.offer(revision(BOOKING_COM_NEW, "rev-new-1", 1))
        await rounds_until(api, lambda: all_acknowledged(api, stub), "the acknowledgement")
        await rounds_until(api, lambda: len(receiver.received) >= 2, "the created event")
        [kept] = await stored(api)
        assert (kept["state"], kept["acked"]) == ("applied", True)  # gone at the channel manager: nothing left to do
        reads = stub.feed_reads
        await rounds_until(api, lambda: stub.feed_reads >= reads + 2, "more rounds")
        assert stub.acks == [("rev-new-1", 404)]


async def test_a_revision_offered_after_its_acknowledgement_does_not_have_the_feed_read_in_a_loop(
        db: Database, receiver: Receiver) -> None:
    # An outside review: with more revisions in the feed than a round reads (other
    # integrations'), acknowledging one again counted as taking something, and the next round
    # began at once: a feed that kept offering it was read 20 pages at a time in a loop.
    stub = ChannelStub(acks_forgotten=True)
    stub.offer(revision(BOOKING_COM_NEW, "rev-new-1", 1))
    for n in range(FEED_MAX_PAGES * FEED_PAGE_LIMIT + 1):
        stub.offer({"id": f"other-{n}", "booking_id": f"b-{n}", "property_id": "another-integrations",
                    "inserted_at": "2026-11-22T10:00:02"})
    async with with_channel(db, stub) as api:
        await mapped_property(api, receiver)
        async def acknowledged() -> bool:
            return [(r["state"], r["acked"]) for r in await stored(api)] == [("applied", True)]

        await rounds_until(api, acknowledged, "the first acknowledgement, kept")
        intake = BookingIntake(api.ctx.db, api.ctx.clock, api.ctx.channel.mailbox, api.ctx.properties.writers,
                               holder="this-test")
        # Acknowledged again once: as if ours had been lost, which clears it from a feed.
        done = await intake.pull()
        assert (done.stored, done.acknowledged, done.acknowledged_again) == (0, 1, 1) and done.more
        # Offered after that too: a feed that does not take it. The next round waits its time.
        done = await intake.pull()
        assert (done.stored, done.acknowledged, done.acknowledged_again) == (0, 1, 0) and not done.more


async def test_revisions_stored_before_lose_their_card_to_the_migration(db: Database) -> None:
    """As a version before this one stored them: the guarantee whole."""
    prop_id = await db.fetchval(
        """INSERT INTO properties (name, timezone, currency, channel_manager, pms)
           VALUES ('Old', 'Europe/Lisbon', 'EUR', true, false) RETURNING id""")
    virtual = {**DOC["guarantee"], "is_virtual": True, "meta": {"virtual_card_current_balance": "6755"}}
    revisions = {"with-card": DOC["guarantee"], "virtual": virtual, "none": None, "odd": "4111 1111 1111 1111"}
    for ident, guarantee in revisions.items():
        # As storage/ota.py keeps it: the JSON text (a jsonb string, through the pool's codec).
        await db.execute(
            """INSERT INTO ota_revisions (id, system_id, property_id, cm_booking_id, revised_at, payload, state,
                                          received_at)
               VALUES ($1, $1, $2, 'bk', now(), $3, 'applied', now())""",
            ident, prop_id, json.dumps({**DOC, "guarantee": guarantee}))
    # And as an object, should one ever be stored so.
    await db.execute(
        """INSERT INTO ota_revisions (id, system_id, property_id, cm_booking_id, revised_at, payload, state, received_at)
           VALUES ('object', 'object', $1, 'bk', now(), $2, 'applied', now())""", prop_id, {**DOC, "guarantee": virtual})
    await db.execute("INSERT INTO ota_revisions (id, system_id, property_id, cm_booking_id, revised_at, payload, "
                     "state, received_at) VALUES ('absent', 'absent', $1, 'bk', now(), '{}', 'applied', now())",
                     prop_id)
    [migration] = [m for m in bundled_migrations() if m.name == "revisions_without_card"]
    await db.execute(migration.sql)
    await db.execute(migration.sql)  # as good as once
    rows = {r["id"]: r["payload"] if isinstance(r["payload"], dict) else json.loads(r["payload"])
            for r in await db.fetch("SELECT id, payload FROM ota_revisions")}
    assert {ident: payload.get("guarantee", "absent") for ident, payload in rows.items()} == {
        "with-card": {"is_virtual": False}, "virtual": {"is_virtual": True}, "none": None, "odd": {},
        "object": {"is_virtual": True}, "absent": "absent"}
    text = str(await db.fetchval("SELECT string_agg(payload::text, ' ') FROM ota_revisions"))
    assert not any(card in text for card in (*CARD, "4111 1111", "6755"))
    # Still read as the intake reads them (storage/ota.py), the rest untouched.
    waiting = await db.fetchval("SELECT payload FROM ota_revisions WHERE id = 'with-card'")
    assert isinstance(waiting, str) and json.loads(waiting)["customer"] == DOC["customer"]


def front_desk_revision(revision_id: str, second: int, second_night: str = "76.50") -> dict[str, Any]:
    """The documented Booking.com booking with all a front desk needs (issue 42): breakfast
    bought as an extra, VAT included, a city tax not, a child aged 5, arrival at 22:30, paid
    to the OTA with its virtual card, and the guest's requests, language and address."""
    found = revision(BOOKING_COM_NEW, revision_id, second)
    room = found["rooms"][0]
    room["occupancy"] = {"adults": 2, "children": 1, "infants": 0, "ages": [5]}
    found["occupancy"] = {"adults": 2, "children": 1, "infants": 0, "ages": [5]}
    room["days"] = {"2026-12-10": "76.50", "2026-12-11": second_night}
    room["amount"] = f"{Decimal('76.50') + Decimal(second_night):.2f}"
    room["taxes"].append({"is_inclusive": False, "name": "City tax", "nights": 2, "persons": 2,
                          "price_mode": "Per person per night", "price_per_unit": "2.00", "total_price": "8.00",
                          "type": "city_tax"})
    found["services"] = [{"name": "Breakfast", "nights": 2, "persons": 3, "price_mode": "Per person per night",
                          "price_per_unit": "10.00", "total_price": "60.00", "type": "Breakfast"}]
    found["amount"] = f"{Decimal(room['amount']) + 60:.2f}"
    found.update(arrival_hour="22:30", payment_collect="ota", payment_type="credit_card",
                 notes="You have a booker that would prefer a quiet room. (based on availability)")
    found["guarantee"].update(is_virtual=True, card_type="MC", cardholder_name="Bookingcom Agent")
    found["customer"].update(language="en", address="JW Lucasweg 35", city="Haarlem", zip="2031 BE", country="NL",
                             company={"title": "Company Name", "number": "1123331", "number_type": "VAT",
                                      "type": "Registration Number"})
    return found


async def test_an_ota_booking_reaches_the_receiver_as_the_front_desk_needs_it(db: Database, receiver: Receiver) -> None:
    stub = ChannelStub()
    async with with_channel(db, stub) as api:
        prop, secret = await mapped_property(api, receiver)
        stub.offer(front_desk_revision("rev-new-1", 1))
        await rounds_until(api, lambda: len(receiver.received) >= 2, "the created event")
        headers, body = receiver.received[1]
        # Verified as a receiver would, with the standardwebhooks library, at the attempt's time.
        assert signed_by(secret, headers, body)
        created = json.loads(body)
        booking = created["data"]["booking"]
        room = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
        assert booking["rooms"] == [{
            "roomTypeId": room[0], "ratePlanId": room[1], "adults": 2, "children": 1, "amount": "153.00",
            "nights": [{"date": "2026-12-10", "amount": "76.50"}, {"date": "2026-12-11", "amount": "76.50"}],
            "taxes": [{"name": "VAT (5%)", "type": "Value Added Tax (VAT)", "inclusive": True, "amount": "7.29"},
                      {"name": "City tax", "type": "city_tax", "inclusive": False, "amount": "8.00"}],
            "services": [], "childrenAges": [5], "infants": 0}]
        assert booking["services"] == [{"name": "Breakfast", "type": "Breakfast", "amount": "60.00",
                                        "priceMode": "Per person per night", "persons": 3, "nights": 2}]
        assert booking["amounts"] == {"total": "213.00", "currency": "GBP", "commission": "10.00",
                                      "paymentCollect": "ota", "paymentType": "credit_card",
                                      "guarantee": {"virtualCard": True, "cardType": "MC"}}
        assert (booking["arrivalHour"], booking["notes"]) == (
            "22:30", "You have a booker that would prefer a quiet room. (based on availability)")
        assert booking["guest"] == {"name": "Name Surname", "email": "customer_email@guest.booking.com",
                                    "phone": None, "country": "NL", "language": "en",
                                    "address": {"line": "JW Lucasweg 35", "city": "Haarlem", "zip": "2031 BE",
                                                "country": "NL"},
                                    "company": {"name": "Company Name", "vatNumber": "1123331"}}
        assert booking["taxes"] == []

        # The OTA changes the second night's price: the room's nights, and the amounts.
        stub.offer(front_desk_revision("rev-modified-2", 2, second_night="90.00") | {"status": "modified"})
        await rounds_until(api, lambda: len(receiver.received) >= 3, "the modified event")
        modified = (await events_of(receiver, secret, 3))[2]
        assert set(modified["changes"]) == {"rooms", "amounts"}
        assert modified["changes"]["rooms"][0]["nights"][1] == {"date": "2026-12-11", "amount": "90.00"}
        assert modified["previous"]["rooms"][0]["nights"][1] == {"date": "2026-12-11", "amount": "76.50"}
        assert (modified["changes"]["amounts"]["total"], modified["previous"]["amounts"]["total"]) == (
            "226.50", "213.00")
        # It all adds up: the owner heard of neither booking's amounts.
        assert not await api.ctx.db.fetchval("SELECT count(*) FROM notifications WHERE kind = 'ota.amounts'")
    for _, sent in receiver.received:
        assert not any(card in sent for card in CARD) and "Bookingcom Agent" not in sent
