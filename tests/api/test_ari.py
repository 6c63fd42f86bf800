"""ARI writes and reads over HTTP against the real record."""

from __future__ import annotations

from typing import Any

import pytest

from .harness import API, Answer, Harness

TODAY = "2026-11-22"


async def setup(api: Harness, **overrides: Any) -> tuple[dict[str, Any], str, int, int]:
    prop, key = await api.keyed_property(**overrides)
    return prop, key, prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]


async def put(api: Harness, key: str, resource: str, *entries: dict[str, Any], **headers: str) -> Answer:
    return await api.call("PUT", f"{API}/{resource}", key=key, body={"updates": list(entries)}, headers=headers)


def rate(plan: int, first: str, last: str, value: Any = "120.00", **more: Any) -> dict[str, Any]:
    return {"ratePlanId": plan, "dateFrom": first, "dateTo": last, "rate": value, "currency": "EUR", **more}


async def record(api: Harness, key: str, resource: str, first: str = TODAY, last: str = "2026-12-31") -> Any:
    answer = await api.call("GET", f"{API}/{resource}?from={first}&to={last}", key=key)
    assert answer.status == 200, answer.body
    return answer.data


async def test_write_result_and_batch(api: Harness) -> None:
    _, key, room, _ = await setup(api)
    answer = await put(api, key, "availability", {"roomTypeId": room, "dateFrom": "2026-11-23",
                                                   "dateTo": "2026-11-25", "available": 5})
    assert answer.status == 202
    data = answer.data
    assert {k: data[k] for k in ("resource", "requestedCells", "acceptedCells", "noopCells", "rejected", "pushedBy")} == {
        "resource": "availability", "requestedCells": 3, "acceptedCells": 3, "noopCells": 0, "rejected": [],
        "pushedBy": "inventory-drain"}
    assert data["poll"] == f"{API}/batches/{data['batchId']}"
    batch = await api.call("GET", data["poll"], key=key)
    assert batch.data == {
        "batchId": data["batchId"], "resource": "availability", "createdAt": "2026-11-22T10:00:00+00:00",
        "requestedCells": 3, "acceptedCells": 3, "noopCells": 0, "rejected": [], "status": "pending",
        "pendingCells": 3, "lastError": None, "channelTasks": []}


