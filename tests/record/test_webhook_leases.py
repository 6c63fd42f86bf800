"""An endpoint's deliveries go from one process at a time: the sending lease in the record."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import trio

from connectapi.domain.webhook_events import PropertyFacts, ping
from connectapi.storage import webhooks
from connectapi.storage.database import Database, open_database

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)
SECONDS = LEASE.total_seconds()


async def a_property_with_endpoints(db: Database, count: int, events: int) -> tuple[int, list[int]]:
    property_id = await db.fetchval("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                    "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")
    endpoints = [(await webhooks.create_endpoint(db, property_id, f"https://hooks{n}.example/in", None,
                                                 "whsec_" + "a" * 32, NOW)).id for n in range(count)]
    facts = PropertyFacts(property_id, "Casa Azul", "EUR", "Europe/Lisbon")
    for n in range(events):
        await webhooks.record_event_now(db, property_id, ping(facts, NOW, f"event {n}"), None, NOW,
                                        NOW.timestamp())
    return property_id, endpoints


async def test_an_endpoint_leased_to_one_process_is_not_sent_by_another(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=4) as db:
        _, (endpoint,) = await a_property_with_endpoints(db, 1, 2)
        first = await webhooks.due(db, "process-a", SECONDS, shared=(NOW).timestamp())
        assert [d.endpoint.id for d in first] == [endpoint]
        assert await webhooks.due(db, "process-b", SECONDS, shared=(NOW).timestamp()) == []  # held by a
        assert await webhooks.next_due_in(db, shared=NOW.timestamp()) == SECONDS  # b looks again when a's lease runs out
        await webhooks.delivered(db, first[0].delivery_id, endpoint, 204, 5, NOW, "process-a")
        second = await webhooks.due(db, "process-b", SECONDS, shared=(NOW).timestamp())  # given back: the next, in order
        assert [d.event_id for d in second] != [first[0].event_id] and len(second) == 1
        # b dies mid-send: its lease runs out, and a sends the same delivery again
        assert await webhooks.due(db, "process-a", SECONDS, shared=(NOW + timedelta(seconds=59)).timestamp()) == []
        again = await webhooks.due(db, "process-a", SECONDS, shared=(NOW + LEASE).timestamp())
        assert [d.delivery_id for d in again] == [second[0].delivery_id]


async def test_processes_racing_for_due_endpoints_take_each_one_once(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=4, max_size=8) as db:
        _, endpoints = await a_property_with_endpoints(db, 30, 1)
        taken: dict[str, list[int]] = {}

        async def take(holder: str) -> None:
            taken[holder] = [d.endpoint.id for d in await webhooks.due(db, holder, SECONDS, shared=(NOW).timestamp())]

        async with trio.open_nursery() as nursery:
            for holder in ("a", "b", "c"):
                nursery.start_soon(take, holder)
        every = [e for found in taken.values() for e in found]
        assert sorted(every) == sorted(endpoints)  # each endpoint once, by one of them


async def test_a_delivery_falls_due_by_the_databases_clock_whatever_the_recording_hosts(fresh_dsn: str) -> None:
    """A host ten minutes ahead records an event (its intake, before its clock followed the
    database's): the delivery is due at once for every sender, not ten minutes later with its
    endpoint's later ones behind it; a failed attempt's retry is timed on the same clock."""
    ahead = datetime.now(UTC) + timedelta(minutes=10)
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        property_id = await db.fetchval("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                        "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")
        endpoint = (await webhooks.create_endpoint(db, property_id, "https://hooks.example/in", None,
                                                   "whsec_" + "a" * 32, ahead)).id
        facts = PropertyFacts(property_id, "Casa Azul", "EUR", "Europe/Lisbon")
        await webhooks.record_event_now(db, property_id, ping(facts, ahead, "from a host ahead"), None, ahead, None)
        due_in = await webhooks.next_due_in(db, shared=None)
        assert due_in is not None and due_in <= 0
        [taken] = await webhooks.due(db, "a-sender-on-time", SECONDS, shared=None)
        assert taken.endpoint.id == endpoint
        await webhooks.failed(db, taken.delivery_id, endpoint, 503, 5, "HTTP 503", 5.0, ahead, "a-sender-on-time",
                              shared=None)
        due_in = await webhooks.next_due_in(db, shared=None)
        assert due_in is not None and 0 < due_in <= 5.0  # five seconds on the database's clock, not 605
