"""The primary among the hosts a DATABASE_URL names, for every new connection of a pool.

`target_session_attrs=read-write` alone takes the first host that accepts writes. After a
failover, the old primary started again as it was is such a host: a primary of the
timeline the cluster left, listed first. Its writes would be lost to the cluster, and with
synchronous replication they hang. So each new connection asks every host at once and
takes the one that accepts writes on the newest timeline (the first listed among equals),
and never one older than a timeline this process has already used: a stale primary is
never written to while the new one is away (the service answers 503 meanwhile).

A process that starts while only a stale primary can be reached cannot tell it is stale:
docs/operations.md ("Several machines") says to keep the old primary down until it has
been made a replica of the new one.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import asyncpg

log = logging.getLogger("connectapi.storage")

_WHO = """SELECT pg_is_in_recovery() AS replica,
                 CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_walfile_name(pg_current_wal_lsn()) END AS wal"""


@dataclass(frozen=True)
class _Answer:
    host: int
    conn: asyncpg.Connection
    replica: bool
    timeline: int


class PrimaryFinder:
    """A pool's `connect`: a connection to the primary among `hosts` (one URL each)."""

    def __init__(self, hosts: list[str]) -> None:
        self.hosts = hosts
        self.timeline = 0  # the newest this process has used

    async def _ask(self, n: int, url: str, kwargs: dict[str, Any]) -> _Answer:
        conn = await asyncpg.connect(url, **kwargs)
        try:
            row = await conn.fetchrow(_WHO)
        except BaseException:
            conn.terminate()
            raise
        assert row is not None
        timeline = 0 if row["wal"] is None else int(str(row["wal"])[:8], 16)
        return _Answer(n, conn, bool(row["replica"]), timeline)

    async def connect(self, dsn: str | None = None, **kwargs: Any) -> asyncpg.Connection:
        kwargs.pop("loop", None)
        asked = await asyncio.gather(*(self._ask(n, url, kwargs) for n, url in enumerate(self.hosts)),
                                     return_exceptions=True)
        answers = [a for a in asked if isinstance(a, _Answer)]
        writable = [a for a in answers if not a.replica]
        best = max(writable, key=lambda a: (a.timeline, -a.host)) if writable else None
        if best is not None and best.timeline < self.timeline:
            log.error("the only primary reachable is on timeline %d, older than %d which this process used: a "
                      "stale primary, not written to", best.timeline, self.timeline)
            best = None
        for answer in answers:
            if answer is not best:
                answer.conn.terminate()
        if best is None:
            failures = [a for a in asked if isinstance(a, BaseException)]
            for failure in failures:
                if not isinstance(failure, Exception):
                    raise failure  # a cancellation
            reasons = "; ".join(f"{type(f).__name__}: {f}" for f in failures) or "every host is a replica"
            raise ConnectionRefusedError(f"no primary among the {len(self.hosts)} database hosts ({reasons})")
        if best.timeline > self.timeline:
            if self.timeline:
                log.warning("the record's primary is now database host %d, timeline %d (was %d)", best.host + 1,
                            best.timeline, self.timeline)
            self.timeline = best.timeline
        return best.conn
