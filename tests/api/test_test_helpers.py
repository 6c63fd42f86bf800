"""The test helpers (issue 29): test keys only; a simulated OTA booking flows through the
test sandbox's feed and the real intake to a signed event at a test endpoint; check-in,
faults and reset act on the test record alone."""

from __future__ import annotations

from typing import Any

import pytest

from connectapi.storage import pushes, twins

from .harness import API, Harness, eventually
from .test_ota_bookings import events_of
from .webhook_receiver import Receiver, serving

SCOPES = ["ari:read", "ari:write", "bookings:read", "bookings:write"]
HELPERS = ("/test-helpers/ota-bookings", "/test-helpers/ota-bookings/X/modify", "/test-helpers/ota-bookings/X/cancel",
           "/test-helpers/bookings/1/check-in", "/test-helpers/channel-manager/faults", "/test-helpers/reset")


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1", "CONNECTAPI_PUSH_PAUSED": "0",
            "CONNECTAPI_BUDGETS": "writes=1000,property-writes=1000,requests=1000,property=1000"}


async def keyed(api: Harness) -> tuple[dict[str, Any], str, str]:
    prop = await api.create_property()
    live = await api.create_key(prop["id"], SCOPES)
    test = await api.create_key(prop["id"], SCOPES, mode="test")
    return prop, str(live["key"]), str(test["key"])


async def available(api: Harness, key: str, room: int, night: str) -> int:
    answer = await api.call("GET", f"{API}/availability?from={night}&to={night}", key=key)
    group = next(g for g in answer.data["roomTypes"] if g["roomTypeId"] == room)
    return int(group["nights"][0]["available"])


def stay(prop: dict[str, Any]) -> dict[str, Any]:
    return {"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"],
            "checkIn": "2026-12-10", "checkOut": "2026-12-12", "guest": {"name": "Ana Lima", "email": "ana@example.com"}}


async def test_a_simulated_ota_booking_carries_taxes_extras_payment_terms_and_children(api: Harness,
                                                                                       receiver: Receiver) -> None:
    prop, _, test = await keyed(api)
    endpoint = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": receiver.url, "mode": "test"})
    secret = endpoint.data["secret"]
    await events_of(receiver, secret, 1)  # the ping
    made = await api.call("POST", f"{API}/test-helpers/ota-bookings", key=test, body={
        **stay(prop), "adults": 2, "children": 1, "childrenAges": [7], "arrivalHour": "18:00",
        "taxes": [{"name": "City tax", "type": "city_tax", "amount": "6.00"}],
        "extras": [{"name": "Parking", "amount": "20.00", "priceMode": "Per night", "nights": 2}],
        "paymentCollect": "property", "paymentType": "bank_transfer"})
    assert made.status == 201, made.body
    booking = (await events_of(receiver, secret, 2))[1]["data"]["booking"]
    [room] = booking["rooms"]
    assert (room["childrenAges"], room["amount"], room["taxes"]) == (
        [7], "200.00", [{"name": "City tax", "type": "city_tax", "inclusive": False, "amount": "6.00"}])
    assert [n["amount"] for n in room["nights"]] == ["100.00", "100.00"]
    assert booking["services"] == [{"name": "Parking", "type": "Parking", "amount": "20.00",
                                    "priceMode": "Per night", "persons": None, "nights": 2}]
    assert booking["amounts"]["total"] == "220.00"
    assert (booking["amounts"]["paymentCollect"], booking["amounts"]["paymentType"], booking["arrivalHour"]) == (
        "property", "bank_transfer", "18:00")
    # A body that is not one: nights that are not one a night, ages that are not one a child.
    for odd in ({"nightlyAmounts": ["100.00"]}, {"children": 1, "childrenAges": [4, 9]}):
        wrong = await api.call("POST", f"{API}/test-helpers/ota-bookings", key=test, body={**stay(prop), **odd})
        assert (wrong.status, wrong.code) == (400, "VALIDATION"), odd


async def test_a_live_key_gets_404_from_every_helper(api: Harness) -> None:
    prop, live, test = await keyed(api)
    for path in HELPERS:
        answer = await api.call("POST", f"{API}{path}", key=live, body={})
        assert (answer.status, answer.code) == (404, "NOT_FOUND"), path
    # Nothing was made of it: no OTA booking in either sandbox.
    assert api.ctx.channel.test_sandbox.bookings.revisions == {}
    assert api.ctx.channel.sandbox is not None and api.ctx.channel.sandbox.bookings.revisions == {}


