"""The primary among the hosts a DATABASE_URL names, for every new connection of a pool.

`target_session_attrs=read-write` alone takes the first host that accepts writes. After a
failover, the old primary started again as it was is such a host: a primary of the
timeline the cluster left, listed first. Its writes would be lost to the cluster, and with
synchronous replication they hang. So each new connection asks every host at once and
takes the one that accepts writes on the newest timeline (the first listed among equals),
and never one older than a timeline this process has already used: a stale primary is
never written to while the new one is away (the service answers 503 meanwhile).

A host that did not answer the last ask at all (cut off, or powered off: no refusal, only
the connect timeout or a slow "unreachable") is still asked, but not waited for beyond a
moment once a primary no older than the one in use has answered: without that, every new
connection of the pool cost the connect timeout while the host was away. Every
SILENT_RECHECK_SECONDS it is waited for in full once more.

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
# How long a new connection waits for a host that was silent last time, once it has a
# primary in hand. A silent host that answers within it is counted again; one that does
# not is asked in full again after SILENT_RECHECK_SECONDS (it may be a new primary that
# answers slowly: a stale primary answering at once is not taken for longer than that).
SILENT_GRACE_SECONDS = 0.25
SILENT_RECHECK_SECONDS = 30.0
# A failure this slow is a silent host's too (no refusal came: the address unreachable).
SILENT_AFTER_SECONDS = 1.0

_WHO = """SELECT pg_is_in_recovery() AS replica,
                 CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_walfile_name(pg_current_wal_lsn()) END AS wal"""


@dataclass(frozen=True)
class _Answer:
    host: int
    conn: asyncpg.Connection
    replica: bool
    timeline: int


class _NotWaitedFor(TimeoutError):
    """A silent host's ask, cut short after the grace: what it would have said is unknown."""


class PrimaryFinder:
    """A pool's `connect`: a connection to the primary among `hosts` (one URL each)."""

    def __init__(self, hosts: list[str]) -> None:
        self.hosts = hosts
        self.timeline = 0  # the newest this process has used
        # Hosts that gave no answer at all when last asked in full: when (the loop's clock).
        self.silent: dict[int, float] = {}

    async def _ask(self, n: int, url: str, kwargs: dict[str, Any]) -> _Answer:
        conn = await asyncpg.connect(url, **kwargs)
        try:
            row = await conn.fetchrow(_WHO, timeout=kwargs.get("timeout"))
        except BaseException:
            conn.terminate()
            raise
        assert row is not None
        timeline = 0 if row["wal"] is None else int(str(row["wal"])[:8], 16)
        return _Answer(n, conn, bool(row["replica"]), timeline)

    def _passed_over(self, now: float) -> set[int]:
        """The silent hosts not to wait for in full now: each is asked in full again once
        SILENT_RECHECK_SECONDS have passed, so that one which came back slower than the
        grace (a new primary, say) is heard again."""
        return {n for n, since in self.silent.items() if now - since < SILENT_RECHECK_SECONDS}

    async def _ask_all(self, kwargs: dict[str, Any]) -> list[_Answer | BaseException]:
        """Every host's answer (or failure), in the hosts' order; a silent host's wait is cut
        short once another host is a primary as new as the one in use."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        passed_over = self._passed_over(started)
        finished: dict[int, float] = {}

        async def timed(n: int, url: str) -> _Answer:
            try:
                return await self._ask(n, url, kwargs)
            finally:
                finished[n] = loop.time()

        asking = [asyncio.ensure_future(timed(n, url)) for n, url in enumerate(self.hosts)]
        try:
            if heard := [t for n, t in enumerate(asking) if n not in passed_over]:
                await asyncio.wait(heard)
            if not all(t.done() for t in asking) and any(
                    isinstance(a, _Answer) and not a.replica and a.timeline >= self.timeline
                    for a in (t.result() for t in asking if t.done() and not t.cancelled() and t.exception() is None)):
                await asyncio.wait(asking, timeout=SILENT_GRACE_SECONDS)
            else:
                await asyncio.wait(asking)
        except BaseException:
            # Cancelled (the caller's deadline, a request gone): no connection is handed
            # on, so none may be left open.
            for task in asking:
                task.cancel()
            await asyncio.gather(*asking, return_exceptions=True)
            for task in asking:
                if not task.cancelled() and task.exception() is None:
                    task.result().conn.terminate()
            raise
        for task in asking:
            task.cancel()  # a silent host's ask, left after the grace
        await asyncio.gather(*asking, return_exceptions=True)
        answers: list[_Answer | BaseException] = []
        for n, task in enumerate(asking):
            if task.cancelled():
                answers.append(_NotWaitedFor("not waited for: silent when last asked"))
                continue  # still silent, since when it was last heard in full
            answer = task.exception() or task.result()
            # Silent: the connect timeout, or a failure that took as long to come (a host
            # powered off on the same network: unreachable, once its address is not found).
            if isinstance(answer, BaseException) and (
                    isinstance(answer, TimeoutError) or finished[n] - started >= SILENT_AFTER_SECONDS):
                self.silent[n] = started
            else:
                self.silent.pop(n, None)
            answers.append(answer)
        return answers

    async def connect(self, dsn: str | None = None, **kwargs: Any) -> asyncpg.Connection:
        kwargs.pop("loop", None)
        asked = await self._ask_all(kwargs)
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
            reasons = "; ".join(f"{type(f).__name__}: {f}" for f in failures) or "every host is a replica"
            raise ConnectionRefusedError(f"no primary among the {len(self.hosts)} database hosts ({reasons})")
        if best.timeline > self.timeline:
            if self.timeline:
                log.warning("the record's primary is now database host %d, timeline %d (was %d)", best.host + 1,
                            best.timeline, self.timeline)
            self.timeline = best.timeline
        return best.conn
