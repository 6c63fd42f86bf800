"""What the sandbox does beyond one request and its answer: values read back as applied,
refusals that clear, the calls log, the exact sliding windows, fault selectors, the
property's time zone, revisions in the documented shape, and Channex's webhooks."""

from __future__ import annotations

import json
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from connectapi.channel.sandbox.bookings import Stay
from connectapi.channel.sandbox.serve import REMIND_EVERY_SECONDS, Webhook, subscribe
from connectapi.channel.sandbox.state import Limits
from connectapi.domain.ota_bookings import parse_revision

from ..channex_documented import BOOKING_COM_CANCELLED, attributes
from .channex_cases import (BOOKING_WEBHOOK_KEYS, BOOKING_WEBHOOK_PAYLOAD_KEYS, CUSTOMER_KEYS, GUARANTEE_KEYS,
                            OTA_BOOKING, REVISION_KEYS, ROOM_KEYS, TAX_KEYS)
from .sandbox import KEY, Served, fill, served_sandbox


async def write(served: Served, kind: str, *values: dict[str, Any]) -> dict[str, Any]:
    answer = await served.http.post(f"/api/v1/{kind}", json={"values": [fill(v, served.names) for v in values]})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def read_restrictions(served: Served, first: str, last: str, fields: str) -> Any:
    answer = await served.http.get("/api/v1/restrictions", params={
        "filter[property_id]": served.names["property_id"], "filter[date][gte]": first, "filter[date][lte]": last,
        "filter[restrictions]": fields})
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


PLAN = {"property_id": "{property_id}", "rate_plan_id": "{rate_plan_id}"}
ROOM = {"property_id": "{property_id}", "room_type_id": "{room_type_id}"}


