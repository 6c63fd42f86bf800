"""Owner e-mails from several processes: each is claimed by one sender."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import trio

from connectapi.storage import notifications
from connectapi.storage.database import open_database

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
CLAIM = 30 * 60.0


async def test_each_email_is_claimed_by_one_sender_until_its_claim_runs_out(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=4, max_size=8) as db:
        property_id = await db.fetchval("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                        "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")

        async def work(conn: Any) -> None:
            for n in range(30):
                await notifications.enqueue(conn, property_id, None, "test", "owner@example.com", f"mail {n}",
                                            "body", NOW + timedelta(seconds=n))

        await db.transaction(work)
        claimed: dict[str, list[int]] = {}

        def at(minutes: float) -> float:  # a test's instant on the shared clock (Clock.shared_time)
            return (NOW + timedelta(minutes=minutes)).timestamp()

        async def claim(sender: str) -> None:
            claimed[sender] = [n.id for n in await notifications.due(db, 10, CLAIM, shared=at(1))]

        async with trio.open_nursery() as nursery:
            for sender in ("a", "b", "c"):
                nursery.start_soon(claim, sender)
        every = [i for ids in claimed.values() for i in ids]
        assert len(every) == 30 and len(set(every)) == 30  # each once, by one of them
        assert await notifications.due(db, 10, CLAIM, shared=at(2)) == []  # all held
        first = claimed["a"][0]
        await notifications.mark_failed(db, first, "SMTP refused", 3 * 60, shared=at(2))
        assert await notifications.due(db, 10, CLAIM, shared=at(4.9)) == []
        retried = await notifications.due(db, 10, CLAIM, shared=at(5))
        assert [n.id for n in retried] == [first]  # its retry time, not the claim's
        # a sender that died: its e-mails go again once the claim runs out (at 1 + 30 minutes)
        assert await notifications.due(db, 50, CLAIM, shared=at(30.9)) == []
        assert len(await notifications.due(db, 50, CLAIM, shared=at(31))) == 29


async def test_without_a_test_instant_the_claim_is_judged_by_the_database_clock(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn) as db:
        property_id = await db.fetchval("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                        "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")
        await db.transaction(lambda conn: notifications.enqueue(conn, property_id, None, "test", "owner@example.com",
                                                                 "mail", "body", NOW))
        [mail] = await notifications.due(db, 10, CLAIM, shared=None)
        held_for = await db.fetchval("SELECT extract(epoch FROM next_attempt_at - clock_timestamp()) "
                                     "FROM notifications")
        assert CLAIM - 5 < held_for <= CLAIM  # on the database's clock, not a process's
        assert await notifications.due(db, 10, CLAIM, shared=None) == []
        await notifications.mark_failed(db, mail.id, "SMTP refused", 60, shared=None)
        wait = await db.fetchval("SELECT extract(epoch FROM next_attempt_at - clock_timestamp()) FROM notifications")
        assert 55 < wait <= 60
