"""Round actors with no work of their own to finish: they keep the record tidy and the
key cache honest, and may be stopped at any moment."""

from __future__ import annotations

import logging

from ..domain import idempotency as idem
from ..domain.retention import Retention
from ..engine import Clock, NextRound, RoundsActor, Wake
from ..domain.owners import LOCKOUT_WAIT, LOCKOUT_WINDOW, SESSION_IDLE
from ..budgets import record as budgets
from ..storage import idempotency, owners, retention
from ..storage.database import RECORD_AWAY, RECORD_BUSY, Database
from ..storage.key_directory import KeyDirectory

log = logging.getLogger("connectapi")
RELISTEN_AFTER = 1.0


class IdempotencyJanitor(RoundsActor[Wake]):
    """Idempotency keys are kept 7 days (the contract's, not a setting): forget older ones,
    at start and then every `every`."""

    name = "idempotency-janitor"
    waits_out = RECORD_AWAY
    waits_out_briefly = RECORD_BUSY

    def __init__(self, db: Database, clock: Clock, every: float) -> None:
        self._db = db
        self._clock = clock
        self.interval = every

    async def round(self) -> NextRound:
        purged = await idempotency.purge(self._db, self._clock.now() - idem.RETENTION)
        if purged:
            log.info("purged %d idempotency keys older than %s", purged, idem.RETENTION)
        return NextRound()


class RetentionJanitor(RoundsActor[Wake]):
    """Prunes what the record keeps only for a while (`storage.retention.RETAINED`: batches,
    webhook deliveries and events, sent e-mails, allowlist refusals, settled OTA revisions)
    once past its retention, at start and then every `every`. Each table goes `BATCH` rows
    per statement (its own short transaction, skipping rows a request holds) and at most
    `MOST_BATCHES` statements a round: a long backlog (the first round after an upgrade)
    is worked off over several rounds, one after the other, never in one long hold."""

    name = "retention-janitor"
    waits_out = RECORD_AWAY
    waits_out_briefly = RECORD_BUSY
    BATCH = 500
    MOST_BATCHES = 100  # per table and round

    def __init__(self, db: Database, clock: Clock, kept: Retention, every: float) -> None:
        self._db = db
        self._clock = clock
        self._kept = kept
        self.interval = every

    async def round(self) -> NextRound:
        horizons = self._kept.horizons(self._clock.now())
        more = False
        for retained in retention.RETAINED:
            horizon = getattr(horizons, retained.kind)
            total = 0
            for _ in range(self.MOST_BATCHES):
                pruned = await retention.prune(self._db, retained.table, horizon, self.BATCH)
                total += pruned
                if pruned < self.BATCH:
                    break
            else:
                more = True
            if total:
                log.info("retention: pruned %d rows of %s done with before %s", total, retained.table,
                         horizon.isoformat(timespec="seconds"))
        now = self._clock.now()
        console = await owners.prune(self._db, now - SESSION_IDLE, now - LOCKOUT_WINDOW - LOCKOUT_WAIT, now,
                                     self.BATCH)
        if console:
            log.info("retention: forgot %d ended console sessions, old failed logins and spent setup links",
                     console)
        return NextRound(more=more or console >= self.BATCH)


class BudgetJanitor(RoundsActor[Wake]):
    """Budget subjects with nothing left in their window are forgotten, a batch at a time
    (each its own short statement that skips rows a request holds), every `every`. The
    windows of active subjects are trimmed by the requests that charge them."""

    name = "budget-janitor"
    waits_out = RECORD_AWAY
    waits_out_briefly = RECORD_BUSY
    BATCH = 500
    MOST_BATCHES = 200  # a round's bound; what is left waits for the next round

    def __init__(self, db: Database, clock: Clock, every: float) -> None:
        self._db = db
        self._clock = clock
        self.interval = every

    async def round(self) -> NextRound:
        total = 0
        for _ in range(self.MOST_BATCHES):
            pruned = await budgets.prune(self._db, self._clock.shared_time(), self.BATCH)
            total += pruned
            if pruned < self.BATCH:
                break
        if total:
            log.debug("forgot %d idle budget subjects", total)
        return NextRound()


class KeyListener(RoundsActor[Wake]):
    """Keeps the key directory's LISTEN connection: a round lasts as long as the connection,
    and the next one starts a second after it is lost."""

    name = "key-listener"

    def __init__(self, keys: KeyDirectory) -> None:
        self._keys = keys

    async def round(self) -> NextRound:
        await self._keys.listen_until_lost()
        return NextRound(due_in=RELISTEN_AFTER)
