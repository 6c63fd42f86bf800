"""Prices per occupancy (issue 44): a per-person rate plan from the catalog to the channel
manager's grid (mock clock, real HTTP, the in-process sandbox)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest

from connectapi.actors.messages.reconciler import CheckProperty
from connectapi.channel.sandbox.state import Property, SandboxState

from .harness import API, CASA_AZUL, Harness
from .test_pipeline import settled

# A two-adult room sold per person, a four-adult suite sold per person, and the suite per room.
PER_PERSON_HOUSE: dict[str, Any] = {**CASA_AZUL, "name": "Casa Pessoa", "ratePlans": [
    {"roomType": 0, "name": "Double per person", "mealPlan": "BB", "sellMode": "perPerson"},
    {"roomType": 1, "name": "Suite per person", "mealPlan": "BB", "sellMode": "perPerson", "minRate": 60},
    {"roomType": 1, "name": "Suite", "mealPlan": "RO"},
]}
WEEK = {"dateFrom": "2026-11-30", "dateTo": "2026-12-06", "currency": "EUR"}
NIGHTS = [date(2026, 11, 30) + timedelta(days=n) for n in range(7)]


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_PUSH_PAUSED": "0"}


def plans_of(prop: dict[str, Any]) -> tuple[int, int, int]:
    double, suite_pp, suite = (p["id"] for p in prop["ratePlans"])
    return double, suite_pp, suite


def channel(api: Harness) -> SandboxState:
    """Where the keys' record is pushed: the sandbox for live keys, this process's test
    sandbox for test keys."""
    if api.key_mode == "test":
        return api.ctx.channel.test_sandbox
    assert api.ctx.channel.sandbox is not None
    return api.ctx.channel.sandbox


async def held(api: Harness, prop: dict[str, Any]) -> tuple[Property, dict[str, str]]:
    """The channel's property, and its rate plans' ids by our plans' names."""
    cm_property = await api.ctx.db.fetchval("SELECT cm_property_id FROM properties WHERE id = $1", prop["id"])
    plans = {r["name"]: r["cm_id"] for r in await api.ctx.db.fetch(
        "SELECT name, cm_id FROM rate_plans WHERE property_id = $1", prop["id"])}
    return channel(api).properties[cm_property], plans


async def test_the_catalog_says_how_each_plan_is_sold(api: Harness) -> None:
    prop, key = await api.keyed_property(**PER_PERSON_HOUSE)
    catalog = await api.call("GET", f"{API}/catalog", key=key)
    assert [(p["name"], p["sellMode"], p["occupancies"]) for p in catalog.data["ratePlans"]] == [
        ("Double per person", "perPerson", [1, 2]), ("Suite per person", "perPerson", [1, 2, 3, 4]),
        ("Suite", "perRoom", [4])]
    # The admin API shows it too, and a plan added later may be sold per person.
    added = await api.admin("POST", f"/properties/{prop['id']}/rate-plans", {
        "roomTypeId": prop["roomTypes"][0]["id"], "name": "Double NR", "mealPlan": "RO", "sellMode": "perPerson"})
    assert added.status == 201 and (added.data["sellMode"], added.data["occupancies"]) == ("perPerson", [1, 2])
    # Channex prices a per-person plan for at most 18 adults.
    dorm = await api.admin("POST", "/properties", {**CASA_AZUL, "name": "Dorm", "roomTypes": [
        {"name": "Dorm", "maxAdults": 20, "rooms": 1}], "ratePlans": [
        {"roomType": 0, "name": "Bed", "mealPlan": "RO", "sellMode": "perPerson"}]})
    assert dorm.status == 400 and dorm.data["code"] == "VALIDATION"
    assert await api.ctx.db.fetchval("SELECT count(*) FROM properties WHERE name = 'Dorm'") == 0
    big = await api.admin("POST", "/properties", {**CASA_AZUL, "name": "Big", "roomTypes": [
        {"name": "Dorm", "maxAdults": 20, "rooms": 1}], "ratePlans": []})
    room = big.data["roomTypes"][0]["id"]
    refused = await api.admin("POST", f"/properties/{big.data['id']}/rate-plans", {
        "roomTypeId": room, "name": "Bed", "mealPlan": "RO", "sellMode": "perPerson"})
    assert refused.status == 400 and refused.data["details"][0]["path"] == "sellMode"
    assert await api.ctx.db.fetchval("SELECT count(*) FROM rate_plans WHERE room_type_id = $1", room) == 0


