"""Hostile bodies, queries and paths through the real app (issue 15): every answer is a 4xx in
the envelope, with VALIDATION or the contract's more specific code, and nothing is written.

Each hostile body is a good body of its route with one thing made hostile, sent with an
idempotency key; the good body itself is sent last and must succeed, so the refusals are
the hostile part's doing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from connectapi.domain.json_body import MAX_DEPTH, UTF8_BOM

from .harness import ADMIN, ADMIN_TOKEN, API, CASA_AZUL, Answer, Harness

EVERY_SCOPE = ["ari:read", "ari:write", "bookings:read", "bookings:write"]
NUM, STR = '"@num@"', "@str@"  # in a route's good body: where a number goes, and a string's text
NOTHING_WRITTEN = ("write_batches", "idempotency_keys", "bookings", "guests", "folio_lines", "inventory_events")


@pytest.fixture
def env() -> dict[str, str]:
    # Every hostile body is one request: roomy budgets, so only the body decides.
    return {"CONNECTAPI_BUDGETS": "bookings=1000,property-bookings=1000,requests=10000,property=10000,"
                                  "writes=1000,property-writes=1000"}


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    template: str  # the good body as JSON text, with NUM and STR in it
    good_number: str
    good_string: str
    ok_status: int

    def body(self, number: str | None = None, string: str | None = None) -> str:
        text = self.template
        if number is not None and NUM not in text:
            text = text.replace(json.dumps(STR), NUM)  # no number field: the number takes the string's place
        return text.replace(NUM, number or self.good_number).replace(STR, self.good_string if string is None
                                                                       else string)


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def repeat_first_member(text: str) -> str:
    """`{"k": v, ...}` -> `{"k": v, "k": v, ...}`: the same value twice, so only the repetition is wrong."""
    key, value = next(iter(json.loads(text).items()))
    return "{" + json.dumps(key) + ": " + json.dumps(value) + ", " + text[1:]


HOSTILE: dict[str, Callable[[Route], bytes]] = {
    "unclosed nesting 100000 deep": lambda r: b'{"updates": ' + b"[" * 100_000,
    "closed nesting 100000 deep": lambda r: r.body(number=deep(100_000)).encode(),
    "nesting one past the bound": lambda r: r.body(number=deep(MAX_DEPTH + 1)).encode(),
    "NaN": lambda r: r.body(number="NaN").encode(),
    "Infinity": lambda r: r.body(number="Infinity").encode(),
    "-Infinity": lambda r: r.body(number="-Infinity").encode(),
    "1e400": lambda r: r.body(number="1e400").encode(),
    "a thousand digits": lambda r: r.body(number="7" * 1000).encode(),
    "five thousand digits": lambda r: r.body(number="7" * 5000).encode(),
    "repeated key": lambda r: repeat_first_member(r.body()).encode(),
    "lone surrogate": lambda r: r.body(string=r.good_string + "\\ud800").encode(),
    "lone surrogate in a key": lambda r: ('{"\\udc00": 1, ' + r.body()[1:]).encode(),
    "NUL": lambda r: r.body(string=r.good_string + "\\u0000").encode(),
    "UTF-16": lambda r: r.body().encode("utf-16"),
    "invalid UTF-8": lambda r: r.body(string=r.good_string + "\udcff").encode("utf-8", "surrogateescape"),
    "two byte order marks": lambda r: UTF8_BOM + UTF8_BOM + r.body().encode(),
}


def refused(answer: Answer, status: int = 400, codes: tuple[str, ...] = ("VALIDATION",)) -> None:
    """The contract's error envelope, with one of `codes`."""
    assert answer.status == status, answer.body
    assert set(answer.body) == {"statuscode", "message", "data"}, answer.body
    assert answer.body["statuscode"] == status and isinstance(answer.body["message"], str)
    assert answer.code in codes, answer.body
    details = answer.data.get("details")
    if answer.code == "VALIDATION":
        assert isinstance(details, list) and details
        assert all(set(issue) == {"path", "message"} for issue in details)
    else:
        assert details is None or isinstance(details, dict)


def refused_as_not_json(answer: Answer) -> None:
    """VALIDATION of the body as a whole (`$`): refused as JSON, before any field is looked at."""
    refused(answer)
    assert [issue["path"] for issue in answer.data["details"]] == ["$"], answer.body


