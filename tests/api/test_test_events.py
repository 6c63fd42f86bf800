"""GET /test-helpers/events (issue 45, what `connectapi listen` asks): the test record's
events after a cursor, bodies as their webhooks carry them; test keys only (mock clock,
real HTTP)."""

from __future__ import annotations

import json

import trio
import trio.testing

from .harness import API, Harness, eventually
from .test_test_helpers import keyed, stay


async def test_a_listener_gets_the_test_records_events_after_its_cursor(api: Harness) -> None:
    prop, live, test = await keyed(api)
    refused = await api.call("GET", f"{API}/test-helpers/events", key=live)
    assert (refused.status, refused.code) == (404, "NOT_FOUND")  # test data only
    start = await api.call("GET", f"{API}/test-helpers/events", key=test)
    assert start.status == 200 and start.data["events"] == []  # where to start: now
    cursor = start.data["after"]
    made = await api.call("POST", f"{API}/test-helpers/ota-bookings", key=test, body=stay(prop))
    assert made.status == 201, made.body
    got = await api.call("GET", f"{API}/test-helpers/events?after={cursor}", key=test)
    [event] = got.data["events"]
    body = json.loads(event["body"])  # exactly as its webhooks carry it
    assert (event["type"], body["id"], body["type"], body["mode"]) == (
        "channel.booking.created", event["id"], "channel.booking.created", "test")
    assert body["data"]["booking"]["reference"] == made.data["reference"]
    assert int(got.data["after"]) > int(cursor)
    # Nothing after the last one; the next event comes after it, to every reader alike.
    assert (await api.call("GET", f"{API}/test-helpers/events?after={got.data['after']}", key=test)).data[
        "events"] == []
    # Another property's test key sees none of it, whatever cursor it gives.
    _, _, other = await keyed(api)
    assert (await api.call("GET", f"{API}/test-helpers/events?after=0", key=other)).data["events"] == []


async def test_a_waiting_ask_is_answered_when_an_event_comes(api: Harness) -> None:
    prop, _, test = await keyed(api)
    cursor = (await api.call("GET", f"{API}/test-helpers/events", key=test)).data["after"]
    got: dict[str, object] = {}

    async def ask() -> None:
        answer = await api.call("GET", f"{API}/test-helpers/events?after={cursor}&wait=30", key=test)
        got.update(answer.data)

    twin = await api.ctx.db.fetchval("SELECT id FROM properties WHERE twin_of = $1", prop["id"])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await eventually(lambda: api.ctx.properties.wakeups.awaited("revision", twin), "the ask waiting")
        assert got == {}
        made = await api.call("POST", f"{API}/test-helpers/ota-bookings", key=test, body=stay(prop))
        assert made.status == 201, made.body
    events = got["events"]
    assert isinstance(events, list) and [e["type"] for e in events] == ["channel.booking.created"]


async def test_a_cursor_or_wait_that_is_not_one_is_refused(api: Harness) -> None:
    _, _, test = await keyed(api)
    for query in ("after=-1", "after=x", "after=" + "9" * 19, "wait=31", "wait=-1", "after=1&wait=2.5"):
        answer = await api.call("GET", f"{API}/test-helpers/events?{query}", key=test)
        assert (answer.status, answer.code) == (400, "VALIDATION"), query
