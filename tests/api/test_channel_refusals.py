"""Channex as documented: a value refused in a 200 is not pushed; past nights are never
sent; a change sent as the contract splits it is one call (mock clock, real HTTP, the
in-process sandbox)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
import trio

from connectapi.channel.sandbox.state import Refusal
from connectapi.storage import pushes

from .harness import API, Harness, eventually

DISABLED = Refusal("rate_plan_id", "rate plan is closed on the channel")


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_PUSH_PAUSED": "0"}


def cm_ids(api: Harness, prop: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The sandbox's property id and its rate plans' ids by title."""
    assert api.ctx.channel.sandbox is not None
    held = next(p for p in api.ctx.channel.sandbox.properties.values() if p.title == prop["name"])
    return held.id, {p.title: cm for cm, p in held.rate_plans.items()}


def held_rates(api: Harness, cm_property: str, cm_plan: str, first: date, last: date) -> dict[str, Any]:
    assert api.ctx.channel.sandbox is not None
    held = api.ctx.channel.sandbox.read_restrictions(cm_property, first, last).get(cm_plan, {})
    return {night: fields.get("rate") for night, fields in held.items()}


async def quiet(api: Harness, property_id: int, resource: str, count: int) -> None:
    """Until the property's dirty cells of `resource` are `count` (the pushers are done)."""
    async def check() -> bool:
        return (await pushes.dirty_counts(api.ctx.db, property_id))[resource] == count
    await eventually(check, f"{count} dirty {resource} cells")


async def test_a_refused_value_stays_queued_is_reported_and_arrives_once_accepted(api: Harness) -> None:
    prop, key = await api.keyed_property()
    flexible, other = prop["ratePlans"][0], prop["ratePlans"][1]
    cm_property, plans = cm_ids(api, prop)
    assert api.ctx.channel.sandbox is not None
    api.ctx.channel.sandbox.refuse(cm_property, plans[flexible["name"]], DISABLED)
    first, last = date(2026, 12, 1), date(2026, 12, 3)
    made = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        {"ratePlanId": flexible["id"], "dateFrom": str(first), "dateTo": str(last), "rate": 130, "currency": "EUR"},
        {"ratePlanId": other["id"], "dateFrom": str(first), "dateTo": str(last), "rate": 90, "currency": "EUR"}]})
    assert made.status == 202
    await quiet(api, prop["id"], "rates", 3)  # the other plan's three nights went; these stay

    # The values of the same call that were applied are on the channel; the refused are not.
    assert held_rates(api, cm_property, plans[other["name"]], first, last) == {
        str(first + timedelta(days=i)): "90.00" for i in range(3)}
    assert held_rates(api, cm_property, plans[flexible["name"]], first, last) == {}

    sync = (await api.call("GET", f"{API}/sync", key=key)).data
    assert sync["inventory"]["state"] == "REFUSED"
    assert (sync["rates"], sync["refusedCells"]) == ({"dirtyCells": 3, "refusedCells": 3}, 3)
    assert sync["projector"]["lastOutcome"] == "refused"
    assert "refused 3 cell(s): rate_plan_id: rate plan is closed on the channel" in sync["projector"]["lastError"]

    batch = (await api.call("GET", made.data["poll"], key=key)).data
    assert (batch["status"], batch["pendingCells"]) == ("pending", 3)
    assert batch["rejected"] == [{
        "cells": 3, "error": "refused by the channel manager: rate_plan_id: rate plan is closed on the channel",
        "by": "channelManager", "ratePlanId": flexible["id"], "field": "rate_plan_id",
        "messages": ["rate plan is closed on the channel"], "from": str(first), "to": str(last)}]
    assert "rate plan is closed" in batch["lastError"]
    tasks = batch["channelTasks"]
    assert len(tasks) == 1 and tasks[0]["kind"] == "restrictions"
    calls = [c for c in api.ctx.channel.sandbox.calls if c.kind == "restrictions" and cm_property in c.property_ids]
    assert tasks[0]["taskId"] == calls[-1].task_id

    # Told once per property and day, however often the channel refuses.
    async def mails() -> int:
        found: int = await api.ctx.db.fetchval(
            "SELECT count(*) FROM notifications WHERE property_id = $1 AND kind = 'channel.refused'", prop["id"])
        return found
    assert await mails() == 1
    api.advance(61)  # the first retry: refused again
    await eventually(lambda: len([c for c in api.ctx.channel.sandbox.calls if cm_property in c.property_ids  # type: ignore
                                  and c.kind == "restrictions"]) == len(calls) + 1, "the retry")
    await quiet(api, prop["id"], "rates", 3)
    assert await mails() == 1

    # The channel takes the plan again: the value arrives without a new write.
    api.ctx.channel.sandbox.refuse(cm_property, plans[flexible["name"]], None)
    api.advance(121)  # the second retry, two minutes after the second refusal
    await quiet(api, prop["id"], "rates", 0)
    assert held_rates(api, cm_property, plans[flexible["name"]], first, last) == {
        str(first + timedelta(days=i)): "130.00" for i in range(3)}
    sync = (await api.call("GET", f"{API}/sync", key=key)).data
    assert (sync["inventory"]["state"], sync["refusedCells"], sync["projector"]["lastError"]) == ("IN_SYNC", 0, None)
    batch = (await api.call("GET", made.data["poll"], key=key)).data
    # Three calls carried its cells; the retry refused whole applied nothing and had no task.
    assert (batch["status"], batch["rejected"], len(batch["channelTasks"])) == ("completed", [], 2)