async def test_availability_round_trip_and_noops(api: Harness) -> None:
    _, key, room, _ = await setup(api)
    first = await put(api, key, "availability",
                      {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2026-11-24", "available": 8},
                      {"roomTypeId": room, "dateFrom": "2026-11-25", "dateTo": "2026-11-25", "available": 0})
    # 8 is what a new property starts with: those two cells are no-ops
    assert (first.data["acceptedCells"], first.data["noopCells"]) == (1, 2)
    data = await record(api, key, "availability", "2026-11-23", "2026-11-26")
    assert data["roomTypes"][0] == {"roomTypeId": room, "nights": [
        {"date": "2026-11-23", "available": 8}, {"date": "2026-11-24", "available": 8},
        {"date": "2026-11-25", "available": 0}, {"date": "2026-11-26", "available": 8}]}
    again = await put(api, key, "availability",
                      {"roomTypeId": room, "dateFrom": "2026-11-25", "dateTo": "2026-11-25", "available": 0})
    assert (again.data["acceptedCells"], again.data["noopCells"]) == (0, 1)
    batch = await api.call("GET", again.data["poll"], key=key)
    assert (batch.data["status"], batch.data["pendingCells"]) == ("completed", 0)


async def test_rates_mask_last_write_wins_and_minor_units(api: Harness) -> None:
    _, key, _, plan = await setup(api)
    answer = await put(api, key, "rates",
                       rate(plan, "2026-11-23", "2026-11-29", "100"),
                       rate(plan, "2026-11-23", "2026-11-29", 150, days=["fr", "sa"]),
                       rate(plan, "2026-11-28", "2026-11-28", "175.00"))
    assert (answer.data["requestedCells"], answer.data["acceptedCells"]) == (10, 7)
    data = await record(api, key, "rates", "2026-11-22", "2026-11-30")
    assert data["currency"] == "EUR"
    assert data["ratePlans"][0]["nights"] == [
        {"date": f"2026-11-{d}", "rateMinor": minor} for d, minor in
        ((23, 10000), (24, 10000), (25, 10000), (26, 10000), (27, 15000), (28, 17500), (29, 10000))]
    assert data["ratePlans"][1]["nights"] == []  # nights without a rate are absent


async def test_zero_decimal_currency_reads_whole_units(api: Harness) -> None:
    prop, key = await api.keyed_property(currency="JPY", ratePlans=[{"roomType": 0, "name": "P", "mealPlan": "RO"}])
    plan = prop["ratePlans"][0]["id"]
    answer = await put(api, key, "rates", {**rate(plan, "2026-11-23", "2026-11-23", 12000), "currency": "JPY"})
    assert answer.status == 202
    data = await record(api, key, "rates", "2026-11-23", "2026-11-23")
    assert data["currency"] == "JPY"
    assert data["ratePlans"][0]["nights"] == [{"date": "2026-11-23", "rateMinor": 12000}]


async def test_restrictions_partial_fields_and_nulls(api: Harness) -> None:
    _, key, _, plan = await setup(api)
    base = {"ratePlanId": plan, "dateFrom": "2026-11-23", "dateTo": "2026-11-24"}
    assert (await put(api, key, "restrictions", {**base, "stopSell": True, "minStayArrival": 2})).status == 202
    assert (await put(api, key, "restrictions", {**base, "dateTo": "2026-11-23", "minStayArrival": None,
                                                  "maxStay": 7})).status == 202
    data = await record(api, key, "restrictions", "2026-11-23", "2026-11-25")
    nights = data["ratePlans"][0]["nights"]
    empty = {"stopSell": None, "closedToArrival": None, "closedToDeparture": None,
             "minStayArrival": None, "minStayThrough": None, "maxStay": None}
    assert nights == [
        {"date": "2026-11-23", **empty, "stopSell": True, "maxStay": 7},
        {"date": "2026-11-24", **empty, "stopSell": True, "minStayArrival": 2},
        {"date": "2026-11-25", **empty},
    ]
    assert len(data["ratePlans"]) == 2 and len(data["ratePlans"][1]["nights"]) == 3
    noop = await put(api, key, "restrictions", {**base, "stopSell": True})
    assert (noop.data["acceptedCells"], noop.data["noopCells"]) == (0, 2)


async def test_rate_policy_partial_and_total_refusal(api: Harness) -> None:
    _, key, _, plan = await setup(api)  # Flexible: minRate 40, maxRate 900
    partial = await put(api, key, "rates", rate(plan, "2026-11-23", "2026-11-24", 30),
                        rate(plan, "2026-11-25", "2026-11-25", 100),
                        rate(plan, "2026-11-26", "2026-11-28", 901))
    assert partial.status == 202
    assert partial.data["acceptedCells"] == 1 and partial.data["requestedCells"] == 6
    assert [r["cells"] for r in partial.data["rejected"]] == [2, 3]
    assert "minimum of 40" in partial.data["rejected"][0]["error"]
    assert "maximum of 900" in partial.data["rejected"][1]["error"]
    batch = await api.call("GET", partial.data["poll"], key=key)
    assert batch.data["rejected"] == partial.data["rejected"]
    total = await put(api, key, "rates", rate(plan, "2026-11-23", "2026-11-24", 20))
    assert (total.status, total.code) == (422, "NOTHING_ACCEPTED")
    assert total.data["details"]["rejected"][0]["cells"] == 2
    nights = (await record(api, key, "rates", "2026-11-23", "2026-11-28"))["ratePlans"][0]["nights"]
    assert nights == [{"date": "2026-11-25", "rateMinor": 10000}]


@pytest.mark.parametrize(("resource", "entry", "code"), [
    ("availability", {"dateFrom": "2026-11-24", "dateTo": "2026-11-23"}, "RANGE_INVALID"),
    ("availability", {"dateFrom": "2026-11-21", "dateTo": "2026-11-23"}, "RANGE_INVALID"),
    ("availability", {"dateFrom": "2027-11-23", "dateTo": "2027-11-23"}, "HORIZON"),
    ("availability", {"available": "3"}, "VALIDATION"),
    ("availability", {"roomTypeId": 999999}, "UNKNOWN_ROOM_TYPE"),
    ("rates", {"days": ["su"], "dateFrom": "2026-11-23", "dateTo": "2026-11-28"}, "RANGE_INVALID"),
    ("rates", {"rate": "120.50"}, "VALIDATION"),
    ("rates", {"currency": "USD"}, "CURRENCY_MISMATCH"),
    ("rates", {"ratePlanId": 999999}, "UNKNOWN_RATE_PLAN"),
    ("restrictions", {"maxStay": 366}, "VALIDATION"),
    ("restrictions", {"ratePlanId": 999999}, "UNKNOWN_RATE_PLAN"),
])
async def test_refusals_write_nothing(api: Harness, resource: str, entry: dict[str, Any], code: str) -> None:
    _, key, room, plan = await setup(api)
    good = {
        "availability": {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2026-11-24", "available": 3},
        "rates": rate(plan, "2026-11-23", "2026-11-24"),
        "restrictions": {"ratePlanId": plan, "dateFrom": "2026-11-23", "dateTo": "2026-11-24", "stopSell": True},
    }[resource]
    before = {r: await record(api, key, r) for r in ("availability", "rates", "restrictions")}
    answer = await put(api, key, resource, good, {**good, **entry})
    assert (answer.status, answer.code) == (400, code), answer.body
    after = {r: await record(api, key, r) for r in ("availability", "rates", "restrictions")}
    assert after == before
    assert await api.ctx.db.fetchval("SELECT count(*) FROM write_batches") == 0


async def test_refusal_details(api: Harness) -> None:
    _, key, room, plan = await setup(api)
    past = await put(api, key, "rates", rate(plan, "2026-11-20", "2026-11-23"))
    assert past.data["details"]["today"] == TODAY
    unknown = await put(api, key, "rates", rate(999998, "2026-11-23", "2026-11-23"), rate(999997, "2026-11-23", "2026-11-23"))
    assert unknown.data["details"] == {"ratePlanIds": [999997, 999998]}
    rooms = await put(api, key, "availability", {"roomTypeId": 424242, "dateFrom": "2026-11-23",
                                                 "dateTo": "2026-11-23", "available": 1})
    assert rooms.data["details"] == {"roomTypeIds": [424242]}
    currency = await put(api, key, "rates", {**rate(plan, "2026-11-23", "2026-11-23"), "currency": "GBP"})
    assert currency.data["details"] == {"expected": "EUR", "got": "GBP"}
    many = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [rate(plan, "2026-11-23", "2026-11-23")] * 1001})
    assert (many.status, many.code) == (400, "TOO_MANY_UPDATES")
    cells = await put(api, key, "availability", *[{"roomTypeId": room, "dateFrom": "2026-11-23",
                                                   "dateTo": "2027-11-22", "available": 1}] * 14)
    assert (cells.status, cells.code) == (400, "TOO_MANY_CELLS")


