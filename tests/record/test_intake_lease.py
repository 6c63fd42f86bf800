"""The booking intake runs in one process at a time: its lease in the record; and should
two rounds ever overlap, a revision is still settled once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import trio

from connectapi.actors.ota_writer import refuse_revision
from connectapi.storage import ota, round_leases
from connectapi.storage.database import open_database

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)
NAME = "booking-intake"


async def test_three_processes_racing_for_the_lease_one_takes_it(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=4, max_size=8) as db:
        for turn in range(5):  # the first take inserts the row; later ones update it
            at = NOW + turn * LEASE
            taken: dict[str, bool] = {}

            async def take(holder: str) -> None:
                taken[holder] = (await round_leases.take(db, NAME, holder, at, at + LEASE)).taken

            async with trio.open_nursery() as nursery:
                for holder in ("a", "b", "c"):
                    nursery.start_soon(take, holder)
            winners = [holder for holder, won in taken.items() if won]
            assert len(winners) == 1, taken
            # The two that lost asked for a round more: the winner runs it.
            assert await round_leases.give_back(db, NAME, winners[0]) is True


async def test_a_held_lease_is_left_alone_renewed_and_given_back(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        assert (await round_leases.take(db, NAME, "a", NOW, NOW + LEASE)).taken
        held = await round_leases.take(db, NAME, "b", NOW + timedelta(seconds=10), NOW + timedelta(seconds=40))
        assert held == round_leases.Lease(False, NOW + LEASE)  # b looks again when a's lease would run out
        assert await round_leases.renew(db, NAME, "a", NOW + 2 * LEASE)
        assert not (await round_leases.take(db, NAME, "b", NOW + LEASE, NOW + 2 * LEASE)).taken  # renewed
        assert await round_leases.give_back(db, NAME, "a") is True  # b asked meanwhile
        # Given back: free for anyone at once, and nobody asked for more since.
        assert (await round_leases.take(db, NAME, "b", NOW + LEASE, NOW + 2 * LEASE)).taken
        assert await round_leases.give_back(db, NAME, "b") is False
        assert await round_leases.give_back(db, NAME, "b") is False  # not held: nothing to give
        assert not await round_leases.renew(db, NAME, "b", NOW + 3 * LEASE)


async def test_a_dead_holders_lease_runs_out_and_another_takes_it_over(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        assert (await round_leases.take(db, NAME, "a", NOW, NOW + LEASE)).taken
        # a dies mid-round: nobody gives the lease back, nobody renews it.
        almost = NOW + LEASE - timedelta(milliseconds=1)
        assert not (await round_leases.take(db, NAME, "b", almost, almost + LEASE)).taken
        assert (await round_leases.take(db, NAME, "b", NOW + LEASE, NOW + 2 * LEASE)).taken
        # a comes back from a stall: its lease is gone; it can neither renew nor give it back.
        assert not await round_leases.renew(db, NAME, "a", NOW + 3 * LEASE)
        assert await round_leases.give_back(db, NAME, "a") is False
        assert not (await round_leases.take(db, NAME, "a", NOW + LEASE, NOW + 2 * LEASE)).taken
        assert await round_leases.give_back(db, NAME, "b") is True  # a asked, b runs one more


async def test_a_revision_another_round_settled_is_neither_refused_nor_told_again(fresh_dsn: str) -> None:
    """Rounds overlapping (a holder stalled past its lease): one applied the revision, the
    other's apply failed and it falls back on refusing it."""
    async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
        property_id = await db.fetchval(
            "INSERT INTO properties (name, timezone, currency, channel_manager, pms, owner_email) "
            "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, false, 'owner@example.com') RETURNING id")
        assert await ota.store_revision(db, "rev-1", "BOO-1-1", property_id, "bk-1", NOW, {"id": "rev-1"}, NOW)
        [item] = await ota.received(db)

        async def settled_elsewhere(conn: Any) -> None:
            await ota.settle(conn, item.seq, "applied", None, None, NOW)

        await db.transaction(settled_elsewhere)
        refused = await refuse_revision(db, item, "could not be applied (Injected)", NOW)
        assert refused.state == "already settled" and refused.mails == 0
        assert await db.fetchval("SELECT state FROM ota_revisions WHERE seq = $1", item.seq) == "applied"
        assert await db.fetchval("SELECT count(*) FROM notifications") == 0
