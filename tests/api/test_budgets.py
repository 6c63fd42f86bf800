"""Rate budgets over HTTP: exact sliding windows on the mock clock, shared per property."""

from __future__ import annotations

from datetime import date, timedelta

import http_sf
import pytest

from connectapi.service import BUDGET_PRUNE_EVERY
from connectapi.budgets import record as stored_budgets

from .harness import API, Answer, Harness, after_janitor_rounds

SMALL = "requests=3,writes=2,property=5,property-writes=3,bookings=2,property-bookings=3,property-bookings-day=4,cells=100,ip=50,global=80"


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_BUDGETS": SMALL}


def limited(answer: Answer, scope: str) -> int:
    assert (answer.status, answer.code) == (429, "RATE_LIMITED"), answer.body
    assert answer.data["scope"] == scope
    retry = int(answer.headers["Retry-After"])
    assert answer.data["retryAfterSeconds"] == retry
    return retry


def policies(answer: Answer) -> tuple[list[tuple[str, dict[str, int]]], list[tuple[str, dict[str, int]]]]:
    policy = http_sf.parse(answer.headers["RateLimit-Policy"].encode(), tltype="list")
    state = http_sf.parse(answer.headers["RateLimit"].encode(), tltype="list")
    return policy, state  # type: ignore[return-value]


async def test_requests_window_edges_are_exact(api: Harness) -> None:
    _, key = await api.keyed_property()
    await api.call("GET", f"{API}/property", key=key)  # t=0
    api.advance(10)
    await api.call("GET", f"{API}/property", key=key)  # t=10
    api.advance(10)
    await api.call("GET", f"{API}/property", key=key)  # t=20
    api.advance(39.5)  # t=59.5: the first is still counted
    assert limited(await api.call("GET", f"{API}/property", key=key), "requests") == 1
    api.advance(0.499)  # t=59.999
    assert limited(await api.call("GET", f"{API}/property", key=key), "requests") == 1
    api.advance(0.001)  # t=60: the request of t=0 has left the window
    assert (await api.call("GET", f"{API}/property", key=key)).status == 200
    assert limited(await api.call("GET", f"{API}/property", key=key), "requests") == 10


async def test_ratelimit_headers_on_every_answer(api: Harness) -> None:
    _, key = await api.keyed_property()
    first = await api.call("GET", f"{API}/property", key=key)
    assert policies(first) == ([("requests", {"q": 3, "w": 60})], [("requests", {"r": 2, "t": 60})])
    api.advance(15)
    second = await api.call("GET", f"{API}/catalog", key=key)
    assert policies(second)[1] == [("requests", {"r": 1, "t": 45})]
    await api.call("GET", f"{API}/property", key=key)
    refused = await api.call("GET", f"{API}/property", key=key)
    assert policies(refused)[1] == [("requests", {"r": 0, "t": 45})]
    assert limited(refused, "requests") == 45  # Retry-After never earlier than t
    # PUT routes carry the writes policy too
    put = await api.call("PUT", f"{API}/probe/ari", key=(await api.keyed_property())[1], body={"updates": []})
    assert put.status == 202
    assert policies(put) == (
        [("requests", {"q": 3, "w": 60}), ("writes", {"q": 2, "w": 60})],
        [("requests", {"r": 2, "t": 60}), ("writes", {"r": 1, "t": 60})],
    )
    # answers without a key carry the address's policy
    anonymous = await api.call("GET", f"{API}/property")
    assert policies(anonymous)[0] == [("ip", {"q": 50, "w": 60})]
    missing = await api.call("GET", f"{API}/nowhere")
    assert missing.status == 404 and policies(missing)[0] == [("ip", {"q": 50, "w": 60})]


async def test_property_budget_is_shared_by_its_keys_and_refusals_are_not_charged(api: Harness) -> None:
    prop = await api.create_property()
    a = (await api.create_key(prop["id"]))["key"]
    b = (await api.create_key(prop["id"]))["key"]
    for key in (a, a, a):
        assert (await api.call("GET", f"{API}/property", key=key)).status == 200
    limited(await api.call("GET", f"{API}/property", key=a), "requests")
    assert (await api.call("GET", f"{API}/property", key=b)).status == 200
    assert (await api.call("GET", f"{API}/property", key=b)).status == 200
    limited(await api.call("GET", f"{API}/property", key=b), "property")
    # a's refused request charged nothing: b's refusal came at exactly five, not four
    other_prop, other_key = await api.keyed_property(name="Elsewhere")
    assert (await api.call("GET", f"{API}/property", key=other_key)).status == 200


