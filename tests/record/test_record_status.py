"""What `connectapi status` reads from a real record: dirty cells and their oldest batch,
the push state, migrations, and each growing table's oldest row."""

from __future__ import annotations

from datetime import timedelta

from connectapi.domain.ari_write import Resource
from connectapi.domain.status_report import sync_state
from connectapi.storage import pushes
from connectapi.storage.database import Database
from connectapi.storage.migrations import bundled_migrations
from connectapi.storage.record_status import GROWING_TABLES, read_record_facts
from connectapi.storage.retention import RETAINED

from .test_pushes_storage import NOW, a_property, write


async def test_facts_of_a_record(db: Database) -> None:
    quiet, _, _ = await a_property(db)
    busy, room, plan = await a_property(db)
    await write(db, busy, Resource.AVAILABILITY, {"roomTypeId": room, "dateFrom": "2026-11-23",
                                                  "dateTo": "2026-11-24", "available": 2})
    await write(db, busy, Resource.RATES, {"ratePlanId": plan, "dateFrom": "2026-11-23", "dateTo": "2026-11-23",
                                           "rate": 80, "currency": "EUR"})
    await pushes.record_outcome(db, busy, NOW, "failed", "HTTP 500", NOW + timedelta(seconds=30), 1)

    facts = await read_record_facts(db)
    assert facts.migrations.missing == [] and facts.migrations.unknown == []
    assert facts.migrations.applied == tuple(m.version for m in bundled_migrations())
    by_id = {p.property_id: p for p in facts.properties}
    assert by_id[quiet].dirty_cells == 0 and by_id[quiet].oldest_dirty_at is None
    assert by_id[busy].dirty_cells == 3
    assert by_id[busy].oldest_dirty_at == NOW  # the batches' own time
    assert (by_id[busy].last_outcome, by_id[busy].failures, by_id[busy].last_error) == ("failed", 1, "HTTP 500")
    # On the batches' clock: the property backs off for 30 s, then fails after three in a row.
    assert sync_state(by_id[busy], NOW) == "backing_off"
    assert sync_state(by_id[quiet], NOW) == "in_sync"
    await pushes.record_outcome(db, busy, NOW, "failed", "HTTP 500", NOW + timedelta(seconds=30), 3)
    again = {p.property_id: p for p in (await read_record_facts(db)).properties}
    assert sync_state(again[busy], NOW) == "failing"

    tables = {t.name: t for t in facts.tables}
    for name, _ in GROWING_TABLES:
        assert name in tables, f"{name} is not a table of the record"
        assert tables[name].grows
    assert {r.table for r in RETAINED} <= {name for name, _ in GROWING_TABLES}, "every pruned table is shown"
    assert tables["write_batches"].oldest_at == NOW
    assert tables["webhook_deliveries"].oldest_at is None  # empty
    assert tables["availability_cells"].bytes > 0 and not tables["availability_cells"].grows
    assert facts.deliveries.pending == 0 and facts.outbox.unsent == 0 and facts.endpoints == ()
