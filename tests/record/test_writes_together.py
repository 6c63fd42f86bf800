"""A property's ARI writes queued together (decision 0148): one statement for the run, each
answered as if it came alone. A run the record refuses is applied write by write, so only
the write the record refuses fails; a run whose end is unknown (the connection lost) is
answered so to each asker and applied again by none; a write the catalog moved under is
checked again against the catalog read afresh; a run is bounded by count and cells; the
pushers are woken once for the run."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import outcome
import trio

from connectapi.actors.ari_writer import AriWrites
from connectapi.actors.messages.property_writer import ApplyWrite, Refused, WriteAccepted
from connectapi.actors.property_writer import PropertyWriter
from connectapi.actors.wakeups import Wakeups
from connectapi.budgets.charges import Charge
from connectapi.domain.ari_write import Resource, plan_write
from connectapi.domain.ari_write import MAX_CELLS
from connectapi.storage import ari
from connectapi.storage.database import Database, RecordBusy, RecordRefused, StorageUnavailable

from ..api.harness import held_elsewhere
from .test_twins import NOW, TODAY, a_property

NIGHT = TODAY + timedelta(days=1)


def rates(pid: int, plan: int, first: int, nights: int, rate: str) -> ApplyWrite:
    frm, to = NIGHT + timedelta(days=first), NIGHT + timedelta(days=first + nights - 1)
    planned = plan_write(Resource.RATES, {"updates": [{"ratePlanId": plan, "dateFrom": frm.isoformat(),
                                                       "dateTo": to.isoformat(), "rate": rate,
                                                       "currency": "EUR"}]}, TODAY)
    unbounded = Charge("cells", str(pid), 1, 10**9, 60.0, planned.requested_cells, planned.requested_cells)
    return ApplyWrite(None, planned, NOW, None, unbounded, None)


def availability(pid: int, room: int, rooms: int) -> ApplyWrite:
    planned = plan_write(Resource.AVAILABILITY, {"updates": [{"roomTypeId": room, "dateFrom": NIGHT.isoformat(),
                                                              "dateTo": NIGHT.isoformat(), "available": rooms}]},
                         TODAY)
    unbounded = Charge("cells", str(pid), 1, 10**9, 60.0, planned.requested_cells, planned.requested_cells)
    return ApplyWrite(None, planned, NOW, None, unbounded, None)


def accepted(done: outcome.Outcome[Any]) -> int:
    assert isinstance(done, outcome.Value) and isinstance(done.value, WriteAccepted), done
    return done.value.accepted_cells


async def recorded(db: Database, pid: int) -> dict[Any, int]:
    rows = await db.fetch("SELECT night, rate_minor FROM rate_cells WHERE property_id = $1", pid)
    return {r["night"]: r["rate_minor"] for r in rows}


async def batches_of_three_refused(db: Database, sqlstate: str) -> None:
    """The record refuses any write batch of three cells, with `sqlstate`."""
    await db.execute(f"""CREATE FUNCTION refuse_three() RETURNS trigger LANGUAGE plpgsql AS $$
                         BEGIN
                             IF NEW.requested_cells = 3 THEN
                                 RAISE EXCEPTION 'three cells' USING ERRCODE = '{sqlstate}';
                             END IF;
                             RETURN NEW;
                         END $$""")
    await db.execute("CREATE TRIGGER refuse_three BEFORE INSERT ON write_batches "
                     "FOR EACH ROW EXECUTE FUNCTION refuse_three()")


async def test_a_write_the_record_refuses_fails_alone_and_the_rest_of_its_run_is_written(db: Database) -> None:
    pid, _, plan = await a_property(db)
    await batches_of_three_refused(db, "P0001")  # a broken invariant, as the record sees it
    run = [rates(pid, plan, 0, 1, "90.00"), rates(pid, plan, 1, 3, "91.00"), rates(pid, plan, 5, 1, "92.00")]
    first, refused, last = await AriWrites(db, pid).apply_together(run, [None] * 3)
    assert (accepted(first), accepted(last)) == (1, 1)
    assert isinstance(refused, outcome.Error) and isinstance(refused.error, RecordRefused)
    assert await recorded(db, pid) == {NIGHT: 9000, NIGHT + timedelta(days=5): 9200}


async def test_a_run_the_catalog_moved_under_is_checked_again_against_the_new_one(db: Database) -> None:
    pid, _, plan = await a_property(db)
    writes = AriWrites(db, pid)
    assert accepted(outcome.Value(await writes.apply(rates(pid, plan, 0, 1, "80.00")))) == 1  # its catalog kept
    await db.execute("UPDATE rate_plans SET max_rate = 100 WHERE id = $1", plan)  # in whole euros: 100.00 at most now
    run = [rates(pid, plan, 1, 1, "95.00"), rates(pid, plan, 2, 1, "150.00"), rates(pid, plan, 3, 1, "99.00")]
    under, over, again = await writes.apply_together(run, [None] * 3)
    assert (accepted(under), accepted(again)) == (1, 1)
    # Checked against the catalog as it is now: over the plan's highest rate, not written.
    assert isinstance(over, outcome.Value) and isinstance(over.value, Refused), over
    assert await recorded(db, pid) == {NIGHT: 8000, NIGHT + timedelta(days=1): 9500,
                                       NIGHT + timedelta(days=3): 9900}


class Pushes:
    def __init__(self) -> None:
        self.woken: list[tuple[int, bool, bool]] = []

    async def wake(self, property_id: int, availability: bool, rates_or_restrictions: bool) -> None:
        self.woken.append((property_id, availability, rates_or_restrictions))


async def test_the_writer_wakes_the_pushers_once_for_a_run_with_what_it_moved(db: Database) -> None:
    pid, room, plan = await a_property(db)
    wakeups, pushes = Wakeups(), Pushes()
    listener: Any = pushes
    wakeups.attach(pushes=listener)
    writer = PropertyWriter(pid, db, wakeups)
    run: list[Any] = [availability(pid, room, 3), rates(pid, plan, 0, 1, "90.00"), rates(pid, plan, 0, 1, "90.00")]
    assert writer.batch_key(run[0]) == writer.batch_key(run[1]) is not None
    done = await writer.handle_batch(run, [None] * 3)
    assert [accepted(d) for d in done] == [1, 1, 0]
    assert pushes.woken == [(pid, True, True)]
    # A run that moved nothing wakes nobody.
    assert [accepted(d) for d in await writer.handle_batch(run[1:], [None] * 2)] == [0, 0]
    assert pushes.woken == [(pid, True, True)]


async def test_a_run_whose_end_is_unknown_is_answered_so_and_applied_again_by_none(db: Database,
                                                                                   fresh_dsn: str) -> None:
    # An outside review: a run refused for any reason was applied again write by write, even
    # when the record may have committed it (a timeout, a connection lost): applied twice.
    pid, _, plan = await a_property(db)
    writes = AriWrites(db, pid)
    run = [rates(pid, plan, n, 1, f"9{n}.00") for n in range(3)]
    answers: list[outcome.Outcome[Any]] = []

    async def apply() -> None:
        answers.extend(await writes.apply_together(run, [None] * 3))

    async with held_elsewhere(fresh_dsn, ("SELECT 1 FROM properties WHERE id = $1 FOR NO KEY UPDATE", (pid,))) as other:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(apply)
                waiting = None
                while waiting is None:
                    await trio.sleep(0.01)
                    waiting = await db.fetchval("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                                "AND query LIKE '%connectapi_write_cells%'")
                # The run's connection lost mid-statement: to the writer, its end is unknown.
                await db.execute("SELECT pg_terminate_backend($1)", waiting)
                await other.rollback()
    assert [type(a.error) for a in answers if isinstance(a, outcome.Error)] == [StorageUnavailable] * 3
    assert await db.fetchval("SELECT count(*) FROM write_batches WHERE property_id = $1", pid) == 0


def test_a_run_is_bounded_by_its_count_and_its_cells() -> None:
    pid, plan = 1, 2
    one = rates(pid, plan, 0, 1, "90.00")
    assert AriWrites.takes([one] * (ari.MOST_WRITES_TOGETHER - 1), one)
    assert not AriWrites.takes([one] * ari.MOST_WRITES_TOGETHER, one)
    year = rates(pid, plan, 0, 300, "90.00")
    most = MAX_CELLS // 300
    assert AriWrites.takes([year] * (most - 1), year) and not AriWrites.takes([year] * most, year)
    no_record: Any = None  # `batch_takes` asks nothing of the record
    writer = PropertyWriter(pid, no_record, Wakeups())
    assert writer.batch_takes([one], one) and not writer.batch_takes([year] * most, year)


async def test_a_run_refused_for_now_is_answered_so_to_each_asker_and_not_tried_write_by_write(
        db: Database) -> None:
    # A second review: a run refused for now (a lock not had in time, a deadlock) was tried
    # again write by write, each write waiting out the same lock in turn while its asker had
    # long given up. Each hears it at once, as alone (503, try again).
    pid, _, plan = await a_property(db)
    await batches_of_three_refused(db, "40001")  # could not serialize: for now
    run = [rates(pid, plan, 0, 1, "90.00"), rates(pid, plan, 1, 3, "91.00"), rates(pid, plan, 5, 1, "92.00")]
    answers = await AriWrites(db, pid).apply_together(run, [None] * 3)
    assert [type(a.error) for a in answers if isinstance(a, outcome.Error)] == [RecordBusy] * 3
    assert await recorded(db, pid) == {}
