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
        await webhooks.record_event_now(db, property_id, ping(facts, NOW, f"event {n}"), None, NOW)
    return property_id, endpoints


async def test_an_endpoint_leased_to_one_process_is_not_sent_by_another(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=4) as db:
        _, (endpoint,) = await a_property_with_endpoints(db, 1, 2)
        first = await webhooks.due(db, NOW, "process-a", SECONDS, lease_now=(NOW).timestamp())
        assert [d.endpoint.id for d in first] == [endpoint]
        assert await webhooks.due(db, NOW, "process-b", SECONDS, lease_now=(NOW).timestamp()) == []  # held by a
        assert await webhooks.next_due_at(db) == NOW + LEASE  # b looks again when a's lease runs out
        await webhooks.delivered(db, first[0].delivery_id, endpoint, 204, 5, NOW, "process-a")
        second = await webhooks.due(db, NOW, "process-b", SECONDS, lease_now=(NOW).timestamp())  # given back: the next, in order
        assert [d.event_id for d in second] != [first[0].event_id] and len(second) == 1
        # b dies mid-send: its lease runs out, and a sends the same delivery again
        assert await webhooks.due(db, NOW + timedelta(seconds=59), "process-a", SECONDS, lease_now=(NOW + timedelta(seconds=59)).timestamp()) == []
        again = await webhooks.due(db, NOW + LEASE, "process-a", SECONDS, lease_now=(NOW + LEASE).timestamp())
        assert [d.delivery_id for d in again] == [second[0].delivery_id]


async def test_processes_racing_for_due_endpoints_take_each_one_once(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=4, max_size=8) as db:
        _, endpoints = await a_property_with_endpoints(db, 30, 1)
        taken: dict[str, list[int]] = {}

        async def take(holder: str) -> None:
            taken[holder] = [d.endpoint.id for d in await webhooks.due(db, NOW, holder, SECONDS, lease_now=(NOW).timestamp())]

        async with trio.open_nursery() as nursery:
            for holder in ("a", "b", "c"):
                nursery.start_soon(take, holder)
        every = [e for found in taken.values() for e in found]
        assert sorted(every) == sorted(endpoints)  # each endpoint once, by one of them
