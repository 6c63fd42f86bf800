"""A property's ARI writes queued together (decision 0148): one statement for the run, each
answered as if it came alone. A run the record refuses is applied write by write, so only
the write the record refuses fails; a write the catalog moved under is checked again
against the catalog read afresh; the pushers are woken once for the run."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import outcome

from connectapi.actors.ari_writer import AriWrites
from connectapi.actors.messages.property_writer import ApplyWrite, Refused, WriteAccepted
from connectapi.actors.property_writer import PropertyWriter
from connectapi.actors.wakeups import Wakeups
from connectapi.budgets.charges import Charge
from connectapi.domain.ari_write import Resource, plan_write
from connectapi.storage.database import Database, RecordRefused

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


async def test_a_write_the_record_refuses_fails_alone_and_the_rest_of_its_run_is_written(db: Database) -> None:
    pid, _, plan = await a_property(db)
    # The record refuses any batch of three cells (a broken invariant, as the record sees it).
    await db.execute("""CREATE FUNCTION refuse_three() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN
                            IF NEW.requested_cells = 3 THEN RAISE EXCEPTION 'three cells'; END IF;
                            RETURN NEW;
                        END $$""")
    await db.execute("CREATE TRIGGER refuse_three BEFORE INSERT ON write_batches "
                     "FOR EACH ROW EXECUTE FUNCTION refuse_three()")
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
