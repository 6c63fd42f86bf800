"""Owner e-mails from several processes: each is claimed by one sender."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import trio

from connectapi.storage import notifications
from connectapi.storage.database import open_database

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
CLAIM = timedelta(minutes=30)


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

        async def claim(sender: str) -> None:
            claimed[sender] = [n.id for n in await notifications.due(db, NOW + timedelta(minutes=1), 10,
                                                                      NOW + CLAIM)]

        async with trio.open_nursery() as nursery:
            for sender in ("a", "b", "c"):
                nursery.start_soon(claim, sender)
        every = [i for ids in claimed.values() for i in ids]
        assert len(every) == 30 and len(set(every)) == 30  # each once, by one of them
        assert await notifications.due(db, NOW + timedelta(minutes=2), 10, NOW + CLAIM) == []  # all held
        first = claimed["a"][0]
        await notifications.mark_failed(db, first, "SMTP refused", NOW + timedelta(minutes=5))
        retried = await notifications.due(db, NOW + timedelta(minutes=5), 10, NOW + 2 * CLAIM)
        assert [n.id for n in retried] == [first]  # its retry time, not the claim's
        # a sender that died: its e-mails go again once the claim runs out
        assert len(await notifications.due(db, NOW + CLAIM, 50, NOW + 2 * CLAIM)) == 29