async def test_writes_budgets(api: Harness) -> None:
    prop = await api.create_property()
    a = (await api.create_key(prop["id"]))["key"]
    b = (await api.create_key(prop["id"]))["key"]
    body: dict[str, list[object]] = {"updates": []}
    assert (await api.call("PUT", f"{API}/probe/ari", key=a, body=body)).status == 202
    assert (await api.call("PUT", f"{API}/probe/ari", key=a, body=body)).status == 202
    limited(await api.call("PUT", f"{API}/probe/ari", key=a, body=body), "writes")
    # reads on the same key are still allowed (requests has room)
    assert (await api.call("GET", f"{API}/probe/ari", key=a)).status == 200
    assert (await api.call("PUT", f"{API}/probe/ari", key=b, body=body)).status == 202
    limited(await api.call("PUT", f"{API}/probe/ari", key=b, body=body), "property-writes")
    api.advance(60)
    assert (await api.call("PUT", f"{API}/probe/ari", key=b, body=body)).status == 202


async def test_booking_budgets_and_the_rolling_day(api: Harness) -> None:
    scopes = ["bookings:write"]
    prop = await api.create_property()
    keys = [(await api.create_key(prop["id"], scopes))["key"] for _ in range(3)]
    assert (await api.call("POST", f"{API}/probe/bookings", key=keys[0])).status == 201
    assert (await api.call("POST", f"{API}/probe/bookings", key=keys[0])).status == 201
    limited(await api.call("POST", f"{API}/probe/bookings", key=keys[0]), "bookings")
    assert (await api.call("POST", f"{API}/probe/bookings", key=keys[1])).status == 201
    limited(await api.call("POST", f"{API}/probe/bookings", key=keys[1]), "property-bookings")
    api.advance(60)
    assert (await api.call("POST", f"{API}/probe/bookings", key=keys[2])).status == 201  # the 4th of the day
    retry = limited(await api.call("POST", f"{API}/probe/bookings", key=keys[2]), "property-bookings-day")
    assert retry == 24 * 3600 - 60
    api.advance(24 * 3600 - 60 - 0.001)
    limited(await api.call("POST", f"{API}/probe/bookings", key=keys[2]), "property-bookings-day")
    api.advance(0.001)
    assert (await api.call("POST", f"{API}/probe/bookings", key=keys[2])).status == 201


async def test_owner_raises_the_daily_bookings_budget(api: Harness) -> None:
    prop = await api.create_property(bookingsPerDay=6)
    keys = [(await api.create_key(prop["id"], ["bookings:write"]))["key"] for _ in range(3)]
    made = 0
    for minute in range(3):
        for key in keys:
            answer = await api.call("POST", f"{API}/probe/bookings", key=key)
            if answer.status == 201:
                made += 1
            elif answer.data["scope"] == "property-bookings-day":
                break
        api.advance(60)
    assert made == 6
    limited(await api.call("POST", f"{API}/probe/bookings", key=keys[0]), "property-bookings-day")


async def test_cells_budget_is_charged_by_amount(api: Harness) -> None:
    """Counted by the write's own statement, in cells: two writes of 60 and 40 spend the
    property's 100 of the minute (each key may write twice a minute: two keys)."""
    prop, first = await api.keyed_property()
    second = str((await api.create_key(prop["id"]))["key"])
    room = prop["roomTypes"][0]["id"]

    async def write(key: str, cells: int) -> Answer:
        last = date(2026, 12, 10) + timedelta(days=cells - 1)
        body = {"updates": [{"roomTypeId": room, "dateFrom": "2026-12-10", "dateTo": last.isoformat(),
                             "available": cells % 3}]}
        return await api.call("PUT", f"{API}/availability", key=key, body=body)

    assert (await write(first, 60)).status == 202
    assert (await write(first, 40)).status == 202
    api.advance(30)
    refused = await write(second, 1)
    assert (refused.status, refused.data["scope"], refused.headers["Retry-After"]) == (429, "cells", "30")
    api.advance(30)
    assert (await write(second, 100)).status == 202