async def test_ids_of_another_property_are_unknown(api: Harness) -> None:
    _, key, _, _ = await setup(api)
    other, _ = await api.keyed_property(name="Other")
    answer = await put(api, key, "rates", rate(other["ratePlans"][0]["id"], "2026-11-23", "2026-11-23"))
    assert (answer.status, answer.code) == (400, "UNKNOWN_RATE_PLAN")


@pytest.mark.parametrize("query", ["from=2026-11-30&to=2026-11-29", "from=2026-11-22&to=2028-04-06",
                                   "from=2026-1-1", "to=tomorrow"])
async def test_read_range_refusals(api: Harness, query: str) -> None:
    _, key, _, _ = await setup(api)
    answer = await api.call("GET", f"{API}/availability?{query}", key=key)
    expected = "VALIDATION" if ("1-1" in query or "tomorrow" in query) else "RANGE_INVALID"
    assert (answer.status, answer.code) == (400, expected)


async def test_read_defaults_and_500_days(api: Harness) -> None:
    _, key, _, _ = await setup(api)
    default = await api.call("GET", f"{API}/availability", key=key)
    assert (default.data["from"], default.data["to"]) == ("2026-11-22", "2026-12-22")
    assert len(default.data["roomTypes"][0]["nights"]) == 31
    longest = await api.call("GET", f"{API}/restrictions?from=2026-11-22&to=2028-04-05", key=key)
    assert longest.status == 200 and len(longest.data["ratePlans"][0]["nights"]) == 501


