"""Watching the embedded PostgreSQL: if its server dies, start it again.

With DATABASE_URL the operator's PostgreSQL is theirs to keep up; the embedded one is
ours. Requests answer 503 while it is down; this brings it back within seconds, and the
pool and the listeners reconnect by themselves.
"""

from __future__ import annotations

import logging
import subprocess

import trio

from ..engine import NextRound, RoundsActor, Wake
from ..storage.embedded import EmbeddedPostgres

log = logging.getLogger("connectapi.storage")
RETRY_START = 5.0


class RecordWatchdog(RoundsActor[Wake]):
    name = "record-watchdog"

    def __init__(self, embedded: EmbeddedPostgres, every: float) -> None:
        self._embedded = embedded
        self.interval = every

    async def round(self) -> NextRound:
        if await trio.to_thread.run_sync(self._embedded.is_running, abandon_on_cancel=True):
            return NextRound()
        log.error("the embedded PostgreSQL is not running; starting it again")
        started = trio.current_time()
        try:
            # Abandoned if the service stops meanwhile: a start never holds a stop up.
            await trio.to_thread.run_sync(self._embedded.restart, abandon_on_cancel=True)
        except (subprocess.SubprocessError, OSError, AssertionError) as exc:
            # pg_ctl refused (children of the dead server still hold its memory, say): the
            # next round tries again.
            log.error("the embedded PostgreSQL did not start (%s); trying again in %ss", exc, RETRY_START)
            return NextRound(due_in=RETRY_START)
        log.warning("the embedded PostgreSQL runs again (started in %.1fs)", trio.current_time() - started)
        return NextRound()
