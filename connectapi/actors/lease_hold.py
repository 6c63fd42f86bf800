"""Holding a lease while a piece of work runs: `async with holder.hold(kind, key, seconds)`.

The one way a task holds a lease of the record (storage.leases) for as long as its work
runs: taken on entry (or adopted, when the statement that found the work took it:
`holding`), renewed in a task of its own every third of its length, given back on exit.
When a renewal finds the lease gone (the holder stalled past it, and another process took
the work over), the work is cancelled at once and `Held.lost` says so: no two processes
do the same work past the moment one of them learns it lost it. A renewal the record
cannot answer is tried again while the lease still runs; when it would run out first, the
work ends the same way (`Held.error` says why; the lease is left to run out): a holder that
cannot tell whether it still holds the lease does not go on as if it did.

The push leases of a property are held across rounds by both its pushers and renewed
together (actors.push_leases); they are the same leases, in the same table, on the same
clock.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio

from ..engine import Clock
from ..storage import leases
from ..storage.database import Database, StorageError
from ..storage.leases import Lease, LeaseKind

log = logging.getLogger("connectapi.leases")

GIVE_BACK_SECONDS = 5.0  # to give a lease back when its work ended by a failure or a stop


class HeldElsewhere(Exception):
    """Another process holds the lease, for `remaining` seconds more from now at most."""

    def __init__(self, lease: Lease, remaining: float) -> None:
        super().__init__(f"the {lease.kind.value} lease {lease.key} is held by another process")
        self.lease = lease
        self.remaining = remaining


@dataclass(eq=False)
class Held:
    """A lease held by this task's work. After the `async with`: `lost` when it went to
    another process (the work was cancelled), `again` when another process asked for a
    round more meanwhile."""

    lease: Lease
    lost: bool = False
    again: bool = False
    error: StorageError | None = None  # why it was lost, when the record could not be asked
    _given_back: bool = False

    def given_back(self) -> None:
        """The work gave the lease back in its own transaction (with what it recorded)."""
        self._given_back = True


class LeaseHolder:
    """This process's way to hold leases. `holder` is the process's name on them
    (storage.leases.process_holder; tests playing two processes give each its own)."""

    def __init__(self, db: Database, clock: Clock, holder: str | None = None) -> None:
        self._db = db
        self._clock = clock
        self.holder = holder or leases.process_holder()

    @asynccontextmanager
    async def hold(self, kind: LeaseKind, key: str, seconds: float,
                   renew_every: float | None = None) -> AsyncIterator[Held]:
        """Take the lease and hold it while the body runs; HeldElsewhere when another
        process holds it (that one is asked for a round more)."""
        asked = self._clock.monotonic()
        lease = await leases.take(self._db, kind, key, self.holder, self._clock.shared_time(), seconds)
        if not lease.held_by(self.holder):
            # The record measured what remains when the statement ran: counted from now, the
            # time its answer took is already gone.
            raise HeldElsewhere(lease, max(0.0, lease.remaining - (self._clock.monotonic() - asked)))
        async with self.holding(lease, seconds, renew_every) as held:
            yield held

    @asynccontextmanager
    async def holding(self, lease: Lease, seconds: float, renew_every: float | None = None) -> AsyncIterator[Held]:
        """Hold a lease this process has taken already, while the body runs."""
        held = Held(lease)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._renew, held, seconds, renew_every or seconds / 3, nursery.cancel_scope)
                try:
                    yield held
                finally:
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # The renewal raises only on a bug of its own: what the nursery wraps is the
            # body's, given back to the caller as the body raised it.
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
        finally:
            if not (held.lost or held._given_back):
                with trio.move_on_after(GIVE_BACK_SECONDS) as giving_back:
                    giving_back.shield = True
                    await self._give_back(held)

    async def _renew(self, held: Held, seconds: float, every: float, work: trio.CancelScope) -> None:
        lease = held.lease
        renewed_at = self._clock.monotonic()  # the lease runs at least `seconds` from here
        while True:
            await trio.sleep(every)
            asked = self._clock.monotonic()
            try:
                kept = await leases.renew(self._db, lease.kind, self.holder, [lease.key],
                                          self._clock.shared_time(), seconds)
            except StorageError as exc:
                # The lease still runs from the last renewal: try again while another try
                # would come before it runs out; past that, the work stops and it runs out.
                if self._clock.monotonic() - renewed_at + every < seconds:
                    log.warning("the %s lease %s could not be renewed (%s); trying again", lease.kind.value,
                                lease.key, exc)
                    continue
                log.warning("the %s lease %s could not be renewed before it runs out (%s); its work stops",
                            lease.kind.value, lease.key, exc)
                held.lost, held.error = True, exc
                work.cancel()
                return
            if not kept:
                log.warning("the %s lease %s went to another process while its work ran past it; the work stops",
                            lease.kind.value, lease.key)
                held.lost = True
                work.cancel()
                return
            renewed_at = asked

    async def _give_back(self, held: Held) -> None:
        try:
            held.again = await leases.give_back(self._db, held.lease.kind, held.lease.key, self.holder)
        except StorageError as exc:
            # It runs out by itself, and this process may take it again before that.
            log.warning("could not give the %s lease %s back: %s", held.lease.kind.value, held.lease.key, exc)