async def test_a_new_write_of_a_refused_night_goes_at_once(api: Harness) -> None:
    prop, key = await api.keyed_property()
    flexible = prop["ratePlans"][0]
    cm_property, plans = cm_ids(api, prop)
    assert api.ctx.channel.sandbox is not None
    api.ctx.channel.sandbox.refuse(cm_property, plans[flexible["name"]], DISABLED)
    night = date(2026, 12, 5)
    body = {"updates": [{"ratePlanId": flexible["id"], "dateFrom": str(night), "dateTo": str(night), "rate": 100,
                         "currency": "EUR"}]}
    assert (await api.call("PUT", f"{API}/rates", key=key, body=body)).status == 202
    await eventually(lambda: api.ctx.channel.sandbox.stats.refused == 1, "the refusal")  # type: ignore[union-attr]
    api.ctx.channel.sandbox.refuse(cm_property, plans[flexible["name"]], None)
    body["updates"][0]["rate"] = 110
    assert (await api.call("PUT", f"{API}/rates", key=key, body=body)).status == 202
    await quiet(api, prop["id"], "rates", 0)  # no clock moved: the newer version is no refused one
    assert held_rates(api, cm_property, plans[flexible["name"]], night, night) == {str(night): "110.00"}


async def test_nights_that_became_past_are_dropped_not_sent(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room = prop["roomTypes"][0]
    api.handles.pushes.paused = True  # writes wait in the record while the day turns
    assert api.ctx.channel.sandbox is not None
    before = api.ctx.channel.sandbox.stats.availability_calls
    today = date(2026, 11, 22)  # Lisbon, at the harness's start
    assert (await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
        {"roomTypeId": room["id"], "dateFrom": str(today), "dateTo": str(today + timedelta(days=2)),
         "available": 4}]})).status == 202
    api.advance(2 * 86_400)  # two days on: two of the three nights are past
    api.handles.pushes.paused = False
    await api.handles.pushes.wake(prop["id"], True, False)
    await quiet(api, prop["id"], "availability", 0)
    assert api.ctx.channel.sandbox.stats.availability_calls == before + 1
    sent = [c for c in api.ctx.channel.sandbox.calls if c.kind == "availability"][-1]
    assert (sent.values, sent.warnings) == (1, 0)  # the one night still ahead, nothing refused as past
    dropped = await api.ctx.db.fetchval("SELECT cm_past_dropped FROM properties WHERE id = $1", prop["id"])
    assert dropped == 2


@pytest.mark.parametrize("env", [{"CONNECTAPI_PUSH_PAUSED": "0", "CONNECTAPI_CM_GATHER_MS": "1000"}])
async def test_rates_then_restrictions_sent_at_once_are_one_call(api: Harness) -> None:
    prop, key = await api.keyed_property()
    plan = prop["ratePlans"][0]["id"]
    assert api.ctx.channel.sandbox is not None
    before = api.ctx.channel.sandbox.stats.restriction_calls
    first, last = "2026-12-01", "2026-12-03"
    assert (await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        {"ratePlanId": plan, "dateFrom": first, "dateTo": last, "rate": 120, "currency": "EUR"}]})).status == 202
    await trio.testing.wait_all_tasks_blocked()
    api.advance(0.2)  # the integrator's next request, a moment later
    assert (await api.call("PUT", f"{API}/restrictions", key=key, body={"updates": [
        {"ratePlanId": plan, "dateFrom": first, "dateTo": last, "minStayArrival": 2}]})).status == 202
    await trio.testing.wait_all_tasks_blocked()
    assert api.ctx.channel.sandbox.stats.restriction_calls == before  # still gathering
    api.advance(1.0)
    await quiet(api, prop["id"], "restrictions", 0)
    await quiet(api, prop["id"], "rates", 0)
    assert api.ctx.channel.sandbox.stats.restriction_calls == before + 1


