"""The sandbox channel manager over real HTTP, through our client, on the mock clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from connectapi.actors.booking_intake import ASK_TIMEOUT, LEASE, LEASE_NAME, ROUND_BATCH, BookingIntake
from connectapi.actors.channel_manager import ChannelManagerActor
from connectapi.channel.client import FEED_MAX_PAGES
from connectapi.actors.messages.channel_manager import ChannelMessage
from connectapi.actors.messages.property_writer import WriterMessage
from connectapi.actors.property_writer import PropertyWriter
from connectapi.actors.wakeups import Wakeups
from connectapi.channel.client import (
    Rejected,
    Throttled,
    Unavailable,
    open_channel_manager,
    retry_after_seconds,
)
from connectapi.channel.sandbox.bookings import Stay
from connectapi.domain.admin_models import PropertyIn
from connectapi.engine import FakeClock, Mailbox, Registry, open_supervisor
from connectapi.storage import leases, properties
from connectapi.storage.database import Database
from connectapi.storage.records import Property
from tests.api.harness import eventually

from .sandbox_served import KEY, Sandbox


async def test_grid_applies_values_in_order_with_weekday_masks(mock_clock: trio.testing.MockClock,
                                                               sandbox: Sandbox) -> None:
    s = sandbox
    pushed = await s.client.push_availability([
        {"property_id": s.property_id, "room_type_id": s.room_type_id, "date_from": "2026-12-01",
         "date_to": "2026-12-07", "availability": 5},
        {"property_id": s.property_id, "room_type_id": s.room_type_id, "date_from": "2026-12-03",
         "date_to": "2026-12-03", "availability": 0},
    ])
    assert pushed.refusals == () and len(pushed.task_ids) == 1
    await s.client.push_restrictions([
        {"property_id": s.property_id, "rate_plan_id": s.rate_plan_id, "date_from": "2026-12-01",
         "date_to": "2026-12-07", "rate": "100.00"},
        {"property_id": s.property_id, "rate_plan_id": s.rate_plan_id, "date_from": "2026-12-01",
         "date_to": "2026-12-07", "days": ["fr", "sa"], "rate": 15000, "stop_sell": True},
    ])
    availability = await s.client.read_availability(s.property_id, date(2026, 12, 1), date(2026, 12, 4))
    assert availability == {s.room_type_id: {"2026-12-01": 5, "2026-12-02": 5, "2026-12-03": 0, "2026-12-04": 5}}
    restrictions = await s.client.read_restrictions(s.property_id, date(2026, 12, 4), date(2026, 12, 6))
    assert restrictions == {s.rate_plan_id: {
        "2026-12-04": {"rate": "150.00", "stop_sell": True},  # a Friday
        "2026-12-05": {"rate": "150.00", "stop_sell": True},
        "2026-12-06": {"rate": "100.00"},
    }}
    stats = s.state.stats.view()
    assert (stats["availabilityCalls"], stats["restrictionCalls"], stats["readCalls"]) == (1, 1, 2)
    assert (stats["values"], stats["cells"]) == (4, 7 + 1 + 7 + 2)


async def test_invalid_values_are_dropped_with_warnings(mock_clock: trio.testing.MockClock, sandbox: Sandbox) -> None:
    s = sandbox
    pushed = await s.client.push_restrictions([
        {"property_id": s.property_id, "rate_plan_id": "nope", "date_from": "2026-12-01", "date_to": "2026-12-01",
         "rate": "1.00"},
        {"property_id": s.property_id, "rate_plan_id": s.rate_plan_id, "date_from": "2026-12-01",
         "date_to": "2026-12-01"},
        {"property_id": s.property_id, "rate_plan_id": s.rate_plan_id, "date_from": "2026-12-01",
         "date_to": "2026-12-01", "max_stay": 3},
    ])
    assert [r.fields for r in pushed.refusals] == [
        {"rate_plan_id": ["not found"]}, {"restrictions": ["at least one restriction should be present"]}]
    assert pushed.refusals[0].value["rate_plan_id"] == "nope" and len(pushed.task_ids) == 1
    assert s.state.properties[s.property_id].restrictions[s.rate_plan_id] == {date(2026, 12, 1): {"max_stay": 3}}


async def test_write_budget_per_property_and_read_budget_per_account(mock_clock: trio.testing.MockClock,
                                                                     sandbox: Sandbox) -> None:
    s = sandbox
    other = await s.client.create_property("Other", "EUR")
    other_room = await s.client.create_room_type(other, "Twin", 2)
    value = {"property_id": s.property_id, "room_type_id": s.room_type_id, "date_from": "2026-12-01",
             "date_to": "2026-12-01", "availability": 1}
    for _ in range(10):
        await s.client.push_availability([value])
    mock_clock.jump(20)
    with pytest.raises(Throttled) as info:
        await s.client.push_availability([value])
    assert info.value.retry_after is None  # Channex's 429 names no wait
    # the other property's budget is its own, and restrictions have their own
    await s.client.push_availability([{**value, "property_id": other, "room_type_id": other_room}])
    await s.client.push_restrictions([{"property_id": s.property_id, "rate_plan_id": s.rate_plan_id,
                                       "date_from": "2026-12-01", "date_to": "2026-12-01", "rate": "90.00"}])
    mock_clock.jump(40)
    await s.client.push_availability([value])
    for _ in range(10):
        await s.client.read_availability(other, date(2026, 12, 1), date(2026, 12, 1))
    with pytest.raises(Throttled):
        await s.client.read_restrictions(s.property_id, date(2026, 12, 1), date(2026, 12, 1))
    assert s.state.stats.throttled == 2


async def test_the_grid_control_route_answers_outside_the_read_budget(mock_clock: trio.testing.MockClock,
                                                                       sandbox: Sandbox) -> None:
    s = sandbox
    await s.client.push_availability([{"property_id": s.property_id, "room_type_id": s.room_type_id,
                                       "date_from": "2026-12-01", "date_to": "2026-12-02", "availability": 3}])
    for _ in range(10):
        await s.client.read_availability(s.property_id, date(2026, 12, 1), date(2026, 12, 1))
    filters = {"filter[property_id]": s.property_id, "filter[date][gte]": "2026-12-01",
               "filter[date][lte]": "2026-12-02"}
    async with httpx.AsyncClient(base_url=s.url, headers={"user-api-key": KEY}) as http:
        assert (await http.get("/api/v1/availability", params=filters)).status_code == 429  # reads spent
        held = await http.get("/_sandbox/grid", params=filters)
        assert held.json()["data"] == {"availability": {s.room_type_id: {"2026-12-01": 3, "2026-12-02": 3}},
                                       "restrictions": {}}
        assert (await http.get("/_sandbox/grid", params=filters, headers={"user-api-key": "wrong"})).status_code == 401
        assert (await http.get("/_sandbox/grid")).status_code == 422


async def test_faults(mock_clock: trio.testing.MockClock, sandbox: Sandbox) -> None:
    s = sandbox
    value = {"property_id": s.property_id, "room_type_id": s.room_type_id, "date_from": "2026-12-01",
             "date_to": "2026-12-01", "availability": 1}
    s.state.faults.mode, s.state.faults.remaining, s.state.faults.retry_after = "429", 1, 7
    with pytest.raises(Throttled) as throttled:
        await s.client.push_availability([value])
    assert throttled.value.retry_after == 7
    s.state.faults.mode, s.state.faults.remaining, s.state.faults.retry_after = "429", 1, None
    with pytest.raises(Throttled) as bare:
        await s.client.push_availability([value])
    assert bare.value.retry_after is None
    s.state.faults.mode, s.state.faults.remaining = "500", 1
    with pytest.raises(Unavailable) as failed:
        await s.client.push_availability([value])
    assert failed.value.status == 500
    s.state.faults.mode, s.state.faults.remaining = "timeout", 1

    async def jump_when_hanging() -> None:
        while s.state.faults.remaining:
            await trio.sleep(0)
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(11)  # past the client's 10 s timeout, short of the hang

    async with trio.open_nursery() as nursery:
        nursery.start_soon(jump_when_hanging)
        with pytest.raises(Unavailable) as hung:
            await s.client.push_availability([value])
    assert hung.value.status is None
    assert s.state.stats.failed == 2
    assert (await s.client.push_availability([value])).refusals == ()  # the faults are used up


async def test_wrong_key_is_rejected_and_never_shown(mock_clock: trio.testing.MockClock, sandbox: Sandbox) -> None:
    async with open_channel_manager(sandbox.url, "wrong-key") as client:
        with pytest.raises(Rejected) as info:
            await client.create_property("X", "EUR")
    assert info.value.status == 401
    assert KEY not in repr(sandbox.client) and KEY not in str(info.value)


def test_retry_after_forms() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    ten_o_clock = datetime(2026, 11, 22, 10, tzinfo=UTC).timestamp()
    assert retry_after_seconds("Sun, 22 Nov 2026 10:00:30 GMT", now=ten_o_clock) == 30.0
    assert retry_after_seconds("Sun, 22 Nov 2026 09:59:00 GMT", now=ten_o_clock) == 0.0


async def test_booking_revisions_feed_read_and_ack(sandbox: Sandbox) -> None:
    at = datetime(2026, 11, 22, 10, tzinfo=UTC)
    stay = Stay(sandbox.property_id, sandbox.room_type_id, sandbox.rate_plan_id, date(2026, 12, 1),
                date(2026, 12, 3), 2, 0, {"name": "Ana", "surname": "Silva", "mail": "ana@example.com",
                                          "phone": "+351912345678", "country": "PT"},
                Decimal("240.00"), "EUR", "BookingCom")
    new = sandbox.state.bookings.new(stay, at)
    code = new["ota_reservation_code"]
    sandbox.state.bookings.modify(code, {"departure": date(2026, 12, 4), "amount": Decimal("360.00")}, at)
    sandbox.state.bookings.cancel(code, at)
    async with httpx.AsyncClient(base_url=sandbox.url, headers={"user-api-key": KEY}) as http:
        feed = (await http.get("/api/v1/booking_revisions/feed",
                               params={"filter[property_id]": sandbox.property_id})).json()["data"]
        revisions = [r["attributes"] for r in feed]
        assert [r["status"] for r in revisions] == ["new", "modified", "cancelled"]
        assert len({r["system_id"] for r in revisions}) == 3 and {r["booking_id"] for r in revisions} == {
            new["booking_id"]}
        modified = revisions[1]
        assert (modified["departure_date"], modified["amount"]) == ("2026-12-04", "360.00")
        assert modified["rooms"][0]["days"] == {"2026-12-01": "120.00", "2026-12-02": "120.00",
                                                "2026-12-03": "120.00"}
        one = await http.get(f"/api/v1/booking_revisions/{new['id']}")
        assert one.json()["data"]["attributes"]["status"] == "new"
        assert (await http.post(f"/api/v1/booking_revisions/{new['id']}/ack")).status_code == 200
        left = (await http.get("/api/v1/booking_revisions/feed")).json()["data"]
        assert [r["attributes"]["status"] for r in left] == ["modified", "cancelled"]
        assert (await http.post("/api/v1/booking_revisions/nope/ack")).status_code == 404
        other = (await http.get("/api/v1/booking_revisions/feed", params={"filter[property_id]": "other"})).json()
        assert other["data"] == []
        assert (await http.get("/api/v1/booking_revisions/feed", headers={"user-api-key": "wrong"})).status_code == 401
    # the same through our client
    through_client = (await sandbox.client.booking_feed(sandbox.property_id)).revisions
    assert [r["status"] for r in through_client] == ["modified", "cancelled"]
    assert (await sandbox.client.booking_revision(new["id"]))["system_id"] == new["system_id"]
    await sandbox.client.ack_booking_revision(through_client[0]["id"])
    assert [r["status"] for r in (await sandbox.client.booking_feed()).revisions] == ["cancelled"]
    with pytest.raises(Rejected):
        await sandbox.client.ack_booking_revision("nope")


def before_each_call(sandbox: Sandbox, hook: Callable[[int], None]) -> None:
    """Run `hook(n)` before the client's n-th call to the channel manager (from 1)."""
    real_call = sandbox.client._call
    calls = 0

    async def hooked(method: str, path: str, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        hook(calls)
        return await real_call(method, path, **kwargs)

    sandbox.client._call = hooked  # type: ignore[method-assign]


@asynccontextmanager
async def running_intake(db: Database, sandbox: Sandbox, at: datetime, feed_pages: int = FEED_MAX_PAGES,
                         batch: int = ROUND_BATCH) -> AsyncIterator[None]:
    """The intake as the service runs it: an actor, beside the channel-manager actor and the
    properties' writers."""
    clock = FakeClock(at)
    async with open_supervisor(shutdown_grace=0) as supervisor:
        channel: Mailbox[ChannelMessage] = await supervisor.spawn(
            "channel-manager", lambda: ChannelManagerActor(sandbox.client, db, clock))
        writers: Registry[int, WriterMessage] = Registry(
            supervisor, lambda pid: PropertyWriter(pid, db, Wakeups()), name="writer", idle_after=300, ask_timeout=10)
        await supervisor.spawn("booking-intake", lambda: BookingIntake(
            db, clock, channel, writers, sweep_seconds=60, feed_pages=feed_pages, batch=batch), mailbox_size=1)
        yield


def a_stay(sandbox: Sandbox, property_id: str | None = None) -> Stay:
    return Stay(property_id or sandbox.property_id, sandbox.room_type_id, sandbox.rate_plan_id, date(2026, 12, 1),
                date(2026, 12, 2), 1, 0, {"name": "Bo", "surname": None, "mail": None, "phone": None,
                                          "country": None}, Decimal("90.00"), "EUR", "Expedia")


async def test_the_feed_is_paged_and_our_client_reads_it_to_the_end(sandbox: Sandbox) -> None:
    at = datetime(2026, 11, 22, 10, tzinfo=UTC)
    made = [sandbox.state.bookings.new(a_stay(sandbox), at)["id"] for _ in range(120)]
    async with httpx.AsyncClient(base_url=sandbox.url, headers={"user-api-key": KEY}) as http:
        first = (await http.get("/api/v1/booking_revisions/feed")).json()
        assert [r["id"] for r in first["data"]] == made[:10]  # ten unless asked, as Channex does
        assert first["meta"] == {"page": 1, "limit": 10, "total": 120}
        last = (await http.get("/api/v1/booking_revisions/feed",
                               params={"pagination[page]": "3", "pagination[limit]": "50"})).json()
        assert [r["id"] for r in last["data"]] == made[100:]
        big = (await http.get("/api/v1/booking_revisions/feed", params={"pagination[limit]": "500"})).json()
        assert big["meta"]["limit"] == 100 and len(big["data"]) == 100
        for bad in ({"pagination[page]": "0"}, {"pagination[limit]": "ten"}):
            assert (await http.get("/api/v1/booking_revisions/feed", params=bad)).status_code == 422

    whole = await sandbox.client.booking_feed()
    assert whole.complete and [r["id"] for r in whole.revisions] == made
    cut = await sandbox.client.booking_feed(max_pages=1)
    assert not cut.complete and [r["id"] for r in cut.revisions] == made[:100]
    # Another property's revisions are left alone by the filter, on every page.
    other = sandbox.state.bookings.new(a_stay(sandbox, "someone-elses-property"), at)
    assert [r["id"] for r in (await sandbox.client.booking_feed(sandbox.property_id)).revisions] == made
    assert [r["id"] for r in (await sandbox.client.booking_feed()).revisions] == [*made, other["id"]]


async def test_a_revision_seen_on_two_pages_is_read_once(sandbox: Sandbox) -> None:
    """A channel manager that hands the feed out newest first, whatever we ask: one revision
    arriving between two pages pushes the rest one place on, and the next page repeats one."""
    at = datetime(2026, 11, 22, 10, tzinfo=UTC)
    sandbox.state.bookings.newest_first = True
    made = [sandbox.state.bookings.new(a_stay(sandbox), at)["id"] for _ in range(150)]

    def one_arrives_before_the_second_page(call: int) -> None:
        if call == 2:
            sandbox.state.bookings.new(a_stay(sandbox), at)

    before_each_call(sandbox, one_arrives_before_the_second_page)
    feed = await sandbox.client.booking_feed()
    ids = [r["id"] for r in feed.revisions]
    assert feed.complete and ids == made[::-1]  # each once; the newcomer is the next round's


async def mapped_property(db: Database, sandbox: Sandbox, at: datetime) -> Property:
    """Casa Azul, a channel-manager property mapped to the sandbox's (no rooms or plans mapped)."""
    prop, _ = await properties.create_property(db, PropertyIn.model_validate({
        "name": "Casa Azul", "timezone": "Europe/Lisbon", "currency": "EUR",
        "products": {"channelManager": True, "pms": False}}), at.date())
    await properties.set_channel_mapping(db, prop.id, sandbox.property_id, {}, {})
    return prop


@pytest.mark.parametrize(("feed_pages", "batch"), [(1, 500), (20, 40)], ids=["feed-pages", "apply-batch"])
async def test_more_than_a_round_takes_is_taken_in_rounds_one_after_another(
        mock_clock: trio.testing.MockClock, db: Database, sandbox: Sandbox, feed_pages: int, batch: int) -> None:
    """More than a round reads (a page of 100 here) or applies and acknowledges (40 here)."""
    at = datetime(2026, 11, 22, 10, tzinfo=UTC)
    prop = await mapped_property(db, sandbox, at)
    made = [sandbox.state.bookings.new(a_stay(sandbox), at)["id"] for _ in range(150)]
    async with running_intake(db, sandbox, at, feed_pages=feed_pages, batch=batch):
        # The mock clock stands still, so the timer's next round never comes: only the one a
        # round asks for when it left something it could have taken.
        await eventually(lambda: sandbox.state.bookings.feed(None) == [], "the whole feed taken")
    kept = await db.fetch("SELECT id, state FROM ota_revisions WHERE property_id = $1", prop.id)
    assert sorted(r["id"] for r in kept) == sorted(made) and {r["state"] for r in kept} == {"unmapped"}


async def test_pages_holding_nothing_to_take_wait_for_the_timer(
        mock_clock: trio.testing.MockClock, db: Database, sandbox: Sandbox, caplog: pytest.LogCaptureFixture) -> None:
    at = datetime(2026, 11, 22, 10, tzinfo=UTC)
    for _ in range(150):
        sandbox.state.bookings.new(a_stay(sandbox, "a-property-we-do-not-map"), at)
    reads = 0

    def counted(call: int) -> None:
        nonlocal reads
        reads = call

    before_each_call(sandbox, counted)
    async with running_intake(db, sandbox, at, feed_pages=1):
        await eventually(lambda: "hold nothing it can take" in caplog.text, "the round to say so")
        await trio.testing.wait_all_tasks_blocked()
        assert reads == 1  # no round straight after: the channel manager is not read in a loop

        async def jumped() -> bool:
            # The round gives the intake's lease back after saying so and sets its timer once
            # the record has answered (real time), so the clock moves in steps, and only while
            # the record shows the lease free: never under a give-back still on its way, and,
            # a step being half an ask's timeout, never far enough to time out the read the
            # timer's round asks the channel manager for (its lease is taken before it asks).
            if reads < 2 and await db.fetchval("SELECT holder IS NULL FROM leases WHERE kind = 'round' AND key = $1",
                                               LEASE_NAME):
                mock_clock.jump(ASK_TIMEOUT / 2)
            return reads >= 2

        await eventually(jumped, "the timer's round")


async def test_a_dead_processes_round_runs_out_and_another_takes_the_feed_over(
        mock_clock: trio.testing.MockClock, db: Database, sandbox: Sandbox) -> None:
    at = datetime(2026, 11, 22, 10, tzinfo=UTC)
    prop = await mapped_property(db, sandbox, at)
    made = [sandbox.state.bookings.new(a_stay(sandbox), at)["id"] for _ in range(3)]
    # Another process took the intake's lease and died in its round.
    assert (await leases.take(db, leases.LeaseKind.ROUND, LEASE_NAME, "a-dead-process", at.timestamp(),
                              LEASE.total_seconds())).held_by("a-dead-process")
    async with running_intake(db, sandbox, at):
        # This one's first round finds the lease held, asks its holder for a round more, and
        # leaves the feed alone.
        await eventually(lambda: db.fetchval("SELECT again FROM leases WHERE kind = 'round'"), "a round more asked for")
        await trio.testing.wait_all_tasks_blocked()
        assert sandbox.state.stats.feed_reads == 0 and len(sandbox.state.bookings.feed(None)) == 3
        mock_clock.jump(LEASE.total_seconds() - 1)
        await trio.testing.wait_all_tasks_blocked()
        assert sandbox.state.stats.feed_reads == 0  # still held
        mock_clock.jump(2)  # the dead holder's lease has run out: this process takes the feed over
        await eventually(lambda: sandbox.state.bookings.feed(None) == [], "the feed taken over")
    kept = await db.fetch("SELECT id FROM ota_revisions WHERE property_id = $1", prop.id)
    assert sorted(r["id"] for r in kept) == sorted(made)
    assert await db.fetchval("SELECT holder FROM leases WHERE kind = 'round'") is None  # given back
