"""Test mode (issue 29): a test key works on the property's test twin, with the live
property's catalog and ids and a record, budgets and keys of its own."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from connectapi.actors.messages.channel_manager import Push
from connectapi.domain import api_keys as keyfmt
from connectapi.domain.channel_values import AvailabilityValue
from connectapi.storage import twins

from .harness import API, Harness, eventually
from .test_pipeline import settled
from .webhook_receiver import Receiver, serving, signed_by

NIGHT = "2026-12-01"
SMALL = "requests=3,writes=2,property=5,property-writes=3,cells=100,ip=6,global=80"


async def available(api: Harness, key: str, room: int) -> int:
    answer = await api.call("GET", f"{API}/availability?from={NIGHT}&to={NIGHT}", key=key)
    assert answer.status == 200, answer.body
    group = next(g for g in answer.data["roomTypes"] if g["roomTypeId"] == room)
    return int(group["nights"][0]["available"])


async def both_keys(api: Harness, scopes: list[str] | None = None) -> tuple[dict[str, Any], str, str]:
    prop = await api.create_property()
    live = await api.create_key(prop["id"], scopes)
    test = await api.create_key(prop["id"], scopes, mode="test")
    return prop, str(live["key"]), str(test["key"])


async def test_a_test_key_is_minted_with_the_test_prefix_and_listed_with_its_mode(api: Harness) -> None:
    prop = await api.create_property()
    live = await api.create_key(prop["id"])
    test = await api.create_key(prop["id"], mode="test")
    assert str(live["key"]).startswith("cak_live_") and live["mode"] == "live"
    assert str(test["key"]).startswith("cak_test_") and test["mode"] == "test"
    assert keyfmt.is_well_formed(str(test["key"])) and len(str(test["key"])) == len(str(live["key"]))
    assert test["propertyId"] == prop["id"] and str(test["prefix"]).startswith("cak_test_")
    listed = await api.admin("GET", f"/properties/{prop['id']}/keys")
    assert [(k["id"], k["mode"], k["propertyId"]) for k in listed.data] == [
        (live["id"], "live", prop["id"]), (test["id"], "test", prop["id"])]
    # A rotated test key is a test key.
    rotated = await api.admin("POST", f"/keys/{test['id']}/rotate")
    assert rotated.status == 201 and str(rotated.data["key"]).startswith("cak_test_") and rotated.data["mode"] == "test"
    assert (await api.call("GET", f"{API}/property", key=str(test["key"]))).code == "API_KEY_REVOKED"
    assert (await api.call("GET", f"{API}/property", key=str(rotated.data["key"]))).status == 200


async def test_an_unknown_mode_is_refused_and_nothing_is_made(api: Harness) -> None:
    prop = await api.create_property()
    answer = await api.admin("POST", f"/properties/{prop['id']}/keys", {"label": "x", "scopes": ["ari:read"],
                                                                        "mode": "sandbox"})
    assert (answer.status, answer.code) == (400, "VALIDATION")
    assert (await api.admin("GET", f"/properties/{prop['id']}/keys")).data == []


async def test_get_property_says_the_mode_and_the_live_id(api: Harness) -> None:
    prop, live, test = await both_keys(api)
    for key, mode in ((live, "live"), (test, "test")):
        answer = await api.call("GET", f"{API}/property", key=key)
        assert answer.status == 200
        assert (answer.data["id"], answer.data["mode"], answer.data["name"]) == (prop["id"], mode, prop["name"])
    live_catalog = await api.call("GET", f"{API}/catalog", key=live)
    test_catalog = await api.call("GET", f"{API}/catalog", key=test)
    assert test_catalog.data == live_catalog.data and test_catalog.data["roomTypes"]


async def test_test_writes_are_seen_only_through_test_keys_and_live_ones_only_through_live_keys(api: Harness) -> None:
    _, live, test = await both_keys(api)
    catalog = (await api.call("GET", f"{API}/catalog", key=live)).data
    room, plan = catalog["roomTypes"][0]["id"], catalog["ratePlans"][0]["id"]
    cells = {"dateFrom": NIGHT, "dateTo": NIGHT}
    written = await api.call("PUT", f"{API}/availability", key=test,
                             body={"updates": [{"roomTypeId": room, "available": 1, **cells}]})
    assert written.status == 202, written.body
    assert (await api.call("PUT", f"{API}/rates", key=test, body={"updates": [
        {"ratePlanId": plan, "rate": 123, "currency": "EUR", **cells}]})).status == 202
    assert (await api.call("PUT", f"{API}/rates", key=live, body={"updates": [
        {"ratePlanId": plan, "rate": 456, "currency": "EUR", **cells}]})).status == 202
    query = f"from={NIGHT}&to={NIGHT}"
    assert await available(api, test, room) == 1
    assert await available(api, live, room) == 8
    test_rates = str((await api.call("GET", f"{API}/rates?{query}", key=test)).data)
    live_rates = str((await api.call("GET", f"{API}/rates?{query}", key=live)).data)
    assert "123" in test_rates and "456" not in test_rates
    assert "456" in live_rates and "123" not in live_rates
    # A test batch is not a live one.
    batch = written.data["batchId"]
    assert (await api.call("GET", f"{API}/batches/{batch}", key=test)).status == 200
    assert (await api.call("GET", f"{API}/batches/{batch}", key=live)).status == 404


@pytest.mark.parametrize("env", [{"CONNECTAPI_BUDGETS": SMALL}])
async def test_test_traffic_never_spends_a_live_budget(api: Harness) -> None:
    _, live, test = await both_keys(api)
    # `requests` is 3 a minute for each key, `ip` 6 for an address: the test key spends its own.
    for _ in range(3):
        assert (await api.call("GET", f"{API}/property", key=test)).status == 200
    spent = await api.call("GET", f"{API}/property", key=test)
    assert (spent.status, spent.data["scope"]) == (429, "requests")
    for _ in range(2):
        assert (await api.call("GET", f"{API}/property", key=test)).status == 429
    # The address has made 6 test requests: its live `ip` budget is untouched.
    for _ in range(3):
        assert (await api.call("GET", f"{API}/property", key=live)).status == 200
    # And test requests with a wrong test key count on the test address budget only.
    wrong = "cak_test_" + "A" * 43
    assert (await api.call("GET", f"{API}/property", key=wrong)).data["scope"] == "ip"
    assert (await api.call("GET", f"{API}/property", key=live)).data["scope"] == "requests"


@pytest.mark.parametrize("env", [{"CONNECTAPI_PUSH_PAUSED": "0"}])
async def test_test_writes_reach_the_test_sandbox_and_never_the_channel_manager(api: Harness) -> None:
    prop, live, test = await both_keys(api)
    live_sandbox, test_sandbox = api.ctx.channel.sandbox, api.ctx.channel.test_sandbox
    assert live_sandbox is not None and live_sandbox is not test_sandbox
    twin = await twins.twin_of(api.ctx.db, int(prop["id"]))
    assert twin is not None
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    before = (live_sandbox.stats.availability_calls, live_sandbox.stats.restriction_calls, live_sandbox.stats.cells)
    cells = {"dateFrom": NIGHT, "dateTo": NIGHT}
    for path, entry in (("availability", {"roomTypeId": room, "available": 1}),
                        ("rates", {"ratePlanId": plan, "rate": 123, "currency": "EUR"}),
                        ("restrictions", {"ratePlanId": plan, "stopSell": True})):
        answer = await api.call("PUT", f"{API}/{path}", key=test, body={"updates": [{**entry, **cells}]})
        assert answer.status == 202, answer.body
    await settled(api, twin)
    # The test sandbox holds them under the live property's channel ids ...
    cm_property = await api.ctx.db.fetchval("SELECT cm_property_id FROM properties WHERE id = $1", prop["id"])
    cm_room = await api.ctx.db.fetchval("SELECT cm_id FROM room_types WHERE id = $1", room)
    cm_plan = await api.ctx.db.fetchval("SELECT cm_id FROM rate_plans WHERE id = $1", plan)
    held = test_sandbox.properties[cm_property]
    night = date.fromisoformat(NIGHT)
    assert held.availability[cm_room][night] == 1
    assert held.restrictions[cm_plan][night]["rate"] == "123.00" and held.restrictions[cm_plan][night]["stop_sell"]
    # ... and the channel manager heard nothing of them.
    assert (live_sandbox.stats.availability_calls, live_sandbox.stats.restriction_calls,
            live_sandbox.stats.cells) == before
    assert night not in live_sandbox.properties[cm_property].restrictions.get(cm_plan, {})
    # The test record says it is in sync, as a live one would.
    sync = await api.call("GET", f"{API}/sync", key=test)
    assert (sync.data["inventory"]["dirtyCells"], sync.data["rates"]["dirtyCells"],
            sync.data["projector"]["lastOutcome"], sync.data["newestPendingBatch"]) == (0, 0, "ok", None)
    # A live write goes to the channel manager, not to the test sandbox.
    test_calls = test_sandbox.stats.restriction_calls
    assert (await api.call("PUT", f"{API}/rates", key=live, body={"updates": [
        {"ratePlanId": plan, "rate": 456, "currency": "EUR", **cells}]})).status == 202
    await settled(api, int(prop["id"]))
    assert live_sandbox.properties[cm_property].restrictions[cm_plan][night]["rate"] == "456.00"
    assert test_sandbox.properties[cm_property].restrictions[cm_plan][night]["rate"] == "123.00"
    assert test_sandbox.stats.restriction_calls == test_calls


async def test_a_push_of_one_mode_is_refused_by_the_channel_manager_of_the_other(api: Harness) -> None:
    value = AvailabilityValue(property_id="p", room_type_id="r", date_from=NIGHT, date_to=NIGHT, availability=1)
    live_sandbox = api.ctx.channel.sandbox
    assert live_sandbox is not None
    # A push that says live for a property the record knows as a test twin: refused too.
    prop, _, _ = await both_keys(api)
    twin = await twins.twin_of(api.ctx.db, prop["id"])
    assert twin is not None
    calls = live_sandbox.stats.availability_calls
    refused = await api.ctx.channel.mailbox.ask(Push(twin, "availability", [value], mode="live"), 5)
    assert not refused.ok and "test property" in str(refused.error)
    assert live_sandbox.stats.availability_calls == calls
    refused = await api.ctx.channel.mailbox.ask(Push(1, "availability", [value], mode="test"), 5)
    assert not refused.ok and "refused" in str(refused.error)
    assert live_sandbox.stats.availability_calls == calls
    refused = await api.handles.test_channel.ask(Push(1, "availability", [value], mode="live"), 5)
    assert not refused.ok and api.ctx.channel.test_sandbox.stats.availability_calls == 0


BOOKING_SCOPES = ["bookings:read", "bookings:write", "ari:read"]


def a_stay(prop: dict[str, Any]) -> dict[str, Any]:
    return {"externalReference": "WEB-1", "checkIn": NIGHT, "checkOut": "2026-12-03", "currency": "EUR",
            "guest": {"name": "Ana Silva", "phone": "+351 912 345 678", "email": "ana@example.com"},
            "rooms": [{"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"],
                       "adults": 2, "nightlyRate": "120.50"}]}


async def test_a_test_booking_takes_a_test_room_and_is_unknown_to_live_keys(api: Harness) -> None:
    prop, live, test = await both_keys(api, BOOKING_SCOPES)
    room = prop["roomTypes"][0]["id"]
    mails = await api.ctx.db.fetchval("SELECT count(*) FROM notifications")
    same = {"x-idempotency-key": "one-key-for-both"}
    made = await api.call("POST", f"{API}/bookings", key=test, body=a_stay(prop), headers=same)
    assert made.status == 201, made.body
    booking = made.data["bookingId"]
    assert (await available(api, test, room), await available(api, live, room)) == (7, 8)
    assert (await api.call("GET", f"{API}/bookings/{booking}", key=test)).status == 200
    unknown = await api.call("GET", f"{API}/bookings/{booking}", key=live)
    assert (unknown.status, unknown.code) == (404, "BOOKING_NOT_FOUND")
    assert (await api.call("POST", f"{API}/bookings/{booking}/cancel", key=live)).code == "BOOKING_NOT_FOUND"
    assert (await api.call("GET", f"{API}/bookings", key=live)).data["count"] == 0
    # The same reference and idempotency key in live mode are another request: a live booking.
    live_made = await api.call("POST", f"{API}/bookings", key=live, body=a_stay(prop), headers=same)
    assert live_made.status == 201 and "X-Idempotent-Replay" not in live_made.headers
    assert live_made.data["bookingId"] != booking
    assert (await available(api, test, room), await available(api, live, room)) == (7, 7)
    # The live booking e-mails its owner; the test one e-mailed nobody.
    assert await api.ctx.db.fetchval("SELECT count(*) FROM notifications") == mails + 1
    cancelled = await api.call("POST", f"{API}/bookings/{booking}/cancel", key=test)
    assert cancelled.status == 200 and cancelled.data["status"] == "CANCELLED"
    assert (await available(api, test, room), await available(api, live, room)) == (8, 7)


@pytest.mark.parametrize("env", [{"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"}])
async def test_endpoints_are_registered_per_mode_and_test_events_say_so(api: Harness, receiver: Receiver) -> None:
    prop = await api.create_property()
    async with serving(Receiver()) as live_receiver:
        live = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": live_receiver.url})
        test = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": receiver.url, "mode": "test"})
        assert (live.status, live.data["mode"], test.status, test.data["mode"]) == (201, "live", 201, "test")
        assert test.data["propertyId"] == prop["id"]

        async def both_pinged() -> bool:
            return len(receiver.received) == 1 and len(live_receiver.received) == 1
        await eventually(both_pinged)
        headers, body = receiver.received[0]
        assert signed_by(test.data["secret"], headers, body)
        event = json.loads(body)
        assert (event["type"], event["mode"], event["property"]["id"]) == ("connectapi.ping", "test", prop["id"])
        assert json.loads(live_receiver.received[0][1])["mode"] == "live"
        listed = await api.admin("GET", f"/properties/{prop['id']}/webhooks")
        assert [(e["id"], e["mode"]) for e in listed.data] == [(live.data["id"], "live"), (test.data["id"], "test")]
        # A test ping goes to the test endpoint alone.
        assert (await api.admin("POST", f"/webhooks/{test.data['id']}/test")).status == 202

        async def pinged_again() -> bool:
            return len(receiver.received) == 2
        await eventually(pinged_again)
        assert len(live_receiver.received) == 1
    bad = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": receiver.url, "mode": "staging"})
    assert (bad.status, bad.code) == (400, "VALIDATION")


async def test_a_test_endpoint_on_loopback_needs_no_setting_and_a_live_one_keeps_every_rule(
        api: Harness, receiver: Receiver) -> None:
    """No CONNECTAPI_WEBHOOK_ALLOW_PRIVATE here: a test endpoint receives test data only, and
    may be an integrator's own machine (decision 0137)."""
    prop = await api.create_property()
    test = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": receiver.url, "mode": "test"})
    assert test.status == 201, test.body

    async def pinged() -> bool:
        return len(receiver.received) == 1
    await eventually(pinged)
    headers, body = receiver.received[0]
    assert signed_by(test.data["secret"], headers, body) and json.loads(body)["mode"] == "test"
    live = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": receiver.url})
    assert (live.status, live.code) == (400, "VALIDATION")
    assert "https://" in live.data["details"][0]["message"]
    metadata = await api.admin("POST", f"/properties/{prop['id']}/webhooks",
                               {"url": "http://169.254.169.254/latest/meta-data", "mode": "test"})
    assert (metadata.status, metadata.code) == (400, "VALIDATION")
    assert "link-local" in metadata.data["details"][0]["message"]
