"""A retention batch deletes at most its limit, whatever plan the planner takes: as
`DELETE … WHERE id IN (SELECT … LIMIT n FOR UPDATE SKIP LOCKED)`, a nested loop scanned the
subquery again for each row, and each scan, skipping the rows the statement had deleted,
chose more (a batch of 100 deleted 1,233 rows under load in tests/api/test_retention.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from connectapi.storage import retention
from connectapi.storage.database import open_database

# What the planner is left with: a nested loop, the subquery on its inner side, no
# materialising of it (the plan seen to delete everything).
NESTED_LOOP_ONLY = ("enable_hashjoin", "enable_mergejoin", "enable_material", "enable_hashagg", "enable_sort",
                    "enable_indexscan", "enable_bitmapscan")


async def test_a_batch_deletes_at_most_its_limit_under_a_nested_loop(fresh_dsn: str) -> None:
    async with open_database(fresh_dsn, min_size=1, max_size=1) as db:
        database = await db.fetchval("SELECT current_database()")
        settings = "; ".join(f'ALTER DATABASE "{database}" SET {name} = off' for name in NESTED_LOOP_ONLY)
        await db.execute(settings)
        prop = await db.fetchval("""INSERT INTO properties (name, timezone, currency, channel_manager, pms)
                                    VALUES ('Old Inn', 'UTC', 'EUR', true, false) RETURNING id""")
        old = datetime(2026, 1, 1, tzinfo=UTC)
        await db.execute(
            """INSERT INTO write_batches (id, property_id, resource, created_at, requested_cells, accepted_cells,
                                          noop_cells)
               SELECT id, $2, 'availability', $3, 1, 0, 1 FROM unnest($1::uuid[]) AS id""",
            [uuid.uuid4() for _ in range(1234)], prop, old)
    # A new session takes the database's settings.
    async with open_database(fresh_dsn, min_size=1, max_size=1) as db:
        assert await db.fetchval("SHOW enable_hashjoin") == "off"
        assert await retention.prune(db, "write_batches", old + timedelta(days=1), 100) == 100
        assert await db.fetchval("SELECT count(*) FROM write_batches") == 1134