async def test_a_week_of_four_occupancies_is_written_read_and_pushed_as_one_update(api: Harness) -> None:
    prop, key = await api.keyed_property(**PER_PERSON_HOUSE)
    record = await api.record_of(prop)
    double, suite_pp, suite = plans_of(prop)
    sandbox = channel(api)
    before = sandbox.stats.restriction_calls
    written = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        *({"ratePlanId": suite_pp, "occupancy": n, "rate": 100 + 20 * n, **WEEK} for n in (1, 2, 3, 4)),
        {"ratePlanId": double, "occupancy": 1, "rate": 70, **WEEK},
        {"ratePlanId": double, "occupancy": 2, "rate": 90, **WEEK},
        {"ratePlanId": suite, "rate": 250, **WEEK}]})
    assert written.status == 202, written.body
    # One cell per plan, night and occupancy, for the budgets as for the answer.
    assert (written.data["requestedCells"], written.data["acceptedCells"], written.data["noopCells"]) == (49, 49, 0)

    read = await api.call("GET", f"{API}/rates?from=2026-11-30&to=2026-12-06", key=key)
    by_plan = {p["ratePlanId"]: p["nights"] for p in read.data["ratePlans"]}
    assert by_plan[suite_pp][0] == {"date": "2026-11-30", "rateMinor": 18000, "byOccupancy": [
        {"occupancy": 1, "rateMinor": 12000}, {"occupancy": 2, "rateMinor": 14000},
        {"occupancy": 3, "rateMinor": 16000}, {"occupancy": 4, "rateMinor": 18000}]}
    assert [n["date"] for n in by_plan[suite_pp]] == [n.isoformat() for n in NIGHTS]
    assert by_plan[suite][6] == {"date": "2026-12-06", "rateMinor": 25000}  # per room: as before

    await settled(api, record)
    assert sandbox.stats.restriction_calls == before + 1  # one call for the three plans
    house, cm_plans = await held(api, prop)
    # One range value a plan: a week of four occupancies is one multi-occupancy value (the
    # sandbox refuses a single `rate` for a per-person plan, as it refuses an occupancy
    # that is not one of the plan's options).
    call = sandbox.calls[-1]
    assert (call.values, call.warnings) == (3, 0)
    cm_suite_pp = cm_plans["Suite per person"]
    # Every price on the channel.
    for night in NIGHTS:
        assert house.restrictions[cm_suite_pp][night]["rates"] == {1: "120.00", 2: "140.00", 3: "160.00",
                                                                  4: "180.00"}

    # Last write wins per occupancy; an unchanged occupancy is a no-op; one changed is one cell.
    again = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        {"ratePlanId": suite_pp, "occupancy": 1, "rate": 120, **WEEK},
        {"ratePlanId": suite_pp, "occupancy": 2, "rate": 130, "dateFrom": "2026-12-01", "dateTo": "2026-12-01",
         "currency": "EUR"}]})
    assert (again.data["acceptedCells"], again.data["noopCells"]) == (1, 7)
    await settled(api, record)
    assert sandbox.stats.restriction_calls == before + 2
    assert (sandbox.calls[-1].values, sandbox.calls[-1].warnings) == (1, 0)
    assert house.restrictions[cm_suite_pp][date(2026, 12, 1)]["rates"] == {1: "120.00", 2: "130.00", 3: "160.00",
                                                                          4: "180.00"}


async def test_an_occupancy_that_does_not_fit_its_plan_is_refused_and_nothing_is_written(api: Harness) -> None:
    prop, key = await api.keyed_property(**PER_PERSON_HOUSE)
    double, suite_pp, suite = plans_of(prop)
    night = {"dateFrom": "2026-11-30", "dateTo": "2026-11-30", "currency": "EUR"}
    for entry, message in (
            ({"ratePlanId": suite_pp, "rate": 100}, f"rate plan {suite_pp} is sold per person: name the occupancy "
                                                    "priced, one of [1, 2, 3, 4]"),
            ({"ratePlanId": suite, "occupancy": 2, "rate": 100}, f"rate plan {suite} is sold per room: its one "
                                                                 "price takes no occupancy"),
            ({"ratePlanId": double, "occupancy": 3, "rate": 100}, f"rate plan {double} prices occupancies [1, 2], "
                                                                  "not 3")):
        answer = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
            {"ratePlanId": double, "occupancy": 1, "rate": 80, **night}, {**entry, **night}]})
        assert answer.status == 400 and answer.data["code"] == "VALIDATION", answer.body
        assert answer.data["details"] == [{"path": "updates[1].occupancy", "message": message}]
    record = await api.record_of(prop)
    assert await api.ctx.db.fetchval("SELECT count(*) FROM rate_cells WHERE property_id = $1", record) == 0
    assert await api.ctx.db.fetchval("SELECT count(*) FROM write_batches WHERE property_id = $1", record) == 0
    # A plan's rate policy holds for every occupancy's price.
    low = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        {"ratePlanId": suite_pp, "occupancy": 1, "rate": 50, **night}]})
    assert low.status == 422 and low.data["code"] == "NOTHING_ACCEPTED"


@pytest.mark.live_only  # the reconciler reads the channel manager's grid of live records only
async def test_the_reconciler_puts_back_an_occupancys_price_the_channel_lost(api: Harness) -> None:
    prop, key = await api.keyed_property(**PER_PERSON_HOUSE)
    double, _, _ = plans_of(prop)
    written = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        {"ratePlanId": double, "occupancy": n, "rate": 60 + 10 * n, **WEEK} for n in (1, 2)]})
    assert written.status == 202, written.body
    await settled(api, prop["id"])
    house, cm_plans = await held(api, prop)
    nights = house.restrictions[cm_plans["Double per person"]]
    nights[date(2026, 12, 2)]["rates"][1] = "55.00"  # someone edits one occupancy on the channel manager
    assert (await api.handles.reconciler.ask(CheckProperty(prop["id"]), 5)).marked == {
        "availability": 0, "rates": 1, "restrictions": 0}
    await settled(api, prop["id"])
    assert nights[date(2026, 12, 2)]["rates"] == {1: "70.00", 2: "80.00"}
    assert (await api.handles.reconciler.ask(CheckProperty(prop["id"]), 5)).marked == {
        "availability": 0, "rates": 0, "restrictions": 0}
    # The console's grid and the admin API show what the channel holds, per occupancy.
    grid = await api.admin("GET", f"/properties/{prop['id']}/channel-grid?from=2026-12-02&to=2026-12-02")
    assert [r for r in grid.data["rates"] if r["ratePlanId"] == double] == [{
        "ratePlanId": double, "date": "2026-12-02", "rateMinor": 8000,
        "byOccupancy": [{"occupancy": 1, "rateMinor": 7000}, {"occupancy": 2, "rateMinor": 8000}]}]