async def table_counts(api: Harness) -> dict[str, int]:
    return {t: int(await api.ctx.db.fetchval(f"SELECT count(*) FROM {t}")) for t in NOTHING_WRITTEN}


async def send_every_hostile_body(api: Harness, route: Route, key: str | None,
                                  state: Callable[[], Awaitable[Any]]) -> None:
    """Each hostile body is refused as not JSON and leaves `state` as it was; the good body then passes."""
    headers = {"Content-Type": "application/json"}
    if key is None:
        headers["Authorization"] = f"Bearer {ADMIN_TOKEN}"
    before = await state()
    for number, (name, mangle) in enumerate(HOSTILE.items()):
        answer = await api.call(route.method, route.path, key=key, raw=mangle(route),
                                headers={**headers, "x-idempotency-key": f"hostile-{number:04d}"})
        try:
            refused_as_not_json(answer)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
        assert await state() == before, f"{name} wrote something"
    answer = await api.call(route.method, route.path, key=key, raw=route.body().encode(), headers=headers)
    assert answer.status == route.ok_status, answer.body


async def ari_setup(api: Harness) -> tuple[dict[str, Any], str, Callable[[], Awaitable[Any]]]:
    prop, key = await api.keyed_property(EVERY_SCOPE)

    async def state() -> Any:
        record = [(await api.call("GET", f"{API}/{r}?from=2026-11-22&to=2026-12-31", key=key)).body
                  for r in ("availability", "rates", "restrictions")]
        return record, await table_counts(api)

    return prop, key, state


def ari_route(resource: str, entry: dict[str, Any], number_field: str, string_field: str, good_number: str,
              good_string: str) -> Route:
    body = {"updates": [{**entry, number_field: "@num@", string_field: STR}]}
    return Route("PUT", f"{API}/{resource}", json.dumps(body), good_number, good_string, 202)


async def test_hostile_bodies_on_put_availability(api: Harness) -> None:
    prop, key, state = await ari_setup(api)
    entry = {"roomTypeId": prop["roomTypes"][0]["id"], "dateFrom": "2026-11-23"}
    route = ari_route("availability", entry, "available", "dateTo", "3", "2026-11-25")
    await send_every_hostile_body(api, route, key, state)


async def test_hostile_bodies_on_put_rates(api: Harness) -> None:
    prop, key, state = await ari_setup(api)
    entry = {"ratePlanId": prop["ratePlans"][0]["id"], "dateFrom": "2026-11-23", "dateTo": "2026-11-25"}
    route = ari_route("rates", entry, "rate", "currency", "150", "EUR")
    await send_every_hostile_body(api, route, key, state)


async def test_hostile_bodies_on_put_restrictions(api: Harness) -> None:
    prop, key, state = await ari_setup(api)
    entry = {"ratePlanId": prop["ratePlans"][0]["id"], "dateFrom": "2026-11-23"}
    route = ari_route("restrictions", entry, "minStayArrival", "dateTo", "2", "2026-11-25")
    await send_every_hostile_body(api, route, key, state)


def booking(prop: dict[str, Any], check_in: str = "2026-12-01", check_out: str = "2026-12-04",
            **rooms: Any) -> dict[str, Any]:
    return {"externalReference": "WEB-1", "checkIn": check_in, "checkOut": check_out, "currency": "EUR",
            "guest": {"name": "Ana Silva", "phone": "+351 912 345 678"},
            "rooms": [{"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"],
                       "adults": 2, "nightlyRate": "120.50", **rooms}]}


async def bookings_state(api: Harness, key: str) -> Any:
    listed = await api.call("GET", f"{API}/bookings", key=key)
    return listed.data["bookings"], await table_counts(api)


async def test_hostile_bodies_on_post_bookings(api: Harness) -> None:
    prop, key = await api.keyed_property(EVERY_SCOPE)
    body = booking(prop, adults="@num@")
    body["guest"]["name"] = STR
    route = Route("POST", f"{API}/bookings", json.dumps(body), "2", "Ana Silva", 201)
    await send_every_hostile_body(api, route, key, lambda: bookings_state(api, key))