async def test_a_simulated_ota_booking_becomes_test_events_and_touches_nothing_live(api: Harness,
                                                                                     receiver: Receiver) -> None:
    prop, live, test = await keyed(api)
    endpoint = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": receiver.url, "mode": "test"})
    secret = endpoint.data["secret"]
    await events_of(receiver, secret, 1)  # the ping
    live_receiver = Receiver()
    async with serving(live_receiver):
        await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": live_receiver.url})
        await eventually(lambda: len(live_receiver.received) == 1, "the live endpoint's ping")
        await _simulate(api, prop, live, test, receiver, secret)
        # The live endpoint heard its ping and nothing of the test record.
        assert len(live_receiver.received) == 1


async def _simulate(api: Harness, prop: dict[str, Any], live: str, test: str, receiver: Receiver,
                    secret: str) -> None:
    room = prop["roomTypes"][0]["id"]
    made = await api.call("POST", f"{API}/test-helpers/ota-bookings", key=test, body=stay(prop))
    assert made.status == 201, made.body
    # The answer names the booking as its webhook does: its reference, and the channel's code.
    reference, code = made.data["reference"], made.data["reservationCode"]
    assert reference.startswith("TEST-") and code != reference  # a test booking's reference says so
    created = (await events_of(receiver, secret, 2))[1]
    assert (created["type"], created["mode"], created["property"]["id"]) == ("channel.booking.created", "test",
                                                                             prop["id"])
    booking = created["data"]["booking"]
    assert (booking["reference"], booking["channel"]["reservationCode"]) == (reference, code)
    assert booking["amounts"]["total"] == "200.00"
    assert await available(api, test, room, "2026-12-10") == 7
    assert await available(api, live, room, "2026-12-10") == 8
    # Modify names it by its reference, cancel by the channel's code: both are taken.
    changed = await api.call("POST", f"{API}/test-helpers/ota-bookings/{reference}/modify", key=test,
                             body={"checkOut": "2026-12-13"})
    assert changed.status == 200, changed.body
    assert (changed.data["reference"], changed.data["reservationCode"], changed.data["status"]) == (
        reference, code, "modified")
    assert (await events_of(receiver, secret, 3))[2]["type"] == "channel.booking.modified"
    assert (await api.call("POST", f"{API}/test-helpers/ota-bookings/{code}/cancel", key=test)).status == 200
    assert (await events_of(receiver, secret, 4))[3]["type"] == "channel.booking.cancelled"
    assert await available(api, test, room, "2026-12-12") == 8
    # The live record and the channel manager heard nothing; the test feed is acknowledged.
    assert api.ctx.channel.sandbox is not None and api.ctx.channel.sandbox.bookings.revisions == {}
    await eventually(lambda: api.ctx.channel.test_sandbox.bookings.feed(None) == [], "the test feed acknowledged")
    assert await api.ctx.db.fetchval("SELECT count(*) FROM ota_revisions WHERE property_id = $1", prop["id"]) == 0
    # Another property's test key cannot reach this booking, by either name.
    _, _, other = await keyed(api)
    for name in (code, reference):
        unknown = await api.call("POST", f"{API}/test-helpers/ota-bookings/{name}/cancel", key=other)
        assert (unknown.status, unknown.code) == (404, "NOT_FOUND")


async def test_a_checked_in_test_booking_can_be_neither_cancelled_nor_changed(api: Harness) -> None:
    prop, live, test = await keyed(api)
    body = {"externalReference": "WEB-9", "checkIn": "2026-12-01", "checkOut": "2026-12-02", "currency": "EUR",
            "guest": {"name": "Ana Silva", "phone": "+351 912 345 678"},
            "rooms": [{"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"],
                       "adults": 2, "nightlyRate": "120.50"}]}
    made = await api.call("POST", f"{API}/bookings", key=test, body=body)
    assert made.status == 201, made.body
    booking = made.data["bookingId"]
    live_try = await api.call("POST", f"{API}/test-helpers/bookings/{booking}/check-in", key=live)
    assert live_try.status == 404
    checked = await api.call("POST", f"{API}/test-helpers/bookings/{booking}/check-in", key=test)
    assert (checked.status, checked.data["status"]) == (200, "CHECKED_IN")
    cancel = await api.call("POST", f"{API}/bookings/{booking}/cancel", key=test)
    assert (cancel.status, cancel.code) == (409, "BOOKING_NOT_CANCELLABLE")
    change = await api.call("PATCH", f"{API}/bookings/{booking}", key=test, body={"checkOut": "2026-12-03"})
    assert (change.status, change.code) == (409, "BOOKING_NOT_MODIFIABLE")
    unknown = await api.call("POST", f"{API}/test-helpers/bookings/999999/check-in", key=test)
    assert (unknown.status, unknown.code) == (404, "BOOKING_NOT_FOUND")