async def test_tonight_in_a_zone_behind_utc_is_not_sent_as_past(api: Harness) -> None:
    """Los Angeles at 19:00 is the next day in UTC: the channel manager's property is made in
    the property's zone, so tonight is still tonight there."""
    prop, key = await api.keyed_property(timezone="America/Los_Angeles")
    room = prop["roomTypes"][0]["id"]
    cm_property, _ = cm_ids(api, prop)
    assert api.ctx.channel.sandbox is not None
    assert api.ctx.channel.sandbox.properties[cm_property].timezone == "America/Los_Angeles"
    api.advance(17 * 3600)  # 2026-11-23 03:00 UTC, 2026-11-22 19:00 in Los Angeles
    tonight = "2026-11-22"
    assert (await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
        {"roomTypeId": room, "dateFrom": tonight, "dateTo": tonight, "available": 0}]})).status == 202
    await quiet(api, prop["id"], "availability", 0)
    assert api.ctx.channel.sandbox.stats.refused == 0
    held = api.ctx.channel.sandbox.read_availability(cm_property, date(2026, 11, 22), date(2026, 11, 22))
    cm_room = next(cm for cm, r in api.ctx.channel.sandbox.properties[cm_property].room_types.items()
                   if r.title == prop["roomTypes"][0]["name"])
    assert held[cm_room] == {tonight: 0}


async def test_a_refused_multi_occupancy_value_keeps_every_occupancy_queued_until_taken(api: Harness) -> None:
    prop, key = await api.keyed_property(name="Casa Pessoa", ratePlans=[
        {"roomType": 0, "name": "Double per person", "mealPlan": "BB", "sellMode": "perPerson"}])
    plan = prop["ratePlans"][0]
    cm_property, plans = cm_ids(api, prop)
    assert api.ctx.channel.sandbox is not None
    api.ctx.channel.sandbox.refuse(cm_property, plans[plan["name"]], DISABLED)
    first, last = date(2026, 12, 1), date(2026, 12, 3)
    made = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        {"ratePlanId": plan["id"], "occupancy": n, "dateFrom": str(first), "dateTo": str(last), "rate": 60 + 20 * n,
         "currency": "EUR"} for n in (1, 2)]})
    assert made.status == 202, made.body
    await eventually(lambda: api.ctx.channel.sandbox is not None and any(  # the refused call
        c.kind == "restrictions" and cm_property in c.property_ids and c.warnings for c in api.ctx.channel.sandbox.calls),
        "the refused call")
    sync: dict[str, Any] = {}

    async def refused_all() -> bool:  # both occupancies of the three nights stay, refused
        sync.update((await api.call("GET", f"{API}/sync", key=key)).data)
        return bool(sync["refusedCells"] == 6)
    await eventually(refused_all, lambda: f"six refused cells ({sync})")
    assert (sync["inventory"]["state"], sync["rates"]) == ("REFUSED", {"dirtyCells": 6, "refusedCells": 6})
    assert api.ctx.channel.sandbox.read_restrictions(cm_property, first, last).get(plans[plan["name"]], {}) == {}

    api.ctx.channel.sandbox.refuse(cm_property, plans[plan["name"]], None)
    api.advance(61)  # the retry
    await quiet(api, prop["id"], "rates", 0)
    held = api.ctx.channel.sandbox.read_restrictions(cm_property, first, last)[plans[plan["name"]]]
    assert {night: fields.get("rates") for night, fields in held.items()} == {
        str(first + timedelta(days=i)): [{"occupancy": 1, "rate": "80.00"}, {"occupancy": 2, "rate": "100.00"}]
        for i in range(3)}
    batch = (await api.call("GET", made.data["poll"], key=key)).data
    assert (batch["status"], batch["pendingCells"]) == ("completed", 0)