async def test_hostile_bodies_on_cancel(api: Harness) -> None:
    prop, key = await api.keyed_property(EVERY_SCOPE)
    made = await api.call("POST", f"{API}/bookings", key=key, body=booking(prop))
    assert made.status == 201, made.body
    path = f"{API}/bookings/{made.data['bookingId']}"

    async def state() -> Any:
        return (await api.call("GET", path, key=key)).data["status"], await table_counts(api)

    # No number field: the hostile numbers go where `reason` is.
    route = Route("POST", f"{path}/cancel", json.dumps({"reason": STR}), "", "plans changed", 200)
    await send_every_hostile_body(api, route, key, state)
    assert (await state())[0] == "CANCELLED"


async def test_hostile_bodies_on_admin_post_properties(api: Harness) -> None:
    async def state() -> Any:
        return await api.ctx.db.fetchval("SELECT count(*) FROM properties")

    body = {**CASA_AZUL, "name": STR, "bookingsPerDay": "@num@"}
    route = Route("POST", f"{ADMIN}/properties", json.dumps(body), "40", "Casa Verde", 201)
    await send_every_hostile_body(api, route, None, state)


async def test_admin_bodies_that_odd_values_broke(api: Harness) -> None:
    prop = await api.create_property()
    before = await api.ctx.db.fetchval("SELECT count(*) FROM properties")
    for timezone in ("Europe", "Etc", "Europe/", "..", "tzdata.zi"):  # "Europe" is a directory of tzdata
        refused(await api.admin("POST", "/properties", {**CASA_AZUL, "timezone": timezone}))
    assert await api.ctx.db.fetchval("SELECT count(*) FROM properties") == before
    for key in ("²", "٣", "9" * 30, "-1", ""):
        answer = await api.admin("PUT", f"/properties/{prop['id']}/channel-mapping",
                                 {"cmPropertyId": "cm-1", "roomTypes": {key: "cm-room"}})
        refused(answer)
    answer = await api.admin("POST", f"/properties/{prop['id']}/rate-plans",
                             {"roomTypeId": 2**64, "name": "Too far", "mealPlan": "RO"})
    refused(answer)
    hook = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": "https://example.com/hook"})
    assert hook.status == 201, hook.body
    for since in ("0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"):
        refused(await api.admin("POST", f"/webhooks/{hook.data['id']}/recover", {"since": since}))


# --- queries and paths


async def get(api: Harness, key: str, path: str) -> Answer:
    return await api.call("GET", f"{API}{path}", key=key)


@pytest.mark.parametrize("resource", ["availability", "rates", "restrictions"])
async def test_hostile_read_ranges(api: Harness, resource: str) -> None:
    _, key = await api.keyed_property(EVERY_SCOPE)
    # The default `to` (from + 30 days) would be past the calendar's end.
    refused(await get(api, key, f"/{resource}?from=9999-12-31"), codes=("RANGE_INVALID",))
    refused(await get(api, key, f"/{resource}?from=9999-12-02"), codes=("RANGE_INVALID",))
    assert (await get(api, key, f"/{resource}?from=9999-12-01")).data["to"] == "9999-12-31"
    refused(await get(api, key, f"/{resource}?from=0001-01-01&to=9999-12-31"), codes=("RANGE_INVALID",))
    for query in ("from=%00", "from=" + "1" * 5000, "to=9999-12-32", "from=10000-01-01", "from=0000-01-01",
                  "from=2026-11-22T00:00", "to=%ED%A0%80", "from=%EF%BB%BF2026-11-22"):
        refused(await get(api, key, f"/{resource}?{query}"))
    # The calendar's own ends are dates like any other.
    for query in ("from=9999-12-31&to=9999-12-31", "from=9999-12-01&to=9999-12-31", "from=0001-01-01&to=0001-01-05"):
        answer = await get(api, key, f"/{resource}?{query}")
        assert answer.status == 200, (query, answer.body)


