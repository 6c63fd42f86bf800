"""The booking intake runs in one process at a time: its lease in the record; and should
two rounds ever overlap, a revision is still settled once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import trio

from connectapi.actors.ota_writer import refuse_revision
from connectapi.storage import leases, ota
from connectapi.storage.database import Database, open_database

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
LEASE = 30.0
T0 = NOW.timestamp()
NAME = "booking-intake"
ROUND = leases.LeaseKind.ROUND


async def take_round(db: Database, name: str, holder: str, now: float | None, seconds: float) -> leases.Lease:
    return await leases.take(db, ROUND, name, holder, now, seconds)


async def renew_round(db: Database, name: str, holder: str, now: float | None, seconds: float) -> bool:
    return await leases.renew(db, ROUND, holder, [name], now, seconds) == [name]


async def give_back_round(db: Database, name: str, holder: str) -> bool:
    return await leases.give_back(db, ROUND, name, holder)


async def test_three_processes_racing_for_the_lease_one_takes_it(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=4, max_size=8) as db:
        for turn in range(5):  # the first take inserts the row; later ones update it
            at = T0 + turn * LEASE
            taken: dict[str, bool] = {}

            async def take(holder: str) -> None:
                taken[holder] = (await take_round(db, NAME, holder, at, LEASE)).held_by(holder)

            async with trio.open_nursery() as nursery:
                for holder in ("a", "b", "c"):
                    nursery.start_soon(take, holder)
            winners = [holder for holder, won in taken.items() if won]
            assert len(winners) == 1, taken
            # The two that lost asked for a round more: the winner runs it.
            assert await give_back_round(db, NAME, winners[0]) is True


async def test_a_held_lease_is_left_alone_renewed_and_given_back(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        assert (await take_round(db, NAME, "a", T0, LEASE)).held_by("a")
        held = await take_round(db, NAME, "b", T0 + 10, LEASE)
        assert held == leases.Lease(ROUND, NAME, "a", LEASE - 10)  # b looks again when a's lease would run out
        assert await renew_round(db, NAME, "a", T0 + LEASE, LEASE)  # now held until T0 + 2 LEASE
        assert not (await take_round(db, NAME, "b", T0 + LEASE, LEASE)).held_by("b")  # renewed
        assert await give_back_round(db, NAME, "a") is True  # b asked meanwhile
        # Given back: free for anyone at once, and nobody asked for more since.
        assert (await take_round(db, NAME, "b", T0 + LEASE, LEASE)).held_by("b")
        assert await give_back_round(db, NAME, "b") is False
        assert await give_back_round(db, NAME, "b") is False  # not held: nothing to give
        assert not await renew_round(db, NAME, "b", T0 + 2 * LEASE, LEASE)


async def test_a_dead_holders_lease_runs_out_and_another_takes_it_over(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        assert (await take_round(db, NAME, "a", T0, LEASE)).held_by("a")
        # a dies mid-round: nobody gives the lease back, nobody renews it.
        assert not (await take_round(db, NAME, "b", T0 + LEASE - 0.001, LEASE)).held_by("b")
        assert (await take_round(db, NAME, "b", T0 + LEASE, LEASE)).held_by("b")
        # a comes back from a stall: its lease is gone; it can neither renew nor give it back.
        assert not await renew_round(db, NAME, "a", T0 + 2 * LEASE, LEASE)
        assert await give_back_round(db, NAME, "a") is False
        assert not (await take_round(db, NAME, "a", T0 + LEASE, LEASE)).held_by("a")
        assert await give_back_round(db, NAME, "b") is True  # a asked, b runs one more


async def test_the_database_clock_judges_a_lease_when_no_time_is_given(fresh_dsn: str) -> None:
    """In service no process gives its own time: whether a lease ran out is the database's
    call, so a host whose clock is off cannot take a lease still running (issue 31)."""
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        taken = await take_round(db, NAME, "a", None, LEASE)
        assert taken.held_by("a") and LEASE - 1 < taken.remaining <= LEASE
        held = await take_round(db, NAME, "b", None, LEASE)
        assert not held.held_by("b") and 0 < held.remaining <= LEASE
        assert await renew_round(db, NAME, "a", None, LEASE)
        # A lease given a past instant is judged there: it has run out for a clock that far ahead.
        assert (await take_round(db, NAME, "b", (await db.fetchval(
            "SELECT extract(epoch FROM clock_timestamp())::double precision")) + LEASE + 1, LEASE)).held_by("b")


async def test_a_revision_another_round_settled_is_neither_refused_nor_told_again(fresh_dsn: str) -> None:
    """Rounds overlapping (a holder stalled past its lease): one applied the revision, the
    other's apply failed and it falls back on refusing it."""
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        property_id = await db.fetchval(
            "INSERT INTO properties (name, timezone, currency, channel_manager, pms, owner_email) "
            "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, false, 'owner@example.com') RETURNING id")
        assert (await ota.store_revision(db, "rev-1", "BOO-1-1", property_id, "bk-1", NOW, {"id": "rev-1"}, (),
                                         NOW)).outcome == "new"
        [item] = await ota.received(db)

        async def settled_elsewhere(conn: Any) -> None:
            await ota.settle(conn, item.seq, "applied", None, None, NOW)

        await db.transaction(settled_elsewhere)
        refused = await refuse_revision(db, item, "could not be applied (Injected)", NOW)
        assert refused.state == "already settled" and refused.mails == 0
        assert await db.fetchval("SELECT state FROM ota_revisions WHERE seq = $1", item.seq) == "applied"
        assert await db.fetchval("SELECT count(*) FROM notifications") == 0