async def test_batches_are_per_property(api: Harness) -> None:
    _, key, room, _ = await setup(api)
    _, other_key = await api.keyed_property(name="Other")
    made = await put(api, key, "availability", {"roomTypeId": room, "dateFrom": "2026-11-23",
                                                "dateTo": "2026-11-23", "available": 1})
    for who, path in ((other_key, made.data["poll"]), (key, f"{API}/batches/00000000-0000-0000-0000-000000000000"),
                      (key, f"{API}/batches/not-a-uuid")):
        answer = await api.call("GET", path, key=who)
        assert (answer.status, answer.code) == (404, "BATCH_NOT_FOUND")


async def test_a_later_batch_takes_over_a_cell(api: Harness) -> None:
    _, key, room, _ = await setup(api)
    entry = {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2026-11-24", "available": 1}
    first = await put(api, key, "availability", entry)
    second = await put(api, key, "availability", {**entry, "dateTo": "2026-11-23", "available": 2})
    one = await api.call("GET", first.data["poll"], key=key)
    two = await api.call("GET", second.data["poll"], key=key)
    # the overwritten cell counts as done for the first batch; it is the second's now
    assert (one.data["pendingCells"], two.data["pendingCells"]) == (1, 1)


async def test_scopes_and_product(api: Harness) -> None:
    prop, reader = await api.keyed_property(["ari:read"])
    room = prop["roomTypes"][0]["id"]
    answer = await put(api, reader, "availability", {"roomTypeId": room, "dateFrom": "2026-11-23",
                                                     "dateTo": "2026-11-23", "available": 1})
    assert (answer.status, answer.code) == (403, "SCOPE_MISSING")
    await api.admin("PATCH", f"/properties/{prop['id']}", {"products": {"channelManager": False, "pms": True}})
    for path in ("/availability", "/rates", "/restrictions", "/batches/x"):
        assert (await api.call("GET", f"{API}{path}", key=reader)).code == "CHANNEL_MANAGER_DISABLED"


@pytest.mark.live_only  # arms the live sandbox's faults
async def test_batch_reports_the_channel_managers_last_error(api: Harness) -> None:
    from connectapi.storage import pushes

    prop, key, room, _ = await setup(api)
    made = await put(api, key, "availability", {"roomTypeId": room, "dateFrom": "2026-11-23",
                                                "dateTo": "2026-11-23", "available": 1})
    await pushes.record_outcome(api.ctx.db, prop["id"], api.ctx.clock.now(), "failed", "HTTP 500 from the channel manager")
    assert (await api.call("GET", made.data["poll"], key=key)).data["lastError"] == "HTTP 500 from the channel manager"
    await pushes.record_outcome(api.ctx.db, prop["id"], api.ctx.clock.now(), "ok", None)
    assert (await api.call("GET", made.data["poll"], key=key)).data["lastError"] is None


async def test_an_empty_write_is_accepted_with_nothing_in_it_on_every_resource(api: Harness) -> None:
    """`updates: []` names no cell: 202 with zero counts everywhere (it once answered 422
    NOTHING_ACCEPTED on rates, as if a rate policy had refused something)."""
    _, key, _, _ = await setup(api)
    for resource in ("availability", "rates", "restrictions"):
        answer = await api.call("PUT", f"{API}/{resource}", key=key, body={"updates": []})
        assert answer.status == 202, (resource, answer.body)
        assert (answer.data["requestedCells"], answer.data["acceptedCells"], answer.data["rejected"]) == (0, 0, [])