async def test_hostile_booking_queries_and_paths(api: Harness) -> None:
    _, key = await api.keyed_property(EVERY_SCOPE)
    for query in ("limit=" + "1" * 5000, "limit=" + "0" * 5000, "limit=0", "limit=101", "limit=-1", "limit=%D9%A3",
                  "limit=%C2%B2", "limit=1e2", "limit=", "since=9999-12-31T23:59:59-05:00",
                  "since=0001-01-01T00:00:00%2B05:00", "since=%00", "since=" + "2" * 5000,
                  "externalReference=%00", "externalReference=" + "x" * 5000,
                  # Not UTF-8 (a lone byte; an encoded surrogate): refused as in a body, not read as U+FFFD.
                  "externalReference=%ff", "externalReference=%ED%A0%80", "x%ff=1"):
        refused(await get(api, key, f"/bookings?{query}"))
    not_text = await get(api, key, "/bookings?externalReference=%ff")
    assert not_text.data["details"] == [{"path": "externalReference", "message": "must be UTF-8 text"}]
    for query in ("limit=0000000000000000000000000000000000000000050", "since=0001-01-01T00:00:00Z",
                  "since=9999-12-31T23:59:59Z", "externalReference=caf%C3%A9"):
        answer = await get(api, key, f"/bookings?{query}")
        assert answer.status == 200 and answer.data["count"] == 0, (query, answer.body)
    for booking_id in ("1" * 5000, str(2**63), str(2**64), "0", "-1", "%D9%A3", "%00", "1e3", " 1"):
        refused(await get(api, key, f"/bookings/{booking_id}"), 404, ("BOOKING_NOT_FOUND",))
        refused(await api.call("POST", f"{API}/bookings/{booking_id}/cancel", key=key, body={}),
                404, ("BOOKING_NOT_FOUND",))
    for batch_id in ("1" * 5000, "%00", "00000000-0000-0000-0000-00000000000g"):
        refused(await get(api, key, f"/batches/{batch_id}"), 404, ("BATCH_NOT_FOUND",))


async def test_admin_ids_past_a_bigint_match_no_route(api: Harness) -> None:
    prop = await api.create_property()
    for method, path in (("GET", "/properties/" + "1" * 5000), ("GET", f"/properties/{2**63}"),
                         ("GET", f"/properties/{2**64}"), ("GET", "/properties/%D9%A3"),
                         ("POST", f"/bookings/{2**64}/check-in"), ("POST", f"/keys/{2**64}/revoke"),
                         ("POST", f"/webhooks/{2**70}/pause")):
        refused(await api.admin(method, path), 404, ("NOT_FOUND",))
    # Every id a bigint can hold still reaches the route, which answers its own code.
    for property_id in (0, 2**63 - 1):
        refused(await api.admin("GET", f"/properties/{property_id}"), 404, ("PROPERTY_NOT_FOUND",))
    refused(await api.admin("POST", f"/properties/{prop['id']}/ota-revisions/%00/apply"), 404,
            ("REVISION_NOT_FOUND",))


async def test_a_sandbox_ota_reference_with_nul_is_not_found(api: Harness) -> None:
    # An outside review: the reference went to the record, which refuses NUL in text (500).
    prop = await api.create_property()
    test_key = (await api.create_key(prop["id"], EVERY_SCOPE, mode="test"))["key"]
    for reference in ("%00", "a%00b"):
        for verb in ("modify", "cancel"):
            refused(await api.call("POST", f"{API}/test-helpers/ota-bookings/{reference}/{verb}", key=test_key,
                                   body={}), 404, ("NOT_FOUND",))
            refused(await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings/{reference}/{verb}",
                                    body={}), 404, ("NOT_FOUND",))


async def test_admin_channel_grid_at_the_calendar_ends(api: Harness) -> None:
    prop = await api.create_property()
    grid = f"/properties/{prop['id']}/channel-grid"
    answer = await api.admin("GET", f"{grid}?from=9999-12-31")
    assert answer.status == 200 and answer.data["to"] == "9999-12-31", answer.body
    for query in ("from=0001-01-01&to=9999-12-31", "from=2026-12-01&to=2026-11-01", "from=%00"):
        refused(await api.admin("GET", f"{grid}?{query}"))


# --- dates at the calendar's edge in write bodies


