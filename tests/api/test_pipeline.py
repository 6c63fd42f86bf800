"""From PUT to the sandbox channel manager's grid, through the pushers (mock clock, real HTTP)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date, timedelta
from typing import Any

import pytest

from connectapi.actors.messages.reconciler import CheckProperty
from connectapi.channel.sandbox.state import Property
from connectapi.storage import pushes

from .harness import API, Harness, eventually


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_PUSH_PAUSED": "0"}


async def settled(api: Harness, property_id: int, seconds: float = 15.0) -> None:
    """Until no cell of the property is dirty. The mock clock stands still meanwhile: what
    is left is real-time work (the record, the sandbox over HTTP), bounded by `seconds` of
    real time, a ceiling for a failing test."""
    last: dict[str, int] = {}

    async def clean() -> bool:
        last.update(await pushes.dirty_counts(api.ctx.db, property_id))
        return not any(last.values())

    await eventually(clean, lambda: f"no dirty cell (still dirty: {last})", seconds)


def grid(api: Harness, prop: dict[str, Any]) -> Property:
    assert api.ctx.channel.sandbox is not None
    cm_id = next(iter(p for p in api.ctx.channel.sandbox.properties.values() if p.title == prop["name"])).id
    return api.ctx.channel.sandbox.properties[cm_id]


async def test_a_property_is_created_and_mapped_on_the_sandbox(api: Harness) -> None:
    prop = await api.create_property()
    held = grid(api, prop)
    assert len(held.room_types) == 2 and len(held.rate_plans) == 2
    mapped = await api.ctx.db.fetchval("SELECT count(*) FROM rate_plans WHERE property_id = $1 AND cm_id IS NOT NULL",
                                       prop["id"])
    assert mapped == 2


async def test_every_resource_reaches_the_grid_coalesced(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    assert api.ctx.channel.sandbox is not None
    seeded_calls = api.ctx.channel.sandbox.stats.availability_calls  # creation seeded the sandbox
    year_end = str(date(2026, 11, 23) + timedelta(days=364))
    answers = [
        await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
            {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": year_end, "available": 5}]}),
        await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
            {"ratePlanId": plan, "dateFrom": "2026-11-23", "dateTo": year_end, "rate": 120, "currency": "EUR"},
            {"ratePlanId": plan, "dateFrom": "2026-11-23", "dateTo": year_end, "rate": 150, "currency": "EUR",
             "days": ["fr", "sa"]}]}),
        await api.call("PUT", f"{API}/restrictions", key=key, body={"updates": [
            {"ratePlanId": plan, "dateFrom": "2026-12-24", "dateTo": "2026-12-26", "stopSell": True,
             "minStayArrival": 2}]}),
    ]
    assert [a.status for a in answers] == [202, 202, 202]
    await settled(api, prop["id"])
    held = grid(api, prop)
    cm_room = next(iter(held.room_types))
    cm_plan = next(cm for cm, p in held.rate_plans.items() if p.title == "Flexible")
    assert held.availability[cm_room][date(2026, 11, 23)] == 5 and held.availability[cm_room][date(2027, 11, 22)] == 5
    assert held.restrictions[cm_plan][date(2026, 11, 27)]["rate"] == "150.00"  # a Friday
    assert held.restrictions[cm_plan][date(2026, 11, 30)]["rate"] == "120.00"
    assert held.restrictions[cm_plan][date(2026, 12, 25)] == {
        "rate": "150.00", "stop_sell": True, "closed_to_arrival": False, "closed_to_departure": False,
        "min_stay_arrival": 2, "min_stay_through": 1, "max_stay": 0}
    stats = api.ctx.channel.sandbox.stats if api.ctx.channel.sandbox else None
    assert stats is not None
    # a year of one value is one value in one call; the rates' weekend pattern is two
    assert stats.availability_calls - seeded_calls == 1
    for answer in answers:
        batch = await api.call("GET", answer.data["poll"], key=key)
        assert (batch.data["status"], batch.data["pendingCells"], batch.data["lastError"]) == ("completed", 0, None)


async def test_only_changed_cells_are_sent(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    entry = {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2026-11-29", "available": 3}
    await api.call("PUT", f"{API}/availability", key=key, body={"updates": [entry]})
    await settled(api, prop["id"])
    assert api.ctx.channel.sandbox is not None
    sent = api.ctx.channel.sandbox.stats.cells
    # the same values again: no-ops, nothing dirty, nothing sent
    again = await api.call("PUT", f"{API}/availability", key=key, body={"updates": [entry]})
    assert again.data["acceptedCells"] == 0
    # one night changed: one cell sent
    await api.call("PUT", f"{API}/availability", key=key, body={"updates": [{**entry, "dateFrom": "2026-11-25",
                                                                             "dateTo": "2026-11-25", "available": 1}]})
    await settled(api, prop["id"])
    assert api.ctx.channel.sandbox.stats.cells == sent + 1


def failed_in_a_row(api: Harness, property_id: int, count: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await api.cm_failures(property_id) == count
    return check


async def until_outcome(api: Harness, property_id: int, outcome: str) -> None:
    async def reached() -> bool:
        found = await api.ctx.db.fetchval("SELECT cm_last_outcome FROM properties WHERE id = $1", property_id)
        return bool(found == outcome)

    await eventually(reached, f"the outcome {outcome}")


async def test_a_failed_push_is_reported_and_retried_after_backoff(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    assert api.ctx.channel.sandbox is not None
    api.ctx.channel.sandbox.faults.mode, api.ctx.channel.sandbox.faults.remaining = "500", 1
    made = await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
        {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", "available": 2}]})
    await until_outcome(api, prop["id"], "failed")
    batch = await api.call("GET", made.data["poll"], key=key)
    assert batch.data["status"] == "pending" and "HTTP 500" in batch.data["lastError"]
    api.advance(76.0)  # the first pause is Channex's minute, jittered up to a quarter more
    await settled(api, prop["id"])
    batch = await api.call("GET", made.data["poll"], key=key)
    assert (batch.data["status"], batch.data["lastError"]) == ("completed", None)
    assert api.ctx.channel.sandbox.stats.failed == 1


async def test_sync_through_failure_and_recovery(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]["id"]
    sync = await api.call("GET", f"{API}/sync", key=key)
    assert sync.data == {
        "inventory": {"state": "IN_SYNC", "dirtyCells": 0, "refusedCells": 0},
        "rates": {"dirtyCells": 0, "refusedCells": 0}, "restrictions": {"dirtyCells": 0, "refusedCells": 0},
        "refusedCells": 0,
        "projector": {"lastPushAt": None, "lastOutcome": None, "lastError": None, "nextAttemptAt": None},
        "newestPendingBatch": None}
    assert api.ctx.channel.sandbox is not None
    api.ctx.channel.sandbox.faults.mode, api.ctx.channel.sandbox.faults.remaining = "500", 3
    made = await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
        {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", "available": 2}]})
    await until_outcome(api, prop["id"], "failed")
    sync = await api.call("GET", f"{API}/sync", key=key)
    assert sync.data["inventory"] == {"state": "BACKING_OFF", "dirtyCells": 1, "refusedCells": 0}
    assert sync.data["newestPendingBatch"] == {"batchId": made.data["batchId"], "pendingCells": 1}
    assert "HTTP 500" in sync.data["projector"]["lastError"] and sync.data["projector"]["nextAttemptAt"]
    for failures in (2, 3):  # two more failures: three in a row
        # Each pause (at most 300 s) is counted from its failure, recorded before the clock moves.
        api.advance(300)
        await eventually(failed_in_a_row(api, prop["id"], failures), f"{failures} failures in a row")
    assert (await api.call("GET", f"{API}/sync", key=key)).data["inventory"]["state"] == "FAILING"
    api.advance(300)  # the faults are used up: the next try goes through
    await settled(api, prop["id"])
    sync = await api.call("GET", f"{API}/sync", key=key)
    assert sync.data["inventory"] == {"state": "IN_SYNC", "dirtyCells": 0, "refusedCells": 0}
    assert (sync.data["projector"]["lastOutcome"], sync.data["projector"]["lastError"]) == ("ok", None)
    assert sync.data["newestPendingBatch"] is None


async def test_admin_sandbox_routes_and_channel_grid(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
        {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2026-11-24", "available": 6}]})
    await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        {"ratePlanId": plan, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", "rate": "99", "currency": "EUR"}]})
    await settled(api, prop["id"])
    reads = (await api.admin("GET", "/sandbox")).data["stats"]["readCalls"]
    held = await api.admin("GET", f"/properties/{prop['id']}/channel-grid?from=2026-11-23&to=2026-11-23")
    assert {"roomTypeId": room, "date": "2026-11-23", "available": 6} in held.data["availability"]
    assert held.data["rates"] == [{"ratePlanId": plan, "date": "2026-11-23", "rateMinor": 9900}]
    stats = await api.admin("GET", "/sandbox")
    assert stats.data["stats"]["readCalls"] == reads  # the sandbox is looked at, not read through its budget
    assert stats.data["url"].startswith("http://127.0.0.1:") and stats.data["stats"]["availabilityCalls"] >= 1
    calls = (await api.admin("GET", "/sandbox/calls")).data
    cm_property = await api.ctx.db.fetchval("SELECT cm_property_id FROM properties WHERE id = $1", prop["id"])
    mine = [c for c in calls if cm_property in c["property_ids"]]
    seen = [(c["kind"], c["values"]) for c in mine]
    assert ("availability", 2) in seen and ("restrictions", 1) in seen, seen  # the two nights; the rate
    assert all(c["task_id"] and c["at"].startswith(api.ctx.clock.now().date().isoformat()) for c in mine)
    bad = await api.admin("POST", "/sandbox/faults", {"mode": "explode"})
    assert bad.code == "VALIDATION"
    armed = await api.admin("POST", "/sandbox/faults", {"mode": "429", "count": 2, "retryAfter": 5})
    assert armed.status == 200 and api.ctx.channel.sandbox is not None and api.ctx.channel.sandbox.faults.remaining == 2


async def test_reconciler_repairs_a_cell_changed_behind_our_back(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
        {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2026-11-25", "available": 4}]})
    await api.call("PUT", f"{API}/restrictions", key=key, body={"updates": [
        {"ratePlanId": plan, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", "maxStay": 5}]})
    await settled(api, prop["id"])
    held = grid(api, prop)
    cm_room = next(iter(held.room_types))
    cm_plan = next(cm for cm, p in held.rate_plans.items() if p.title == "Flexible")
    # someone edits the channel manager directly
    held.availability[cm_room][date(2026, 11, 24)] = 9
    held.restrictions[cm_plan][date(2026, 11, 23)]["max_stay"] = 2
    assert (await api.handles.reconciler.ask(CheckProperty(prop["id"]), 5)).marked == {
        "availability": 1, "rates": 0, "restrictions": 1}
    await settled(api, prop["id"])
    assert held.availability[cm_room][date(2026, 11, 24)] == 4
    assert held.restrictions[cm_plan][date(2026, 11, 23)]["max_stay"] == 5
    # nothing differs any more
    assert (await api.handles.reconciler.ask(CheckProperty(prop["id"]), 5)).marked == {
        "availability": 0, "rates": 0, "restrictions": 0}


async def test_bookings_reach_the_channel_manager_through_the_drain(api: Harness) -> None:
    prop, key = await api.keyed_property(["bookings:write", "ari:read"])
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    made = await api.call("POST", f"{API}/bookings", key=key, body={
        "externalReference": "WEB-1", "checkIn": "2026-12-01", "checkOut": "2026-12-03", "currency": "EUR",
        "guest": {"name": "Ana Silva", "phone": "+351912345678"},
        "rooms": [{"roomTypeId": room, "ratePlanId": plan, "adults": 2, "nightlyRate": "99.00"}] * 2})
    assert made.status == 201, made.body
    await settled(api, prop["id"])
    cm_room = await api.ctx.db.fetchval("SELECT cm_id FROM room_types WHERE id = $1", room)
    held = grid(api, prop).availability[cm_room]
    assert [held[date(2026, 12, d)] for d in (1, 2, 3)] == [6, 6, 8]
    cancelled = await api.call("POST", f"{API}/bookings/{made.data['bookingId']}/cancel", key=key)
    assert cancelled.status == 200
    await settled(api, prop["id"])
    held = grid(api, prop).availability[cm_room]
    assert [held[date(2026, 12, d)] for d in (1, 2, 3)] == [8, 8, 8]


async def test_the_sandbox_emits_ota_booking_revisions_for_a_property(api: Harness) -> None:
    prop = await api.create_property()
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    base = f"/properties/{prop['id']}/sandbox/ota-bookings"
    made = await api.admin("POST", base, {
        "roomTypeId": room, "ratePlanId": plan, "checkIn": "2026-12-01", "checkOut": "2026-12-03", "adults": 2,
        "guest": {"name": "Ana", "surname": "Silva", "email": "ana@example.com"}, "amount": "240.00"})
    assert made.status == 201 and made.data["status"] == "new", made.body
    # Answered once the intake applied it: the booking's reference, as its webhooks name it.
    reference = made.data["reference"]
    assert reference.startswith("PMS-") and made.data["reservationCode"] != reference
    changed = await api.admin("POST", f"{base}/{reference}/modify", {"checkOut": "2026-12-04", "amount": "360.00"})
    assert changed.data["status"] == "modified"
    assert (await api.admin("POST", f"{base}/{reference}/cancel")).data["status"] == "cancelled"
    assert api.ctx.channel.sandbox is not None
    cm_property = await api.ctx.db.fetchval("SELECT cm_property_id FROM properties WHERE id = $1", prop["id"])
    # Every revision the sandbox emitted (the intake may have acknowledged them already).
    revisions = [r for r in api.ctx.channel.sandbox.bookings.revisions.values() if r["property_id"] == cm_property]
    assert [(r["status"], r["departure_date"], r["amount"]) for r in revisions] == [
        ("new", "2026-12-03", "240.00"), ("modified", "2026-12-04", "360.00"), ("cancelled", "2026-12-04", "360.00")]
    cm_room = await api.ctx.db.fetchval("SELECT cm_id FROM room_types WHERE id = $1", room)
    assert revisions[0]["rooms"][0]["room_type_id"] == cm_room and revisions[0]["currency"] == "EUR"

    bad = await api.admin("POST", base, {"roomTypeId": 999999, "ratePlanId": plan, "checkIn": "2026-12-01",
                                         "checkOut": "2026-12-01", "adults": 2, "guest": {"name": "A"},
                                         "amount": "1"})
    assert bad.code == "VALIDATION"
    other = await api.create_property(name="Other")
    assert (await api.admin("POST", f"/properties/{other['id']}/sandbox/ota-bookings/{reference}/cancel")
            ).code == "NOT_FOUND"
    unmapped_room = await api.admin("POST", base, {"roomTypeId": other["roomTypes"][0]["id"], "ratePlanId": plan,
                                                   "checkIn": "2026-12-01", "checkOut": "2026-12-02", "adults": 1,
                                                   "guest": {"name": "A"}, "amount": "1"})
    assert unmapped_room.data["details"][0]["path"] == "roomTypeId"