async def test_values_apply_in_order_and_read_back_as_channex_keeps_them(mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as s:
        await write(s, "restrictions",
                    {**PLAN, "date_from": "2026-12-01", "date_to": "2026-12-07", "rate": 10000, "min_stay": 2},
                    {**PLAN, "date_from": "2026-12-01", "date_to": "2026-12-07", "days": ["fr", "sa"],
                     "rate": "150.5", "stop_sell": 1})
        await write(s, "availability", {**ROOM, "date_from": "2026-12-04", "date_to": "2026-12-05", "availability": 4})
        plan = s.names["rate_plan_id"]
        held = await read_restrictions(s, "2026-12-04", "2026-12-06",
                                       "rate,min_stay_arrival,min_stay,stop_sell,availability")
        assert held == {plan: {
            "2026-12-04": {"rate": "150.50", "min_stay_arrival": 2, "min_stay": 2, "stop_sell": True,
                           "availability": 4},  # a Friday
            "2026-12-05": {"rate": "150.50", "min_stay_arrival": 2, "min_stay": 2, "stop_sell": True,
                           "availability": 4},
            "2026-12-06": {"rate": "100.00", "min_stay_arrival": 2, "min_stay": 2}}}
        # The Python reads (the service's operator grid) hold every field.
        assert s.state.read_restrictions(s.names["property_id"], date(2026, 12, 6), date(2026, 12, 6)) == {
            plan: {"2026-12-06": {"rate": "100.00", "min_stay_arrival": 2}}}
        assert s.state.stats.view()["values"] == 3 and s.state.stats.view()["cells"] == 7 + 2 + 2


async def test_a_refusal_refuses_every_value_of_the_plan_until_lifted(mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as s:
        refusal = {"property_id": s.names["property_id"], "rate_plan_id": s.names["rate_plan_id"], "field": "rate",
                   "message": "rate plan is disabled on Booking.com", "active": True}
        assert (await s.http.post("/_sandbox/refusals", json=refusal)).status_code == 200
        value = {**PLAN, "date": "2026-12-01", "rate": 9000}
        other = {**PLAN, "rate_plan_id": "{other_rate_plan_id}", "date": "2026-12-01", "rate": 9000}
        refused = await write(s, "restrictions", value, other)
        assert refused["meta"]["warnings"] == [{**fill(value, s.names),
                                                "warning": {"rate": ["rate plan is disabled on Booking.com"]}}]
        assert len(refused["data"]) == 1  # the other plan's value applied
        listed = (await s.http.get("/_sandbox/refusals")).json()["refusals"]
        assert [r["entity_id"] for r in listed] == [s.names["rate_plan_id"]]
        assert (await s.http.post("/_sandbox/refusals", json={**refusal, "active": False})).status_code == 200
        accepted = await write(s, "restrictions", value)
        assert accepted["meta"]["warnings"] == [] and accepted["data"][0]["type"] == "task"
        bad = await s.http.post("/_sandbox/refusals", json={**refusal, "rate_plan_id": "nope", "message": ""})
        assert bad.status_code == 422 and set(bad.json()["errors"]["details"]) == {"rate_plan_id", "message"}
        calls = (await s.http.get("/_sandbox/calls", params={"property_id": s.names["property_id"]})).json()["calls"]
        assert [(c["kind"], c["values"], c["warnings"], c["task_id"] is None) for c in calls] == [
            ("restrictions", 1, 1, False), ("restrictions", 1, 0, False)]
        assert calls[0]["property_ids"] == [s.names["property_id"]] and calls[0]["at"].startswith("2026-11-22T10:00")
        assert (await s.http.get("/_sandbox/calls", params={"property_id": "else"})).json()["calls"] == []


async def test_a_call_with_nothing_applied_has_no_task(mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as s:
        answer = await write(s, "availability", {**ROOM, "date": "2026-12-01", "availability": -1})
        assert answer["data"] == []
        calls = (await s.http.get("/_sandbox/calls")).json()["calls"]
        assert calls == [{"kind": "availability", "property_ids": [s.names["property_id"]], "task_id": None,
                          "values": 0, "warnings": 1, "at": "2026-11-22T10:00:00+00:00"}]
        assert s.state.calls.maxlen == 10_000


async def test_past_is_the_propertys_today(mock_clock: trio.testing.MockClock) -> None:
    # 10:00 UTC on 22 November is already the 23rd at UTC+14.
    async with served_sandbox(timezone="Pacific/Kiritimati") as s:
        answer = await write(s, "availability", {**ROOM, "date": "2026-11-22", "availability": 1},
                             {**ROOM, "date": "2026-11-23", "availability": 1})
        assert [w["warning"] for w in answer["meta"]["warnings"]] == [{"date": ["can't be in the past"]}]
        mock_clock.jump(24 * 3600)  # a day on: the 23rd is past too
        later = await write(s, "availability", {**ROOM, "date": "2026-11-23", "availability": 1})
        assert later["data"] == []
    async with served_sandbox() as s:
        bad = await s.http.post("/api/v1/properties", json={"property": {"title": "X", "currency": "USD",
                                                                          "timezone": "Mars/Olympus"}})
        assert bad.status_code == 422 and bad.json()["errors"]["details"] == {"timezone": ["is invalid"]}


async def test_write_windows_slide_exactly_per_property_and_kind(mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as s:
        value = {**ROOM, "date": "2026-12-01", "availability": 1}
        for n in range(10):
            await write(s, "availability", value)
            mock_clock.jump(1)  # the calls at t = 0 .. 9
        mock_clock.jump(50)  # t = 60: the first call's minute is over, one call fits
        await write(s, "availability", value)
        refused = await s.http.post("/api/v1/availability", json={"values": [fill(value, s.names)]})
        assert refused.status_code == 429 and "retry-after" not in refused.headers
        mock_clock.jump(0.999)  # t = 60.999: the second (t = 1) still counts
        assert (await s.http.post("/api/v1/availability", json={"values": [fill(value, s.names)]})).status_code == 429
        mock_clock.jump(0.001)
        await write(s, "availability", value)
        # restrictions have their own budget, as has another property
        await write(s, "restrictions", {**PLAN, "date": "2026-12-01", "stop_sell": False})
        assert s.state.stats.throttled == 2


async def test_fault_selectors(mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as s:
        revision = (await s.http.post("/_sandbox/ota-bookings", json=fill(OTA_BOOKING, s.names))).json()["data"]["id"]
        armed = await s.http.post("/_sandbox/faults", json={"mode": "500", "count": 2, "calls": "ack"})
        assert armed.json() == {"faults": {"mode": "500", "count": 2, "retryAfter": None, "calls": "ack"}}
        await write(s, "availability", {**ROOM, "date": "2026-12-01", "availability": 1})  # ARI untouched
        assert (await s.http.get("/api/v1/booking_revisions/feed")).status_code == 200  # the feed too
        for _ in range(2):
            failed = await s.http.post(f"/api/v1/booking_revisions/{revision}/ack")
            assert failed.status_code == 500 and failed.json()["errors"]["code"] == "internal_server_error"
        assert (await s.http.post(f"/api/v1/booking_revisions/{revision}/ack")).status_code == 200
        await s.http.post("/_sandbox/faults", json={"mode": "429", "count": 1, "calls": "feed", "retryAfter": 7})
        throttled = await s.http.get(f"/api/v1/booking_revisions/{revision}")
        assert throttled.status_code == 429 and throttled.headers["retry-after"] == "7"
        await s.http.post("/_sandbox/faults", json={"mode": "malformed", "count": 1, "calls": "reads"})
        await write(s, "availability", {**ROOM, "date": "2026-12-01", "availability": 2})  # writes untouched
        page = await s.http.get("/api/v1/availability", params={"filter[property_id]": s.names["property_id"],
                                                               "filter[date]": "2026-12-01"})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        refused = await s.http.post("/_sandbox/faults", json={"mode": "500", "calls": "everything"})
        assert refused.status_code == 422 and refused.json()["errors"]["details"] == {
            "calls": ["must be one of ari|reads|ack|feed"]}
        assert s.state.stats.failed == 3


async def test_call_time_lengthens_each_ari_call_begun_after_it(mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as s:
        assert (await s.http.post("/_sandbox/call-time", json={"callMs": 2000})).json() == {"callMs": 2000}
        pid, pushed = s.names["property_id"], trio.Event()

        async def push() -> None:
            await write(s, "availability", {**ROOM, "date": "2026-12-01", "availability": 1})
            pushed.set()

        async def pushing() -> dict[str, float]:
            got: dict[str, float] = (await s.http.get("/_sandbox/stats")).json()["pushing"]
            return got

        async with trio.open_nursery() as nursery:
            nursery.start_soon(push)
            for _ in range(500):  # the call reaching the sandbox: real I/O, no time passes
                if pid in await pushing():
                    break
            mock_clock.jump(1.5)
            assert await pushing() == {pid: 1.5} and not pushed.is_set()
            mock_clock.jump(0.5)
        assert pushed.is_set() and await pushing() == {}
        for wrong in (-1, 60_001, "300", True, None):
            refused = await s.http.post("/_sandbox/call-time", json={"callMs": wrong})
            assert refused.status_code == 422 and refused.json()["errors"]["details"] == {
                "callMs": ["must be a whole number from 0 to 60000"]}
        assert s.state.call_seconds == 2.0


async def test_revisions_have_the_documented_booking_com_shape(mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as s:
        made = await s.http.post("/_sandbox/ota-bookings", json=fill(
            {**OTA_BOOKING, "children": 1, "arrival_hour": "15:00", "notes": "late arrival"}, s.names))
        assert made.status_code == 201, made.text
        new = made.json()["data"]["attributes"]
        code = new["ota_reservation_code"]
        modified = await s.http.post(f"/_sandbox/ota-bookings/{code}/modify",
                                     json={"departure_date": "2026-12-16", "amount": "229.50"})
        assert modified.status_code == 201, modified.text
        assert (await s.http.post(f"/_sandbox/ota-bookings/{code}/cancel")).status_code == 201
        assert (await s.http.post("/_sandbox/ota-bookings/nope/cancel")).json()["errors"]["code"] == "not_found"
        feed = (await s.http.get("/api/v1/booking_revisions/feed", params={
            "filter[property_id]": s.names["property_id"], "order[inserted_at]": "asc"})).json()["data"]
        revisions = [item["attributes"] for item in feed]
        assert [r["status"] for r in revisions] == ["new", "modified", "cancelled"]
        for r in revisions:
            assert set(r) == REVISION_KEYS and set(r["customer"]) == CUSTOMER_KEYS
            assert set(r["guarantee"]) == GUARANTEE_KEYS and r["guarantee"]["cvv"] == "***"
            assert r["guarantee"]["card_number"] == "411111******1111"
            (room,) = r["rooms"]
            assert set(room) == ROOM_KEYS and all(set(t) == TAX_KEYS for t in room["taxes"])
            assert (room["room_type_id"], room["rate_plan_id"]) == (s.names["room_type_id"], s.names["rate_plan_id"])
            assert r["unique_id"] == f"BDC-{code}" and r["ota_name"] == "BookingCom" and r["revision_id"] == r["id"]
            assert r["occupancy"] == {"adults": 2, "children": 1, "infants": 0, "ages": [8]}
            assert sum(Decimal(p) for p in room["days"].values()) == Decimal(room["amount"]) == Decimal(r["amount"])
            assert len(r["inserted_at"]) == 26 and "+" not in r["inserted_at"]  # ISO, no zone
            # what the intake reads of it
            parsed = parse_revision(r)
            assert parsed.rooms[0].cm_room_type_id == s.names["room_type_id"] and parsed.customer["surname"] == "Surname"
        assert revisions[0]["rooms"][0]["days"] == {"2026-12-13": "76.50", "2026-12-14": "76.50"}
        assert revisions[1]["rooms"][0]["days"] == {"2026-12-13": "76.50", "2026-12-14": "76.50",
                                                    "2026-12-15": "76.50"}
        assert (revisions[0]["arrival_hour"], revisions[0]["notes"]) == ("15:00", "late arrival")
        assert revisions[0]["ota_commission"] == "22.95" and revisions[0]["currency"] == "USD"
        assert len({r["system_id"] for r in revisions}) == 3 and len({r["booking_id"] for r in revisions}) == 1
        # Booking.com's modification carries a new booking_room_id; its cancellation repeats it.
        room_ids = [r["rooms"][0]["booking_room_id"] for r in revisions]
        assert room_ids[0] != room_ids[1] == room_ids[2]


async def test_a_cancellation_with_a_fee_is_the_documented_booking_com_cancellation(
        mock_clock: trio.testing.MockClock) -> None:
    """Booking.com's cancellation in the docs keeps what the guest still owes: the amount
    falls to the fee (76.50 of 153.00), the commission with it, and one "Cancellation Fee"
    service carries it; the room is repeated as it was."""
    documented = attributes(BOOKING_COM_CANCELLED)
    async with served_sandbox() as s:
        made = await s.http.post("/_sandbox/ota-bookings", json=fill(OTA_BOOKING, s.names))
        code = made.json()["data"]["attributes"]["ota_reservation_code"]
        refused = await s.http.post(f"/_sandbox/ota-bookings/{code}/cancel", json={"fee": "-1"})
        assert refused.status_code == 422 and "fee" in refused.json()["errors"]["details"], refused.text
        cancelled = await s.http.post(f"/_sandbox/ota-bookings/{code}/cancel", json={"fee": "76.50"})
        assert cancelled.status_code == 201, cancelled.text
        r = cancelled.json()["data"]["attributes"]
        assert r["status"] == "cancelled" and set(r) == REVISION_KEYS
        assert (r["amount"], documented["amount"]) == ("76.50", "76.50")
        assert r["ota_commission"] == "11.48"  # the sandbox's 15 %, of the fee now
        assert r["services"] == documented["services"]
        assert r["rooms"][0]["amount"] == documented["rooms"][0]["amount"] == "153.00"
        assert parse_revision(r).amount == Decimal("76.50")
        # without one, the stay's amount stays, as before
        again = await s.http.post("/_sandbox/ota-bookings", json=fill(OTA_BOOKING, s.names))
        plain = await s.http.post(
            f"/_sandbox/ota-bookings/{again.json()['data']['attributes']['ota_reservation_code']}/cancel")
        assert (plain.json()["data"]["attributes"]["amount"], plain.json()["data"]["attributes"]["services"]) == (
            "153.00", [])


def received(into: list[httpx.Request]) -> httpx.AsyncClient:
    """A client whose every request is kept, answered 200: the subscriber's end."""
    def keep(sent: httpx.Request) -> httpx.Response:
        into.append(sent)
        return httpx.Response(200, json={"success": True})

    return httpx.AsyncClient(transport=httpx.MockTransport(keep))


async def test_booking_webhook_and_the_non_acked_reminder(mock_clock: trio.testing.MockClock) -> None:
    sent: list[httpx.Request] = []
    async with served_sandbox() as s, received(sent) as client:
        subscribe(s.state.bookings, Webhook("https://pms.example/notify", {"X-Notify-Secret": "s3cret"}), client,
                  s.clock)
        first = (await s.http.post("/_sandbox/ota-bookings", json=fill(OTA_BOOKING, s.names))).json()["data"]["id"]
        mock_clock.jump(60)
        second = (await s.http.post("/_sandbox/ota-bookings", json=fill(OTA_BOOKING, s.names))).json()["data"]["id"]
        await trio.testing.wait_all_tasks_blocked()
        bodies = [json.loads(r.content) for r in sent]
        assert [b["event"] for b in bodies] == ["booking", "booking"]
        assert all(set(b) == BOOKING_WEBHOOK_KEYS and set(b["payload"]) == BOOKING_WEBHOOK_PAYLOAD_KEYS
                   for b in bodies)
        assert bodies[0]["payload"]["revision_id"] == first and bodies[0]["property_id"] == s.names["property_id"]
        assert bodies[0]["user_id"] is None and bodies[0]["timestamp"] == "2026-11-22T10:00:00.000000Z"
        assert all(r.headers["X-Notify-Secret"] == "s3cret" for r in sent)
        await s.http.post(f"/api/v1/booking_revisions/{second}/ack")
        # 30 minutes after the first, a look later: a reminder for it alone (the second is acknowledged).
        mock_clock.jump(timedelta(minutes=29).total_seconds() + REMIND_EVERY_SECONDS)
        await trio.testing.wait_all_tasks_blocked()
        reminders = [json.loads(r.content) for r in sent[2:]]
        assert [(b["event"], b["payload"]["revision_id"]) for b in reminders] == [("non_acked_booking", first)]
        mock_clock.jump(3600)
        await trio.testing.wait_all_tasks_blocked()
        assert len(sent) == 3  # once only


async def test_a_subscription_without_data_sends_no_payload(mock_clock: trio.testing.MockClock) -> None:
    sent: list[httpx.Request] = []
    async with served_sandbox() as s, received(sent) as client:
        subscribe(s.state.bookings, Webhook("https://pms.example/notify", send_data=False), client, s.clock)
        s.state.bookings.new(Stay(s.names["property_id"], s.names["room_type_id"], s.names["rate_plan_id"],
                                  date(2026, 12, 1), date(2026, 12, 2), 1, 0, {"name": "Bo"}, Decimal("90"), "USD",
                                  "Airbnb"), s.clock.now())
        await trio.testing.wait_all_tasks_blocked()
        (body,) = [json.loads(r.content) for r in sent]
        assert set(body) == {"event", "property_id", "user_id", "timestamp"}


@pytest.mark.parametrize("ota", ["Airbnb", "Expedia"])
async def test_other_otas_follow_their_examples(mock_clock: trio.testing.MockClock, ota: str) -> None:
    async with served_sandbox() as s:
        made = await s.http.post("/_sandbox/ota-bookings", json=fill({**OTA_BOOKING, "ota_name": ota}, s.names))
        r = made.json()["data"]["attributes"]
        assert r["unique_id"].startswith({"Airbnb": "ABB-", "Expedia": "EXP-"}[ota])
        assert (r["guarantee"] is None) == (ota == "Airbnb")
        assert r["rooms"][0]["guests"] is None and r["rooms"][0]["taxes"] == []
        assert (r["ota_commission"] is None) == (ota == "Expedia")


async def test_a_body_no_handler_reads_is_read_before_the_answer() -> None:
    """A control POST whose handler reads no body (`cancel` with `{}`): the answer waits for
    the body, and the keep-alive connection serves the next request. Answered over an unread
    body, the next request on the connection hung now and then (certification test 11)."""
    async with served_sandbox() as served:
        host, port = str(served.http.base_url).removeprefix("http://").rstrip("/").split(":")
        async with await trio.open_tcp_stream(host, int(port)) as stream:
            await stream.send_all((f"POST /_sandbox/ota-bookings/nope/cancel HTTP/1.1\r\nHost: sandbox\r\n"
                                   f"user-api-key: {KEY}\r\nContent-Type: application/json\r\n"
                                   "Content-Length: 2\r\n\r\n").encode())
            with trio.move_on_after(0.2):
                early = await stream.receive_some()
                assert not early, early  # no answer while the body is still to come
            await stream.send_all(b"{}")
            answers = b""
            with trio.fail_after(5):
                while b"HTTP/1.1 404" not in answers:
                    answers += await stream.receive_some()
            await stream.send_all(f"GET /_sandbox/stats HTTP/1.1\r\nHost: sandbox\r\nuser-api-key: {KEY}\r\n\r\n"
                                  .encode())
            with trio.fail_after(5):
                while b"HTTP/1.1 200" not in answers:
                    answers += await stream.receive_some()
            assert b"connection: close" not in answers.lower()


async def test_two_sandboxes_served_at_once_each_answer_for_their_own(mock_clock: trio.testing.MockClock) -> None:
    """Apps are built once a process and lent to sandboxes: each request answers for the
    sandbox it was sent to, its key, its state and its clock, whatever the other does meanwhile."""
    roomy = Limits(1000, 1000, 1000)
    async with served_sandbox(roomy, key="first-sandbox-key-0123") as first, \
            served_sandbox(roomy, key="second-sandbox-key-0123", start="2027-12-01T10:00:00+00:00") as second:

        async def pushes() -> None:
            for night in range(20):
                await write(first, "availability", {**ROOM, "date": f"2027-06-{night + 1:02d}", "availability": 2})

        async def reads() -> None:
            for _ in range(20):
                answer = await second.http.get("/_sandbox/stats")
                assert answer.json()["stats"]["availabilityCalls"] == 0

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pushes)
            nursery.start_soon(reads)
        assert first.state.stats.availability_calls == 20 and second.state.stats.availability_calls == 0
        # A key opens its own sandbox alone, and one's ids are unknown to the other.
        crossed = await second.http.get("/_sandbox/stats", headers={"user-api-key": "first-sandbox-key-0123"})
        assert crossed.status_code == 401
        unknown = await second.http.get("/api/v1/availability", params={
            "filter[property_id]": first.names["property_id"], "filter[date]": "2027-06-01"})
        assert unknown.status_code == 404
        # Each answers on its own clock: a night in 2027 is past for the second alone.
        late = await write(second, "availability", {**ROOM, "date": "2027-06-01", "availability": 1})
        assert late["meta"]["warnings"] and not (await write(first, "availability", {
            **ROOM, "date": "2027-06-01", "availability": 1}))["meta"]["warnings"]


async def test_a_sandbox_stopped_first_leaves_one_started_after_it_serving(mock_clock: trio.testing.MockClock) -> None:
    """Stopping a sandbox (its app's lifespan ended) leaves another, started after it on an
    app of the same process, answering and stopping in its turn."""
    roomy = Limits(1000, 1000, 1000)
    stops = [trio.Event(), trio.Event()]
    stopped = [trio.Event(), trio.Event()]
    opened: list[Served] = []

    async def serve(key: str, n: int, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with served_sandbox(roomy, key=key) as served:
            opened.append(served)
            task_status.started()
            await stops[n].wait()
        stopped[n].set()

    async with trio.open_nursery() as nursery:
        await nursery.start(serve, "first-sandbox-key-0123", 0)
        await nursery.start(serve, "second-sandbox-key-0123", 1)
        stops[0].set()
        await stopped[0].wait()
        later = opened[1]
        for night in range(1, 4):
            await write(later, "availability", {**ROOM, "date": f"2027-06-{night:02d}", "availability": 2})
        assert later.state.stats.availability_calls == 3
        stops[1].set()
    assert stopped[1].is_set()


# -- per-person rate plans (issue 44) -------------------------------------------------------

PER_PERSON = {"property_id": "{property_id}", "rate_plan_id": "{per_person_rate_plan_id}"}  # make_per_person's


async def make_per_person(served: Served, options: list[dict[str, Any]] | None = None) -> str:
    """A per-person plan on the twin room, options for 1, 2 and 3 adults (3 primary) unless given."""
    plan = await served.create("rate_plan", property_id=served.names["property_id"],
                               room_type_id=served.names["room_type_id"], title="Per person", sell_mode="per_person",
                               options=options or [{"occupancy": n, "is_primary": n == 3} for n in (1, 2, 3)])
    served.names["per_person_rate_plan_id"] = plan
    return plan


def priced(*prices: tuple[int, str]) -> list[dict[str, Any]]:
    return [{"occupancy": n, "rate": rate} for n, rate in prices]


async def test_a_per_person_plans_prices_are_held_per_occupancy_and_read_with_the_primarys_as_rate(
        mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as s:
        plan = await make_per_person(s)
        answer = await write(s, "restrictions",
                             {**PER_PERSON, "date_from": "2026-12-01", "date_to": "2026-12-03", "stop_sell": True,
                              "rates": [{"occupancy": 3, "rate": 15000}, {"occupancy": 1, "rate": 12100},
                                        {"occupancy": 2, "rate": "132.5"}]},
                             # occupancy 1 again on the 2nd: 2 and 3 keep their prices
                             {**PER_PERSON, "date": "2026-12-02", "rates": [{"occupancy": 1, "rate": "99.00"}]},
                             # a night priced for 1 adult only: no primary price, so no `rate`
                             {**PER_PERSON, "date": "2026-12-04", "rates": [{"occupancy": 1, "rate": 8000}]},
                             {**PLAN, "date": "2026-12-01", "rate": 20000})
        assert answer["meta"]["warnings"] == [] and len(answer["data"]) == 1
        every = priced((1, "121.00"), (2, "132.50"), (3, "150.00"))
        expected = {
            "2026-12-01": {"rate": "150.00", "rates": every, "stop_sell": True},
            "2026-12-02": {"rate": "150.00", "rates": priced((1, "99.00"), (2, "132.50"), (3, "150.00")),
                           "stop_sell": True},
            "2026-12-03": {"rate": "150.00", "rates": every, "stop_sell": True},
            "2026-12-04": {"rates": priced((1, "80.00"))}}
        held = await read_restrictions(s, "2026-12-01", "2026-12-04", "rate,stop_sell")
        # a per-room plan reads as before: its one price, no `rates`
        assert held == {plan: expected, s.names["rate_plan_id"]: {"2026-12-01": {"rate": "200.00"}}}
        # `rates` rides with `rate`: asked for neither, neither is answered
        assert await read_restrictions(s, "2026-12-03", "2026-12-04", "stop_sell") == {
            plan: {"2026-12-03": {"stop_sell": True}}}
        # The grid of the control route, and the Python read the service's operator grid takes.
        grid = await s.http.get("/_sandbox/grid", params={"filter[property_id]": s.names["property_id"],
                                                          "filter[date][gte]": "2026-12-01",
                                                          "filter[date][lte]": "2026-12-04"})
        assert grid.json()["data"]["restrictions"][plan] == expected
        assert s.state.read_restrictions(s.names["property_id"], date(2026, 12, 1), date(2026, 12, 4))[plan] \
            == expected
        assert s.state.stats.values == 4 and s.state.stats.cells == 3 + 1 + 1 + 1


async def test_the_primary_is_the_option_marked_so(mock_clock: trio.testing.MockClock) -> None:
    """Our client marks the largest occupancy primary; Channex lets any one be, and so does the sandbox."""
    async with served_sandbox() as s:
        plan = await make_per_person(s, [{"occupancy": 1, "is_primary": True}, {"occupancy": 2, "is_primary": False}])
        await write(s, "restrictions", {**PER_PERSON, "date": "2026-12-01",
                                        "rates": priced((1, "100.00"), (2, "120.00"))})
        assert await read_restrictions(s, "2026-12-01", "2026-12-01", "rate") == {plan: {"2026-12-01": {
            "rate": "100.00", "rates": priced((1, "100.00"), (2, "120.00"))}}}


PER_PERSON_REFUSALS: list[tuple[str, dict[str, Any], dict[str, list[str]]]] = [
    ("an occupancy that is no option", {"rates": priced((4, "10.00"))},
     {"rates": ["occupancy 4 is not an option of this rate plan"]}),
    ("occupancy 0", {"rates": priced((0, "10.00"))}, {"rates": ["occupancy 0 is not an option of this rate plan"]}),
    ("a rate of 0", {"rates": priced((1, "0"))}, {"rates": ["occupancy 1: rate must be greater than 0"]}),
    ("a negative rate in minor units", {"rates": [{"occupancy": 2, "rate": -100}]},
     {"rates": ["occupancy 2: rate must be greater than 0"]}),
    ("a rate that is no number", {"rates": priced((1, "abc"))}, {"rates": ["occupancy 1: rate is invalid"]}),
    ("a rate with more decimals than the currency", {"rates": priced((1, "10.001"))},
     {"rates": ["occupancy 1: rate is invalid"]}),
    ("a rate as a float", {"rates": [{"occupancy": 1, "rate": 10.5}]}, {"rates": ["occupancy 1: rate is invalid"]}),
    ("a null rate", {"rates": [{"occupancy": 1, "rate": None}]}, {"rates": ["occupancy 1: rate is invalid"]}),
    ("an occupancy as text", {"rates": [{"occupancy": "1", "rate": 100}]},
     {"rates": ["entry 0: occupancy is invalid"]}),
    ("an occupancy as a boolean", {"rates": [{"occupancy": True, "rate": 100}]},
     {"rates": ["entry 0: occupancy is invalid"]}),
    ("an occupancy given twice", {"rates": priced((1, "10.00"), (2, "12.00"), (1, "11.00"))},
     {"rates": ["occupancy 1 is given more than once"]}),
    ("rates not a list", {"rates": {"occupancy": 1, "rate": 100}},
     {"rates": ["must be a non-empty list of {occupancy, rate}"]}),
    ("rates empty", {"rates": []}, {"rates": ["must be a non-empty list of {occupancy, rate}"]}),
    ("an entry that is no object", {"rates": [*priced((1, "10.00")), [2, 1200]]},
     {"rates": ["entry 1 is not an object of occupancy and rate"]}),
    ("an entry without its rate", {"rates": [{"occupancy": 1}]},
     {"rates": ["entry 0 is not an object of occupancy and rate"]}),
    ("an entry with a field more", {"rates": [{"occupancy": 1, "rate": 100, "currency": "USD"}]},
     {"rates": ["entry 0 is not an object of occupancy and rate"]}),
    ("rates null", {"rates": None}, {"rates": ["Should be a non null value or not existed field"]}),
    ("one price for the plan", {"rate": 12000},
     {"rate": ["is not taken by a per-person rate plan: send rates, a rate per occupancy"]}),
    ("one price beside the occupancies'", {"rate": 12000, "rates": priced((1, "10.00"))},
     {"rate": ["is not taken by a per-person rate plan: send rates, a rate per occupancy"]}),
    ("one good entry, one bad", {"rates": priced((1, "10.00"), (2, "-1"))},
     {"rates": ["occupancy 2: rate must be greater than 0"]}),
]


@pytest.mark.parametrize(("sent", "warning"), [case[1:] for case in PER_PERSON_REFUSALS],
                         ids=[case[0] for case in PER_PERSON_REFUSALS])
async def test_a_per_person_value_refused_is_a_warning_and_the_rest_of_the_call_applies(
        mock_clock: trio.testing.MockClock, sent: dict[str, Any], warning: dict[str, list[str]]) -> None:
    async with served_sandbox() as s:
        plan = await make_per_person(s)
        bad = {**PER_PERSON, "date": "2026-12-01", **sent}
        good = {**PER_PERSON, "date": "2026-12-02", "rates": priced((3, "150.00"))}
        answer = await write(s, "restrictions", bad, good)
        assert answer["meta"]["warnings"] == [{**fill(bad, s.names), "warning": warning}]
        assert len(answer["data"]) == 1
        assert await read_restrictions(s, "2026-12-01", "2026-12-02", "rate") == {plan: {"2026-12-02": {
            "rate": "150.00", "rates": priced((3, "150.00"))}}}


async def test_a_per_room_plan_refuses_rates(mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as s:
        refused = {**PLAN, "date": "2026-12-01", "rates": priced((1, "10.00"))}
        answer = await write(s, "restrictions", refused, {**PLAN, "date": "2026-12-02", "rate": "10.00"})
        assert answer["meta"]["warnings"] == [{**fill(refused, s.names), "warning": {
            "rates": ["multi-occupancy rates are not enabled for this rate plan"]}}]
        assert await read_restrictions(s, "2026-12-01", "2026-12-02", "rate") == {s.names["rate_plan_id"]: {
            "2026-12-02": {"rate": "10.00"}}}


PLAN_REFUSALS: list[tuple[str, dict[str, Any], dict[str, list[str]]]] = [
    ("no options", {"sell_mode": "per_person"}, {"options": ["can't be blank"]}),
    ("options not a list", {"sell_mode": "per_person", "options": {"occupancy": 1, "is_primary": True}},
     {"options": ["must be a non-empty list of occupancy options"]}),
    ("no option", {"sell_mode": "per_person", "options": []},
     {"options": ["must be a non-empty list of occupancy options"]}),
    ("an option that is no object", {"sell_mode": "per_person", "options": [1]},
     {"options": ["option 0 is not an object"]}),
    ("occupancy 0", {"sell_mode": "per_person", "options": [{"occupancy": 0, "is_primary": True}]},
     {"options": ["option 0: occupancy must be a whole number from 1 to 18"]}),
    ("an occupancy as text", {"sell_mode": "per_person", "options": [{"occupancy": "2", "is_primary": True}]},
     {"options": ["option 0: occupancy must be a whole number from 1 to 18"]}),
    ("is_primary missing", {"sell_mode": "per_person", "options": [{"occupancy": 2}]},
     {"options": ["option 0: is_primary must be true or false"]}),
    ("a default rate below 0", {"sell_mode": "per_person", "options": [{"occupancy": 2, "is_primary": True,
                                                                         "rate": -1}]},
     {"options": ["option 0: rate must be a whole number >= 0"]}),
    ("an occupancy twice", {"sell_mode": "per_person", "options": [{"occupancy": 2, "is_primary": True},
                                                                    {"occupancy": 2, "is_primary": False}]},
     {"options": ["each occupancy may have one option only"]}),
    ("no primary", {"sell_mode": "per_person", "options": [{"occupancy": 1, "is_primary": False},
                                                            {"occupancy": 2, "is_primary": False}]},
     {"options": ["exactly one option must be primary"]}),
    ("a per-room plan's options checked alike", {"options": [{"occupancy": 19, "is_primary": True}]},
     {"options": ["option 0: occupancy must be a whole number from 1 to 18"]}),
    ("a sell mode Channex does not have", {"sell_mode": "PER_PERSON"}, {"sell_mode": ["is invalid"]}),
]


@pytest.mark.parametrize(("sent", "details"), [case[1:] for case in PLAN_REFUSALS],
                         ids=[case[0] for case in PLAN_REFUSALS])
async def test_a_rate_plan_with_options_it_cannot_sell_by_is_refused(
        mock_clock: trio.testing.MockClock, sent: dict[str, Any], details: dict[str, list[str]]) -> None:
    async with served_sandbox() as s:
        answer = await s.http.post("/api/v1/rate_plans", json={"rate_plan": {
            "property_id": s.names["property_id"], "room_type_id": s.names["room_type_id"], "title": "Refused",
            **sent}})
        assert answer.status_code == 422 and answer.json() == {"errors": {
            "code": "validation_error", "title": "Validation Error", "details": details}}
        assert len(s.state.properties[s.names["property_id"]].rate_plans) == 2  # the fixture's two alone


async def test_a_per_room_plan_may_name_its_one_option(mock_clock: trio.testing.MockClock) -> None:
    """The docs' "Per Room Manual" example sends the option of the room's largest occupancy:
    the plan still sells one price a night."""
    async with served_sandbox() as s:
        plan = await s.create("rate_plan", property_id=s.names["property_id"], room_type_id=s.names["room_type_id"],
                              title="Per room", sell_mode="per_room",
                              options=[{"occupancy": 3, "is_primary": True, "rate": 0}])
        s.names["per_room_plan"] = plan
        value = {"property_id": "{property_id}", "rate_plan_id": "{per_room_plan}", "date": "2026-12-01"}
        answer = await write(s, "restrictions", {**value, "rates": priced((3, "10.00"))}, {**value, "rate": 1000})
        assert [w["warning"] for w in answer["meta"]["warnings"]] == [
            {"rates": ["multi-occupancy rates are not enabled for this rate plan"]}]
        assert (await read_restrictions(s, "2026-12-01", "2026-12-01", "rate"))[plan] == {
            "2026-12-01": {"rate": "10.00"}}


async def test_the_state_makes_per_person_plans_and_checks_their_occupancies(
        mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as s:
        pid, room = s.names["property_id"], s.names["room_type_id"]
        plan = s.state.create_rate_plan(pid, room, "Per person", occupancies=[2, 1])
        s.names["per_person_rate_plan_id"] = plan
        await write(s, "restrictions", {**PER_PERSON, "date": "2026-12-01",
                                        "rates": priced((1, "90.00"), (2, "100.00"))})
        assert (await read_restrictions(s, "2026-12-01", "2026-12-01", "rate"))[plan] == {"2026-12-01": {
            "rate": "100.00", "rates": priced((1, "90.00"), (2, "100.00"))}}  # the largest is primary
        for wrong in ([], [0], [19], [1, 1], [True]):
            with pytest.raises(ValueError):
                s.state.create_rate_plan(pid, room, "Wrong", occupancies=wrong)
        with pytest.raises(KeyError):
            s.state.create_rate_plan(pid, "no-room", "Wrong", occupancies=[1])
        # None: a per-room plan, as before
        per_room = s.state.create_rate_plan(pid, room, "Per room")
        assert s.state.properties[pid].rate_plans[per_room].per_person is None


async def test_adopt_takes_the_sell_mode_it_is_told(mock_clock: trio.testing.MockClock) -> None:
    """A test twin's plans are adopted by whichever process pushes it: one adopted before as
    per-room (an older process) takes the options it is given now."""
    async with served_sandbox() as s:
        state, twin = s.state, "twin-property"
        s.names.update(twin=twin)
        value = {"property_id": "{twin}", "date": "2026-12-01"}
        state.adopt(twin, "EUR", "UTC", ["room"], ["flat", "per-person"])
        assert (await write(s, "restrictions", {**value, "rate_plan_id": "per-person", "rate": 9000}))["data"]
        state.adopt(twin, "EUR", "UTC", ["room"], ["flat", "per-person"], occupancies={"per-person": [1, 2]})
        answer = await write(s, "restrictions",
                             {**value, "rate_plan_id": "per-person", "rates": priced((1, "80.00"), (2, "95.00"))},
                             {**value, "rate_plan_id": "per-person", "rate": 9000},
                             {**value, "rate_plan_id": "flat", "rate": 7000})
        assert [w["warning"] for w in answer["meta"]["warnings"]] == [
            {"rate": ["is not taken by a per-person rate plan: send rates, a rate per occupancy"]}]
        day = date(2026, 12, 1)
        # the per-room price it held before is not shown as the per-person plan's
        assert state.read_restrictions(twin, day, day) == {
            "per-person": {"2026-12-01": {"rate": "95.00", "rates": priced((1, "80.00"), (2, "95.00"))}},
            "flat": {"2026-12-01": {"rate": "70.00"}}}
        state.adopt(twin, "EUR", "UTC", ["room"], ["flat", "per-person"])  # without occupancies: as it was
        assert state.properties[twin].rate_plans["per-person"].per_person is not None
        with pytest.raises(ValueError):
            state.adopt(twin, "EUR", "UTC", ["room"], ["flat", "other"], occupancies={"other": [0]})
        assert "other" not in state.properties[twin].rate_plans  # nothing taken
        state.adopt(twin, "EUR", "UTC", ["room"], ["flat", "per-person"], occupancies={})  # told per-room now
        assert state.read_restrictions(twin, day, day)["per-person"] == {"2026-12-01": {"rate": "90.00"}}
