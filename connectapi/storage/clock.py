"""The database server's clock, as seen from this host."""

from __future__ import annotations

import time

from .database import Database


async def database_offset(db: Database) -> tuple[float, float]:
    """(the database's clock minus this host's, in seconds; the round trip it was measured
    over): the host's time taken halfway through the statement."""
    before = time.time()
    theirs = float(await db.fetchval("SELECT extract(epoch FROM clock_timestamp())"))
    after = time.time()
    return theirs - (before + after) / 2, after - before