async def test_ari_writes_at_the_calendar_ends_are_range_or_horizon(api: Harness) -> None:
    prop, key, state = await ari_setup(api)
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    before = await state()
    cases = [
        ("availability", {"roomTypeId": room, "dateFrom": "9999-12-31", "dateTo": "9999-12-31", "available": 1},
         "HORIZON"),
        ("availability", {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "9999-12-31", "available": 1},
         "HORIZON"),
        ("rates", {"ratePlanId": plan, "dateFrom": "9999-12-25", "dateTo": "9999-12-31", "rate": 100,
                   "currency": "EUR", "days": ["sa"]}, "HORIZON"),
        ("rates", {"ratePlanId": plan, "dateFrom": "9999-12-30", "dateTo": "9999-12-31", "rate": 100,
                   "currency": "EUR", "days": ["mo"]}, "RANGE_INVALID"),  # no Monday in it
        ("restrictions", {"ratePlanId": plan, "dateFrom": "0001-01-01", "dateTo": "0001-01-01", "stopSell": True,
                          "days": ["tu"]}, "RANGE_INVALID"),  # 0001-01-01 is a Monday
        ("restrictions", {"ratePlanId": plan, "dateFrom": "0001-01-01", "dateTo": "0001-01-07", "stopSell": True},
         "RANGE_INVALID"),
        ("restrictions", {"ratePlanId": plan, "dateFrom": "9999-12-31", "dateTo": "0001-01-01", "stopSell": True},
         "RANGE_INVALID"),
    ]
    for resource, entry, code in cases:
        answer = await api.call("PUT", f"{API}/{resource}", key=key, body={"updates": [entry]})
        refused(answer, codes=(code,))
    assert await state() == before


async def test_booking_dates_and_ids_out_of_reach_are_refused_with_the_body(api: Harness) -> None:
    prop, key = await api.keyed_property(EVERY_SCOPE)
    before = await bookings_state(api, key)
    for check_in, check_out in (("9999-12-01", "9999-12-05"), ("9999-12-31", "9999-12-31"),
                                ("2026-12-01", "0001-01-01"), ("0001-01-01", "0001-01-03")):
        answer = await api.call("POST", f"{API}/bookings", key=key, body=booking(prop, check_in, check_out))
        refused(answer)
    for field in ("roomTypeId", "ratePlanId"):
        body = booking(prop)
        body["rooms"][0][field] = 2**64  # past a bigint: the writer's lookup would fail
        refused(await api.call("POST", f"{API}/bookings", key=key, body=body))
    # Far, but inside the calendar's margin: the stay rules answer, as the contract says.
    for check_in, check_out in (("9998-12-01", "9998-12-05"), ("0002-01-01", "0002-01-03")):
        answer = await api.call("POST", f"{API}/bookings", key=key, body=booking(prop, check_in, check_out))
        refused(answer, codes=("STAY_INVALID",))
    assert await bookings_state(api, key) == before
    # The writer is still there: a good booking goes through.
    answer = await api.call("POST", f"{API}/bookings", key=key, body=booking(prop))
    assert answer.status == 201, answer.body


# --- characters that break headers or disguise text, in what we store

HOSTILE_CHARACTERS = ("\r\n", "\n", "\x85", "\u2028", "\u2029", "\x1b", "\x7f", "\u202e", "\u2066", "\ufeff", "\u200b")


async def test_names_and_references_with_controls_or_bidi_overrides_are_refused(api: Harness) -> None:
    prop, key = await api.keyed_property(EVERY_SCOPE)
    properties = await api.ctx.db.fetchval("SELECT count(*) FROM properties")
    before = await bookings_state(api, key)
    for bad in HOSTILE_CHARACTERS:
        name = f"Casa{bad}Azul"
        refused(await api.admin("POST", "/properties", {**CASA_AZUL, "name": name}))
        refused(await api.admin("PATCH", f"/properties/{prop['id']}", {"name": name}))
        refused(await api.admin("POST", f"/properties/{prop['id']}/keys", {"label": name, "scopes": ["ari:read"]}))
        for field in ("externalReference",):
            refused(await api.call("POST", f"{API}/bookings", key=key, body={**booking(prop), field: f"REF{bad}1"}))
        body = booking(prop)
        body["guest"]["name"] = name
        refused(await api.call("POST", f"{API}/bookings", key=key, body=body))
    assert await api.ctx.db.fetchval("SELECT count(*) FROM properties") == properties
    assert (await api.admin("GET", f"/properties/{prop['id']}")).data["name"] == prop["name"]
    assert await bookings_state(api, key) == before
    # Names in any script, and line breaks in notes, are still welcome.
    answer = await api.call("POST", f"{API}/bookings", key=key, body={
        **booking(prop), "notes": "late arrival\r\nquiet room, please"})
    assert answer.status == 201, answer.body
    assert (await api.admin("PATCH", f"/properties/{prop['id']}", {"name": "Hôtel Élysée – ホテル"})).status == 200
