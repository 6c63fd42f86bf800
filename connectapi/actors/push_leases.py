"""One process at a time pushes a property: this process's push leases, and their keeper.

A property's two pushers (availability, and rates with restrictions) share one lease in
the record (a `push` lease of storage.leases): this process holds it while either of them has work
for the property (a round running, a pause after a failure, a call the budget deferred),
and gives it back once neither has. While held it is renewed every RENEW_EVERY seconds
(the keeper, one statement for every lease of the process) and checked before every call
to the channel manager: a call only starts with CALL_NEEDS seconds of lease left, and is
cut short before the lease would run out, so a process that lost its lease (stalled,
cut off from the record) never pushes beside the process that took the property over.

A pusher that finds the property held by another process leaves the work to it: the
holder pushes every dirty cell before it gives the lease back, and after giving it back
looks for dirty cells once more (a write another process accepted meanwhile wakes the
pushers again here). The pusher only looks again when the holder's lease would run out:
if the holder died, it takes the property over then, from the record's dirty cells.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

from ..engine import Clock, NextRound, RoundsActor
from ..storage import leases
from ..storage.leases import LeaseKind
from ..storage.database import RECORD_AWAY, RECORD_BUSY, Database

log = logging.getLogger("connectapi.channel")
# The lease runs this long from its last renewal: the most a dead holder keeps a property.
LEASE_SECONDS = 20.0
RENEW_EVERY = 5.0
# Seconds of lease a pusher wants before it asks for a call (renewing if fewer are left):
# the channel-manager actor starts the call only with PUSH_CALL_MAX left, and the call may
# wait a moment in the property's lane first.
CALL_NEEDS = 14.0
# A pusher that found the lease held elsewhere looks again this long after it would run out.
LOOK_AGAIN_AFTER = 0.5

Wake = Callable[[int, bool, bool], Awaitable[None]]


@dataclass(eq=False)
class _Held:
    until: float  # monotonic: the lease runs at least until then (timed from before the statement)
    pushers: set[str] = field(default_factory=set)  # the pushers with work for the property, by name


class PushLeases:
    """This process's push leases. Not an actor: the pushers call it, each for its own
    property, and the keeper renews what is held. `wake(property_id, availability,
    rates_or_restrictions)` wakes this process's pushers (after a lease is given back and
    cells are found dirty)."""

    def __init__(self, db: Database, clock: Clock, wake: Wake, *, holder: str | None = None,
                 seconds: float = LEASE_SECONDS) -> None:
        self._db = db
        self._clock = clock
        self._wake = wake
        self.holder = holder or leases.process_holder()
        self.seconds = seconds
        self._held: dict[int, _Held] = {}
        self._turns: dict[int, trio.Lock] = {}

    def held(self) -> list[int]:
        return sorted(self._held)

    @asynccontextmanager
    async def _turn(self, property_id: int) -> AsyncIterator[None]:
        """One take, renewal or give-back of a property's lease at a time in this process:
        a give-back overtaken by the next take would leave a pusher believing it holds a
        lease the record no longer has."""
        lock = self._turns.setdefault(property_id, trio.Lock())
        try:
            async with lock:
                yield
        finally:
            if not lock.locked() and property_id not in self._held:
                self._turns.pop(property_id, None)

    async def take(self, property_id: int, pusher: str) -> float | None:
        """Join the property's lease for the work of `pusher` (its name). None: this process
        holds it (it did, or took it now); a number: another process does, for that many
        seconds more from now (at most: from when the record looked)."""
        async with self._turn(property_id):
            held = self._held.get(property_id)
            started = self._clock.monotonic()
            if held is not None and held.until > started:
                held.pushers.add(pusher)
                return None
            lease = await leases.take(self._db, LeaseKind.PUSH, str(property_id), self.holder,
                                      self._clock.shared_time(), self.seconds)
            if lease.held_by(self.holder):
                if held is None:
                    held = self._held[property_id] = _Held(started + self.seconds)
                held.until = max(held.until, started + self.seconds)
                held.pushers.add(pusher)
                return None
            if held is not None:
                log.warning("the push lease of property %d went to another process", property_id)
                del self._held[property_id]
            # The record measured what remains when the statement ran: counted from now, the
            # time the answer took to come back is already gone (a slow record otherwise
            # puts the look again that much after the lease runs out, each time).
            return max(0.0, lease.remaining - (self._clock.monotonic() - started))

    async def ensure(self, property_id: int, need: float = CALL_NEEDS) -> float | None:
        """Before a call: when (monotonic) this process's lease on the property runs out,
        renewed first if fewer than `need` seconds are left; None when it is no longer ours."""
        async with self._turn(property_id):
            held = self._held.get(property_id)
            if held is None:
                return None
            started = self._clock.monotonic()
            if held.until - started >= need:
                return held.until
            kept = await leases.renew(self._db, LeaseKind.PUSH, self.holder, [str(property_id)],
                                      self._clock.shared_time(), self.seconds)
            if str(property_id) not in kept:
                log.warning("the push lease of property %d went to another process", property_id)
                del self._held[property_id]
                return None
            held.until = max(held.until, started + self.seconds)
            return held.until

    async def leave(self, property_id: int, pusher: str) -> None:
        """`pusher` has nothing left to push. The lease is given back when no pusher of this
        process has work for the property; then, if cells are dirty again (written through
        another process, whose pusher found the lease held here), the pushers are woken."""
        async with self._turn(property_id):
            held = self._held.get(property_id)
            if held is None:
                return
            held.pushers.discard(pusher)
            if held.pushers:
                return
            del self._held[property_id]
            dirty = await leases.give_back_push(self._db, property_id, self.holder, self._clock.now())
        if dirty.availability or dirty.rates_or_restrictions:
            await self._wake(property_id, dirty.availability, dirty.rates_or_restrictions)

    def forget(self, property_id: int, pusher: str) -> None:
        """A pusher starting afresh (after a crash) has no work under the lease: drop its
        part, without I/O. A lease nobody here uses any more is no longer renewed; it runs
        out, or a pusher of this process takes it again."""
        held = self._held.get(property_id)
        if held is not None:
            held.pushers.discard(pusher)
            if not held.pushers:
                del self._held[property_id]

    async def renew_held(self) -> int:
        """The keeper's round: every lease held here runs another `seconds`, in one
        statement. A lease found taken by another process is dropped (the pushers see it
        before their next call). Answers how many are held."""
        snapshot = list(self._held.items())
        if not snapshot:
            return 0
        started = self._clock.monotonic()
        kept = {int(key) for key in await leases.renew(self._db, LeaseKind.PUSH, self.holder,
                                                      [str(p) for p, _ in snapshot], self._clock.shared_time(),
                                                      self.seconds)}
        for property_id, held in snapshot:
            if self._held.get(property_id) is not held:
                continue  # given back or taken again meanwhile: that statement's answer stands
            if property_id in kept:
                held.until = max(held.until, started + self.seconds)
            else:
                log.warning("the push lease of property %d went to another process", property_id)
                del self._held[property_id]
        return len(kept)

    async def give_back_all(self) -> int:
        """The process is stopping (its pushers have stopped): every lease is given back at
        once, so another process need not wait for them to run out."""
        self._held.clear()
        return await leases.give_back_all(self._db, self.holder, LeaseKind.PUSH)


class PushLeaseKeeper(RoundsActor[Wake]):
    """Renews this process's push leases every RENEW_EVERY seconds."""

    name = "push-lease-keeper"
    waits_out = RECORD_AWAY
    waits_out_briefly = RECORD_BUSY

    def __init__(self, leases: PushLeases, every: float = RENEW_EVERY) -> None:
        self._leases = leases
        self.interval = every

    async def round(self) -> NextRound:
        await self._leases.renew_held()
        return NextRound()
