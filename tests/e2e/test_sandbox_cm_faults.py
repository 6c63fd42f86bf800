"""The sandbox's `malformed` and `reset` faults, armed over HTTP, met by our client over a
real socket (issue 15): a 200 that is an HTML page is a MalformedAnswer, a connection
closed without an answer is Unavailable; either spends the fault and the next call goes
through."""

from __future__ import annotations

from datetime import date

import httpx
import pytest

from connectapi.channel.client import MalformedAnswer, Unavailable

from .sandbox_served import Sandbox


async def test_the_fault_route_names_every_mode(sandbox: Sandbox) -> None:
    refused = await sandbox.control.post("/_sandbox/faults", json={"mode": "explode"})
    assert refused.status_code == 422
    assert refused.json()["errors"]["details"] == {"mode": ["must be one of ok|429|500|timeout|malformed|reset"]}
    for bad, field in (({"mode": "reset", "count": True}, "count"), ({"mode": "reset", "count": -1}, "count"),
                       ({"mode": "429", "retryAfter": "5"}, "retryAfter"), ({"mode": "429", "calls": "x"}, "calls")):
        answer = await sandbox.control.post("/_sandbox/faults", json=bad)
        assert answer.status_code == 422 and list(answer.json()["errors"]["details"]) == [field]


async def test_malformed_is_a_200_html_page_and_a_malformed_answer(sandbox: Sandbox) -> None:
    s = sandbox
    await s.arm("malformed")
    page = await s.control.post("/api/v1/availability", json={"values": s.availability()})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.text.startswith("<!DOCTYPE html>")
    await s.arm("malformed")
    with pytest.raises(MalformedAnswer) as malformed:
        await s.client.push_availability(s.availability())
    assert malformed.value.status == 200
    assert str(malformed.value).startswith("POST /api/v1/availability: a 200 that is not JSON (text/html")
    assert (await s.client.push_availability(s.availability(2))).refusals == ()  # spent: the next goes through
    assert s.state.properties[s.property_id].availability[s.room_type_id][date(2026, 12, 1)] == 2
    await s.arm("malformed")
    with pytest.raises(MalformedAnswer):
        await s.client.create_room_type(s.property_id, "Twin", 2)
    assert await s.client.create_room_type(s.property_id, "Twin", 2)
    assert s.state.stats.failed == 3


async def test_reset_closes_the_connection_without_an_answer(sandbox: Sandbox) -> None:
    s = sandbox
    await s.arm("reset")
    with pytest.raises(httpx.RemoteProtocolError):
        await s.control.get("/api/v1/availability", params={
            "filter[property_id]": s.property_id, "filter[date][gte]": "2026-12-01",
            "filter[date][lte]": "2026-12-01"})
    await s.arm("reset")
    assert (await s.client.booking_feed()).complete  # the booking feed leaves an armed fault alone
    assert s.state.faults.remaining == 1
    with pytest.raises(Unavailable) as reset:
        await s.client.read_availability(s.property_id, date(2026, 12, 1), date(2026, 12, 1))
    assert type(reset.value) is Unavailable and reset.value.status is None
    assert "closed without a whole answer" in str(reset.value)
    assert await s.client.read_availability(s.property_id, date(2026, 12, 1), date(2026, 12, 1)) == {}
    await s.arm("reset", 3)  # each call on a connection of its own
    for _ in range(3):
        with pytest.raises(Unavailable):
            await s.client.push_availability(s.availability())
    assert (await s.client.push_availability(s.availability())).refusals == ()
    assert s.state.stats.failed == 5