async def test_an_armed_fault_is_seen_in_sync_and_never_reaches_live_pushes(api: Harness) -> None:
    prop, live, test = await keyed(api)
    armed = await api.call("POST", f"{API}/test-helpers/channel-manager/faults", key=test,
                           body={"mode": "500", "count": 1})
    assert (armed.status, armed.data) == (200, {"mode": "500", "count": 1})
    twin = await twins.twin_of(api.ctx.db, prop["id"])
    assert twin is not None
    entry = {"roomTypeId": prop["roomTypes"][0]["id"], "dateFrom": "2026-12-01", "dateTo": "2026-12-01",
             "available": 3}
    assert (await api.call("PUT", f"{API}/availability", key=test, body={"updates": [entry]})).status == 202

    async def failed() -> bool:
        outcome = await api.ctx.db.fetchval("SELECT cm_last_outcome FROM properties WHERE id = $1", twin)
        return bool(outcome == "failed")
    await eventually(failed, "the test record to say the push failed")
    sync = await api.call("GET", f"{API}/sync", key=test)
    assert sync.data["projector"]["lastOutcome"] == "failed" and sync.data["inventory"]["dirtyCells"] >= 1
    # The live property pushes as ever.
    assert (await api.call("PUT", f"{API}/availability", key=live, body={"updates": [entry]})).status == 202

    async def live_pushed() -> bool:
        return not any((await pushes.dirty_counts(api.ctx.db, prop["id"])).values())
    await eventually(live_pushed, "the live push")
    sync = await api.call("GET", f"{API}/sync", key=live)
    assert sync.data["inventory"]["dirtyCells"] == 0 and sync.data["projector"]["lastOutcome"] == "ok"
    refuse = await api.call("POST", f"{API}/test-helpers/channel-manager/faults", key=test, body={"mode": "sandbox"})
    assert (refuse.status, refuse.code) == (400, "VALIDATION")


async def test_a_reset_empties_the_test_record_and_keeps_keys_and_the_live_record(api: Harness) -> None:
    prop, live, test = await keyed(api)
    room = prop["roomTypes"][0]["id"]
    entry = {"roomTypeId": room, "dateFrom": "2026-12-01", "dateTo": "2026-12-01", "available": 3}
    written = await api.call("PUT", f"{API}/availability", key=test, body={"updates": [entry]})
    assert (await api.call("PUT", f"{API}/availability", key=live, body={"updates": [entry]})).status == 202
    assert await available(api, test, room, "2026-12-01") == 3
    done = await api.call("POST", f"{API}/test-helpers/reset", key=test)
    assert (done.status, done.data) == (200, {"propertyId": prop["id"], "mode": "test", "reset": True})
    assert await available(api, test, room, "2026-12-01") == 8
    assert (await api.call("GET", f"{API}/batches/{written.data['batchId']}", key=test)).status == 404
    assert await available(api, live, room, "2026-12-01") == 3


@pytest.mark.parametrize(("check_in", "check_out"), [("2026-12-10", "9999-12-31"), ("9999-01-01", "9999-01-03"),
                                                     ("2026-12-01", "2027-03-02"), ("2020-01-01", "2020-01-03")])
async def test_a_stay_no_channel_could_sell_is_refused_at_once(api: Harness, check_in: str, check_out: str) -> None:
    prop, _, test = await keyed(api)
    body = {**stay(prop), "checkIn": check_in, "checkOut": check_out}
    answer = await api.call("POST", f"{API}/test-helpers/ota-bookings", key=test, body=body)
    assert (answer.status, answer.code) == (400, "VALIDATION"), answer.body
    assert api.ctx.channel.test_sandbox.bookings.stays == {}
    made = await api.call("POST", f"{API}/test-helpers/ota-bookings", key=test, body=stay(prop))
    assert made.status == 201
    code = made.data["reference"]
    longer = await api.call("POST", f"{API}/test-helpers/ota-bookings/{code}/modify", key=test,
                            body={"checkOut": "9999-12-31"})
    assert (longer.status, longer.code) == (400, "VALIDATION")
    held = next(iter(api.ctx.channel.test_sandbox.bookings.stays.values()))
    assert str(held.departure) == "2026-12-12"  # unchanged


async def test_a_reset_forgets_the_test_sandboxs_bookings_of_the_record(api: Harness) -> None:
    prop, _, test = await keyed(api)
    made = await api.call("POST", f"{API}/test-helpers/ota-bookings", key=test, body=stay(prop))
    assert made.status == 201
    assert (await api.call("POST", f"{API}/test-helpers/reset", key=test)).status == 200
    assert api.ctx.channel.test_sandbox.bookings.stays == {} and api.ctx.channel.test_sandbox.bookings.revisions == {}
    gone = await api.call("POST", f"{API}/test-helpers/ota-bookings/{made.data['reference']}/cancel", key=test)
    assert (gone.status, gone.code) == (404, "NOT_FOUND")
