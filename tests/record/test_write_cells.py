"""One ARI write in one statement (storage/sql/connectapi_write_cells.sql, decision 0132):
the catalog's version, the cells budget, the key, restrictions merged into the record; and
writes queued together in one statement, each as if alone (decision 0148)."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
import trio

from connectapi.storage import ari
from connectapi.storage.database import Database, StorageError

from ..api.harness import held_elsewhere
from .test_twins import a_property

NOW = datetime(2026, 11, 22, 10, tzinfo=UTC)
NIGHT = date(2026, 11, 23)
BUDGET = ari.CellsBudget(None, "cells:write-cells-test", 100, 60.0)


def key(name: str, body: bytes = b"body") -> ari.KeyToClaim:
    return ari.KeyToClaim("PUT /restrictions", name, body, NOW - timedelta(days=7), NOW - timedelta(minutes=2))


async def write(db: Database, pid: int, values: dict[tuple[int, date], Any], *, resource: str = "restrictions",
                catalog: int | None = None, claim: ari.KeyToClaim | None = None,
                budget: ari.CellsBudget = BUDGET) -> ari.CellsWritten:
    return await ari.write_cells(db, await a_write(db, pid, values, resource=resource, catalog=catalog,
                                                   claim=claim, budget=budget))


async def a_write(db: Database, pid: int, values: dict[tuple[int, date], Any], *, resource: str = "restrictions",
                  catalog: int | None = None, claim: ari.KeyToClaim | None = None,
                  budget: ari.CellsBudget = BUDGET) -> ari.CellsWrite:
    version = (await ari.write_catalog(db, pid)).version if catalog is None else catalog
    outcome = {"outcome": "write-accepted", "result": {"acceptedCells": None, "noopCells": None}}
    return ari.CellsWrite(pid, version, resource, uuid.uuid4(), None, NOW, len(values), values, [], None, outcome,
                          budget, claim)


async def restriction(db: Database, plan: int) -> dict[str, Any]:
    rows = await ari.read_restrictions(db, (await db.fetchval("SELECT property_id FROM rate_plans WHERE id = $1",
                                                              plan)), NIGHT, NIGHT)
    return dict(rows[0].fields) if rows else {}


async def test_restrictions_merge_field_by_field_into_the_records(db: Database) -> None:
    pid, _, plan = await a_property(db)
    cell = (plan, NIGHT)
    # Nothing held, nothing said: no cell is made for it.
    assert (await write(db, pid, {cell: {"stopSell": None}})).noop == 1
    assert await restriction(db, plan) == {}
    done = await write(db, pid, {cell: {"stopSell": True, "minStayArrival": 2}})
    assert (done.answer, done.accepted, done.noop) == ("written", 1, 0)
    # A field not sent stays; one sent as null is cleared; the same values again are a no-op.
    assert (await write(db, pid, {cell: {"maxStay": 5, "minStayArrival": None}})).accepted == 1
    assert await restriction(db, plan) == {"stopSell": True, "closedToArrival": None, "closedToDeparture": None,
                                           "minStayArrival": None, "minStayThrough": None, "maxStay": 5}
    assert (await write(db, pid, {cell: {"stopSell": True, "maxStay": 5}})).noop == 1


async def test_a_catalog_that_moved_writes_nothing_and_says_its_version(db: Database) -> None:
    pid, room, plan = await a_property(db)
    before = (await ari.write_catalog(db, pid)).version
    await db.execute("UPDATE rate_plans SET max_rate = 100 WHERE id = $1", plan)
    after = await ari.write_catalog(db, pid)
    assert after.version > before and after.policies[plan] == (None, 100)
    stale = await write(db, pid, {(plan, NIGHT): {0: 90}}, resource="rates", catalog=before,
                        claim=key("stale-catalog-1"))
    assert (stale.answer, stale.catalog) == ("stale", after.version)
    # Nothing happened: no cell, no batch, no key, no budget spent.
    assert await db.fetchval("SELECT count(*) FROM rate_cells WHERE property_id = $1", pid) == 0
    assert await db.fetchval("SELECT count(*) FROM write_batches WHERE property_id = $1", pid) == 0
    assert await db.fetchval("SELECT count(*) FROM idempotency_keys") == 0
    assert await db.fetchval("SELECT count(*) FROM budget_windows WHERE subject = $1", BUDGET.subject) == 0
    # A new room type, and a change of currency, move it too.
    await db.execute("UPDATE properties SET currency = 'USD' WHERE id = $1", pid)
    assert (await ari.write_catalog(db, pid)).version > after.version
    assert (await write(db, pid, {(room, NIGHT): 2}, resource="availability")).answer == "written"


async def test_cells_over_the_budget_write_nothing_and_keep_no_key(db: Database) -> None:
    pid, _, plan = await a_property(db)
    small = ari.CellsBudget(None, "cells:small", 1, 60.0)
    cells = {(plan, NIGHT): {"stopSell": True}, (plan, NIGHT + timedelta(days=1)): {"stopSell": True}}
    refused = await write(db, pid, cells, claim=key("over-budget-1"), budget=small)
    assert refused.answer == "budget" and refused.wait is not None
    assert await db.fetchval("SELECT count(*) FROM restriction_cells WHERE property_id = $1", pid) == 0
    assert await db.fetchval("SELECT count(*) FROM idempotency_keys") == 0


async def test_a_twin_of_a_write_running_elsewhere_hears_in_flight_then_its_replay(db: Database,
                                                                                   fresh_dsn: str) -> None:
    pid, _, plan = await a_property(db)
    cell = {(plan, NIGHT): {"closedToArrival": True}}
    answers: list[ari.CellsWritten] = []

    async def first() -> None:
        answers.append(await write(db, pid, cell, claim=key("racing-key-01")))

    async with held_elsewhere(fresh_dsn, ("SELECT 1 FROM properties WHERE id = $1 FOR NO KEY UPDATE", (pid,))) as other:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(first)
                while not await db.fetchval("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"):
                    await trio.sleep(0.01)
                # The first holds its key's lock while it waits for the property's.
                twin = await write(db, pid, cell, claim=key("racing-key-01"))
                assert twin.answer == "kept" and twin.kept is not None and twin.kept.in_flight
                await other.rollback()
    assert answers[0].answer == "written" and answers[0].accepted == 1
    again = await write(db, pid, cell, claim=key("racing-key-01"))
    assert again.answer == "kept" and again.kept is not None and not again.kept.in_flight
    assert again.kept.response is not None and again.kept.response["result"] == {"acceptedCells": 1, "noopCells": 0}
    reused = await write(db, pid, cell, claim=key("racing-key-01", b"another body"))
    assert reused.kept is not None and not reused.kept.same_body


# Writes queued together for a property (decision 0148): one statement, each done as alone.

async def test_writes_together_run_in_order_each_seeing_the_ones_before(db: Database) -> None:
    pid, _, plan = await a_property(db)
    cell = (plan, NIGHT)
    run = [await a_write(db, pid, {cell: {0: rate}}, resource="rates") for rate in (10000, 12000, 12000, 11000)]
    done = await ari.write_cells_together(db, run)
    # The second changes what the first wrote, the third finds it written, the last wins.
    assert [(d.answer, d.accepted, d.noop) for d in done] == [("written", 1, 0), ("written", 1, 0),
                                                              ("written", 0, 1), ("written", 1, 0)]
    assert await db.fetchval("SELECT rate_minor FROM rate_cells WHERE property_id = $1", pid) == 11000
    batches = await db.fetch("SELECT id, accepted_cells FROM write_batches WHERE property_id = $1", pid)
    assert {(b["id"], b["accepted_cells"]) for b in batches} == {(w.batch, d.accepted) for w, d in zip(run, done)}
    # The cell's version is the last write's: it was written after the others.
    last = await db.fetchval("SELECT last_batch_id FROM rate_cells WHERE property_id = $1", pid)
    assert last == run[3].batch


async def test_a_key_twice_in_one_run_is_written_once_and_replayed(db: Database) -> None:
    pid, _, plan = await a_property(db)
    cells = {(plan, NIGHT): {"stopSell": True}}
    once = await a_write(db, pid, cells, claim=key("twice-in-a-run"))
    again = await a_write(db, pid, cells, claim=key("twice-in-a-run"))
    other = await a_write(db, pid, cells, claim=key("twice-in-a-run", b"another body"))
    first, replay, reused = await ari.write_cells_together(db, [once, again, other])
    assert (first.answer, first.accepted) == ("written", 1)
    assert replay.answer == "kept" and replay.kept is not None and not replay.kept.in_flight
    assert replay.kept.response is not None and replay.kept.response["result"] == {"acceptedCells": 1, "noopCells": 0}
    assert reused.kept is not None and not reused.kept.same_body
    assert await db.fetchval("SELECT count(*) FROM write_batches WHERE property_id = $1", pid) == 1


async def test_a_run_is_charged_write_by_write_as_if_each_came_alone(db: Database) -> None:
    pid, _, plan = await a_property(db)
    two = ari.CellsBudget(None, "cells:two-in-a-run", 2, 60.0)
    night = {n: (plan, NIGHT + timedelta(days=n)) for n in range(4)}
    run = [await a_write(db, pid, {night[0]: {"stopSell": True}}, budget=two),
           await a_write(db, pid, {night[1]: {"stopSell": True}, night[2]: {"stopSell": True}}, budget=two),
           await a_write(db, pid, {night[3]: {"stopSell": True}}, budget=two)]
    first, over, last = await ari.write_cells_together(db, run)
    # The second does not fit after the first: refused, nothing of it charged or written;
    # the third fits beside the first.
    assert (first.answer, over.answer, last.answer) == ("written", "budget", "written")
    assert over.used == 1 and over.wait is not None
    assert last.used == 2
    nights = await db.fetch("SELECT night FROM restriction_cells WHERE property_id = $1 ORDER BY night", pid)
    assert [r["night"] for r in nights] == [NIGHT, NIGHT + timedelta(days=3)]


async def test_a_run_the_record_refuses_writes_nothing_of_any_write(db: Database) -> None:
    pid, _, plan = await a_property(db)
    good = await a_write(db, pid, {(plan, NIGHT): {"stopSell": True}})
    gone = dataclasses.replace(good, property_id=0, batch=uuid.uuid4())  # no such property: the record raises
    with pytest.raises(StorageError):
        await ari.write_cells_together(db, [good, gone])
    assert await db.fetchval("SELECT count(*) FROM restriction_cells WHERE property_id = $1", pid) == 0
    assert await db.fetchval("SELECT count(*) FROM write_batches") == 0


async def test_a_run_is_one_statement_of_at_most_its_bound(db: Database) -> None:
    pid, _, plan = await a_property(db)
    count = ari.MOST_WRITES_TOGETHER
    run = [await a_write(db, pid, {(plan, NIGHT + timedelta(days=n)): {0: 10000 + n}}, resource="rates")
           for n in range(count + 1)]
    # One statement commits at once: a longer run the writer never makes is refused, not split.
    with pytest.raises(ValueError):
        await ari.write_cells_together(db, run)
    with pytest.raises(ValueError):
        await ari.write_cells_together(db, [])
    done = await ari.write_cells_together(db, run[:count])
    assert [(d.answer, d.accepted) for d in done] == [("written", 1)] * count
    rows = await db.fetch("SELECT night, rate_minor, last_batch_id FROM rate_cells WHERE property_id = $1", pid)
    assert {(r["night"], r["rate_minor"], r["last_batch_id"]) for r in rows} == {
        (NIGHT + timedelta(days=n), 10000 + n, run[n].batch) for n in range(count)}


async def test_a_catalog_that_moved_leaves_every_write_of_the_run_undone(db: Database) -> None:
    pid, _, plan = await a_property(db)
    before = (await ari.write_catalog(db, pid)).version
    await db.execute("UPDATE rate_plans SET max_rate = 100 WHERE id = $1", plan)
    run = [await a_write(db, pid, {(plan, NIGHT + timedelta(days=n)): {0: 90}}, resource="rates", catalog=before)
           for n in range(3)]
    assert [d.answer for d in await ari.write_cells_together(db, run)] == ["stale"] * 3
    assert await db.fetchval("SELECT count(*) FROM rate_cells WHERE property_id = $1", pid) == 0
