"""The budget statement of concurrent requests, batched (issue 17): one statement at a
time goes out from a process, carrying the asks that arrived meanwhile, each checked and
charged on its own in arrival order. Beside the statement it batches (budgets.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from .charges import Charge, Counted
from . import record as stored
from ..storage.database import Database, RecordRefused, StorageError, StorageUnavailable
from ..tracing import spans


class BudgetCounter(Protocol):
    async def charge(self, now: float | None, charges: Sequence[Charge]) -> list[Counted]: ...


@dataclass(eq=False, slots=True)
class _Ask:
    now: float | None
    charges: Sequence[Charge]
    answer: list[Counted] | None = None
    error: Exception | None = None
    queued: bool = True  # not yet taken into a statement (nor withdrawn)


class RecordCounter:
    """Counts in the record: the service's only counter.

    One statement at a time goes out from a process; the asks of requests that arrive
    meanwhile wait and go together in the next (as a database groups commits). Each is
    still checked and charged on its own, in arrival order. A lone request waits for
    nobody; under load a statement carries many asks, so the record's row locks and the
    round trips are taken once per batch, not once per request.

    Whoever finds no statement out sends the next one, shielded from its own cancellation
    (the asks of others ride on it); the statement's own timeouts bound it. An ask not
    sent within `wait_limit` is withdrawn (503) when the statement out ends (so at most
    one statement's command timeout late), and when the record cannot be reached,
    every ask waiting then hears it at once: an outage never builds a queue of requests
    each waiting out the timeouts of the ones before.
    """

    MOST_PER_STATEMENT = 64
    MOST_WAITING = 5000

    def __init__(self, db: Database, wait_limit: float = 10.0) -> None:
        # Its own connection: a statement on every request, never a pool's take and give back.
        self._connection = db.held()
        self._wait_limit = wait_limit
        self._pending: list[_Ask] = []
        self._sending = False
        self._sent = trio.Event()
        self.statements = 0  # sent so far (tests, metrics)

    async def charge(self, now: float | None, charges: Sequence[Charge]) -> list[Counted]:
        if not spans.enabled():  # every request passes here: nothing built for a span when off
            return await self._charge(now, charges)
        # The request's wait for its budgets, in its own task (it may send the statement).
        with spans.span("budgets charge", attributes={"connectapi.charges": len(charges)}):
            return await self._charge(now, charges)

    async def _charge(self, now: float | None, charges: Sequence[Charge]) -> list[Counted]:
        stored.check_stages(charges)
        if len(self._pending) >= self.MOST_WAITING:
            raise StorageUnavailable("too many requests are waiting for the record's budget counts")
        ask = _Ask(now, charges)
        self._pending.append(ask)
        give_up = trio.current_time() + self._wait_limit
        while ask.answer is None and ask.error is None:
            if not self._sending:
                self._sending = True
                try:
                    with trio.CancelScope(shield=True):
                        await self._send_next()
                finally:
                    self._sending = False
                    self._sent.set()
                    self._sent = trio.Event()
            else:
                try:
                    # Woken when the statement out ends. No deadline of its own: a cancel
                    # scope per waiting request cost more than its share of the statement,
                    # and every statement ends within the command timeout anyway.
                    await self._sent.wait()
                except BaseException:
                    if ask.queued:  # not sent yet: withdrawn, never counted
                        self._withdraw(ask)
                    raise
                if ask.queued and trio.current_time() >= give_up:
                    self._withdraw(ask)
                    raise StorageUnavailable("the record did not count this request's budgets in time")
        if ask.error is not None:
            raise ask.error
        assert ask.answer is not None
        return ask.answer

    async def give_back(self) -> None:
        """Its connection back to the pool; the next statement would take one again."""
        await self._connection.give_back()

    def _withdraw(self, ask: _Ask) -> None:
        ask.queued = False
        self._pending.remove(ask)

    async def _send_next(self) -> None:
        """The oldest asks of one instant (all of them, on the record's clock), at most a
        statement's worth."""
        first = self._pending[0].now
        batch: list[_Ask] = []
        for ask in self._pending:
            if ask.now != first or len(batch) == self.MOST_PER_STATEMENT:
                break
            batch.append(ask)
        del self._pending[:len(batch)]
        for ask in batch:
            ask.queued = False
        self.statements += 1
        try:
            answers = await stored.charge_many(self._connection, first, [ask.charges for ask in batch])
        except StorageError as exc:
            if isinstance(exc, StorageUnavailable):
                # The record is away: those waiting behind would only wait to hear the same.
                for ask in self._pending:
                    ask.queued = False
                batch += self._pending
                self._pending.clear()
            for ask in batch:
                ask.error = _copy(exc)
            return
        except Exception as exc:  # a bug of ours: each asker hears it, none hangs
            for ask in batch:
                ask.error = RuntimeError(f"the budget statement failed: {exc!r}")
                ask.error.__cause__ = exc
            return
        for ask, answer in zip(batch, answers, strict=True):
            ask.answer = answer


# A counter's connection is given back within this when its front closes.
GIVE_BACK_SECONDS = 3.0


@asynccontextmanager
async def open_record_counter(db: Database, wait_limit: float = 10.0) -> AsyncIterator[RecordCounter]:
    """The record's counter for the life of the block; its connection goes back to the pool
    at the end (a process that opens its front again, as tests do, does not leak one)."""
    counter = RecordCounter(db, wait_limit)
    try:
        yield counter
    finally:
        with trio.move_on_after(GIVE_BACK_SECONDS) as giving_back:
            giving_back.shield = True
            await counter.give_back()


def _copy(exc: StorageError) -> StorageError:
    """One error per asker (an exception raised in several tasks would share a traceback)."""
    copy: StorageError
    if isinstance(exc, RecordRefused):
        copy = type(exc)(str(exc), exc.sqlstate)
    else:
        copy = StorageUnavailable(str(exc))
    copy.__cause__ = exc
    return copy