@pytest.mark.live_only  # requests with no key count on the live address budget
async def test_ip_budget_counts_before_the_key_is_read(api: Harness) -> None:
    _, key = await api.keyed_property()
    for _ in range(50):
        await api.call("GET", f"{API}/nowhere", address="192.0.2.10")
    answer = await api.call("GET", f"{API}/property", key=key, address="192.0.2.10")
    limited(answer, "ip")
    assert (await api.call("GET", f"{API}/property", key=key, address="192.0.2.11")).status == 200


async def test_ip_auth_blocks_before_any_lookup_even_with_a_valid_key(api: Harness) -> None:
    _, key = await api.keyed_property()
    for _ in range(20):
        # A wrong key of the harness's mode: each mode's ip-auth is its own.
        assert (await api.call("GET", f"{API}/property", key=f"cak_{api.key_mode}_" + "x" * 43)).status == 401
    api.advance(59.999)
    blocked = await api.call("GET", f"{API}/property", key=key)
    assert limited(blocked, "ip-auth") == 1
    # another address is unaffected
    assert (await api.call("GET", f"{API}/property", key=key, address="198.51.100.8")).status == 200
    api.advance(0.001)
    assert (await api.call("GET", f"{API}/property", key=key)).status == 200


async def test_ip_auth_refusals_are_not_themselves_401s(api: Harness) -> None:
    _, key = await api.keyed_property()
    for _ in range(20):
        await api.call("GET", f"{API}/property")
    api.advance(30)
    for _ in range(5):
        limited(await api.call("GET", f"{API}/property"), "ip-auth")
    api.advance(30)  # the 20 failures of t=0 leave; the 429s added none
    assert (await api.call("GET", f"{API}/property", key=key)).status == 200


@pytest.mark.live_only  # names the live subjects
async def test_idle_budget_subjects_are_forgotten_but_not_while_a_day_window_counts(api: Harness) -> None:
    prop, key = await api.keyed_property(["bookings:write"])
    assert (await api.call("GET", f"{API}/property", key=key)).status == 200
    counted = await subjects(api)
    assert {"global", f"property:{prop['id']}"} <= counted and any(s.startswith("requests:") for s in counted)
    api.advance(59)
    assert await stored_budgets.prune(api.ctx.db, api.ctx.clock.shared_time()) == 0  # still counting
    api.advance(1)  # the minute windows are empty now

    async def forgotten() -> bool:
        return not await subjects(api)

    await after_janitor_rounds(api, forgotten, "idle subjects forgotten", every=BUDGET_PRUNE_EVERY)

    for _ in range(3):
        assert (await api.call("POST", f"{API}/probe/bookings", key=key)).status in (201, 429)
    day = f"property-bookings-day:{prop['id']}"

    async def only_the_day_is_left() -> bool:
        return await subjects(api) == {day}

    # An hour on, a day window still counts bookings: forgetting it would let the day's bookings again.
    api.advance(3600)
    await after_janitor_rounds(api, only_the_day_is_left, "only the day window left", every=BUDGET_PRUNE_EVERY)
    api.advance(24 * 3600)
    await after_janitor_rounds(api, forgotten, "the day window forgotten", every=BUDGET_PRUNE_EVERY)


async def subjects(api: Harness) -> set[str]:
    rows = await api.ctx.db.fetch("SELECT subject FROM budget_windows")
    return {row["subject"] for row in rows}


@pytest.mark.live_only  # requests with no key count on the live address budget
async def test_an_address_refused_by_ip_is_answered_without_the_record_until_its_wait_is_over(api: Harness) -> None:
    _, key = await api.keyed_property()
    for _ in range(50):  # ip=50: the address's whole budget, at t=0
        await api.call("GET", f"{API}/nowhere", address="192.0.2.30")
    api.advance(20)
    counter = api.ctx.budgets.keeper._counter
    assert limited(await api.call("GET", f"{API}/property", key=key, address="192.0.2.30"), "ip") == 40
    sent = counter.statements  # type: ignore[attr-defined]
    api.advance(10)
    answer = await api.call("GET", f"{API}/property", key=key, address="192.0.2.30")
    assert limited(answer, "ip") == 30  # the hold counts down as the record's window would
    assert policies(answer)[1][0][1]["r"] == 0
    assert counter.statements == sent  # type: ignore[attr-defined]  # answered here
    api.advance(30)  # the 50 events of t=0 leave: the record decides again, and admits
    assert (await api.call("GET", f"{API}/property", key=key, address="192.0.2.30")).status == 200
    assert counter.statements > sent  # type: ignore[attr-defined]
