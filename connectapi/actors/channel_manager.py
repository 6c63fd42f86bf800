"""The one actor that calls the channel manager: pacing, Retry-After, backoff, fairness.

Every call is a message in its mailbox. Per property there is a lane: one call in flight
at a time for the property (availability and restrictions alike: the channel manager
sees one call of ours for a property at a time), paced against that property's write
budgets at the channel manager, so that in steady state it never has to answer 429: a
push the budget does not allow yet is answered "deferred until T" at once, and the pusher
asks again then (with the cells dirty meanwhile, so it sends the newest). Reads share the
account-wide read budget in a lane of their own, deferred alike; catalog calls and the
booking feed have a lane each. Channex asks partners to pause a property's updates for a
minute after any error, then back off: a 429 pauses the property for its Retry-After (a
minute when absent); any other failure (a 5xx, a timeout, an answer we cannot read, a
4xx) pauses it a minute, doubling with each failure in a row up to BACKOFF_MAX. The pause
is the record's alone (`cm_next_attempt_at`, `cm_failures`): the pusher reads it with
the property's channel ids, sends the count of failures with the call, and records the
pause this actor answers, so every process and a restart see the same one.

The budgets are counted in the record (connectapi/budgets: pace_call, subjects `cm-reads`,
`cm-availability:<property>`, `cm-restrictions:<property>`), one statement per call, so
every process and machine on the record paces against the same counts: N processes send
what one would, not N times it. A push also carries its sender's push lease (actors.
push_leases): it starts only with PUSH_CALL_MAX seconds of lease left and is cut short
before the lease runs out.

Fairness comes from the lanes: a property flooding its own lane waits on its own budget
and never holds another property's call (one call served at a time for the whole
mailbox would put every property behind whichever call is in flight).

Pauses after a failure live in the actor (and with them the property's lease stays in
this process: actors.push_leases); a restart forgets them, and the channel manager's own
429 (honoured like any other) is then the worst that happens.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import trio

from ..channel.client import (DEFAULT_TIMEOUT, AvailabilityGrid, ChannelManagerClient, ChannelManagerError, Rejected,
                             RestrictionsGrid, Throttled)
from ..engine import Actor, Clock
from ..metrics import CM_CALLS
from ..budgets import pace_call
from ..storage import properties
from ..storage.database import Database, StorageUnavailable
from ..tracing import spans
from .messages.channel_manager import (AckRevision, Acked, ChannelMessage, Created, CreateProperty, CreateRatePlan,
                                       CreateRoomType, FeedRead, GridRead, Mode, Push, PushOutcome,
                                       ReadFeed, ReadGrid)

log = logging.getLogger("connectapi.channel")
# Our windows run a little longer than the channel manager's: it counts a call when it
# arrives, we when we send, and a call that travels faster than the one ten calls before
# it would otherwise land inside the channel manager's minute (seen under load as 429s
# with Retry-After: 1).
PACING_WINDOW = 60.0 + 2.0
# An ask is answered at once or after one call (bounded by the client's timeout).
CALL_ASK_TIMEOUT = 30.0
# A push under a lease starts only with this much of it left: the client gives up on a
# call that does not answer in DEFAULT_TIMEOUT.
PUSH_CALL_MAX = DEFAULT_TIMEOUT + 1.0


@dataclass(frozen=True, slots=True)
class ChannelBudgets:
    """The channel manager's budgets. Pacing uses them as they are: at most this many calls."""

    availability_per_minute: int = 10
    restrictions_per_minute: int = 10
    reads_per_minute: int = 10


class ChannelManagerActor(Actor[ChannelMessage]):
    # The record away: the asker hears it (and waits for the record), the actor goes on.
    replied_errors = (StorageUnavailable,)
    THROTTLE_PAUSE = 60.0  # when a 429 names no Retry-After (Channex documents none)
    FAILURE_PAUSE = 60.0  # the first pause after a failure (Channex: "a minute")
    BACKOFF_MAX = 900.0
    # Of the account's reads a minute, those the background leaves for people (the
    # operator's channel grid reads twice a look: two looks a minute).
    KEPT_FOR_PEOPLE = 4

    def __init__(self, client: ChannelManagerClient, db: Database, clock: Clock,
                 budgets: ChannelBudgets | None = None, jitter: Callable[[], float] = random.random,
                 counters: CallCounters | None = None, mode: Mode = "live") -> None:
        # `test`: the test sandbox's actor, pushing the test twins' values (docs/decisions/0115).
        self.mode: Mode = mode
        self._modes: dict[int, str] = {}  # property id -> its mode in the record
        self._client = client
        self._db = db
        self._clock = clock
        self._budgets = budgets or ChannelBudgets()
        self._jitter = jitter
        self.counters = counters or CallCounters()

    def lane_of(self, message: ChannelMessage) -> Hashable | None:
        match message:
            case Push(property_id):
                return ("push", property_id)
            case ReadGrid():
                return "reads"
            case CreateProperty() | CreateRoomType() | CreateRatePlan():
                return "catalog"
            case ReadFeed() | AckRevision():
                return "feed"
        return None  # answered from the actor's own state, at once

    async def handle(self, message: ChannelMessage) -> Any:
        match message:
            case Push():
                return await self._push(message)
            case ReadGrid():
                return await self._read(message)
            case CreateProperty(title, currency, timezone):
                return await self._create(lambda: self._client.create_property(title, currency, timezone))
            case CreateRoomType(cm_property_id, title, rooms):
                return await self._create(lambda: self._client.create_room_type(cm_property_id, title, rooms))
            case CreateRatePlan(cm_property_id, cm_room_type_id, title, occupancies):
                return await self._create(
                    lambda: self._client.create_rate_plan(cm_property_id, cm_room_type_id, title, occupancies))
            case ReadFeed(max_pages):
                return await self._read_feed(max_pages)
            case AckRevision(revision_id):
                return await self._ack(revision_id)
        raise TypeError(f"not a channel-manager message: {message!r}")

    def _count(self, kind: str, outcome: str) -> None:
        # The operator's metrics are the channel manager's: the test sandbox's calls (and an
        # integrator's armed faults) are not counted.
        if self.mode == "live":
            CM_CALLS.labels(kind, outcome).inc()

    async def _charge(self, name: str, whose: str, limit: int) -> float | None:
        """Count one call against the budget every process shares; None when it fits, else
        the seconds until it would."""
        if self.mode != "live":  # the test sandbox's budgets are its own, never the account's
            name = f"{self.mode}-{name}"
        # Its own span: a slow push shows whether it waited on the channel manager's budget.
        with spans.span("channel budget", attributes={"connectapi.budget": name, "connectapi.limit": limit}) as paced:
            wait = await pace_call(self._db, self._clock.shared_time(), name, whose, limit, PACING_WINDOW)
            if wait is not None:
                paced.set_attribute("connectapi.deferred_seconds", wait)
        return wait

    async def _mode_of(self, property_id: int) -> str | None:
        """The property's mode as the record has it (None: no such property); a property's
        mode never changes, so it is asked once."""
        if property_id not in self._modes:
            found = await properties.mode_of(self._db, property_id)
            if found is None:
                return None
            self._modes[property_id] = found
        return self._modes[property_id]

    async def _push(self, message: Push) -> PushOutcome:
        recorded = await self._mode_of(message.property_id)
        if message.mode != self.mode or recorded not in (None, self.mode):
            # A bug of ours, and the worst one: a test value on a real channel (or a live one
            # lost in the sandbox). Refused, never sent; the cells stay dirty.
            mode = recorded or message.mode
            log.error("a push of a %s property (%d) reached the %s channel manager: refused, nothing sent",
                      mode, message.property_id, self.mode)
            return PushOutcome(False, error=f"a {mode} property's push reached the {self.mode} channel "
                                            "manager: refused", retry_at=self._clock.monotonic() + 60)
        # The property's pause after a failure is the record's (cm_next_attempt_at): the
        # sender read it with the property's ids and did not ask while it lasts.
        kind = message.kind
        now = self._clock.monotonic()
        if message.deadline is not None and message.deadline - now < PUSH_CALL_MAX:
            # The sender's lease would run out before the call could: it renews and asks again.
            return PushOutcome(False, retry_at=now, deferred=True)
        limit = (self._budgets.availability_per_minute if kind == "availability"
                 else self._budgets.restrictions_per_minute)
        wait = await self._charge(f"cm-{kind}", str(message.property_id), limit)
        if wait is not None:
            # From the answer, not from `now`: the record reads its instant only once it
            # holds the budget's rows (after any wait for a connection or a lock), so the
            # wait runs from then, and counted from before the statement it would be early.
            return PushOutcome(False, retry_at=self._clock.monotonic() + wait, deferred=True)
        self.counters.calls += 1
        try:
            # At an instant, not after a span: the budget's statement took time, and the
            # deadline may be behind us already (the call is then cut short at once).
            with trio.move_on_at(math.inf if message.deadline is None else message.deadline) as lease_ends:
                if kind == "availability":
                    answer = await self._client.push_availability(message.values)
                else:
                    answer = await self._client.push_restrictions(message.values)
            if lease_ends.cancelled_caught:
                # Our lease, not the channel manager: no failure and no backoff. The cells
                # stay dirty; the sender renews its lease and sends them again (the same
                # values, should the cut call have landed).
                log.info("a push for property %d was cut short: its lease was running out", message.property_id)
                return PushOutcome(False, retry_at=self._clock.monotonic(), deferred=True)
        except ChannelManagerError as exc:
            self._count(kind, "throttled" if isinstance(exc, Throttled) else "failed")
            return self._failed(message.failures, exc)
        self._count(kind, "refused" if answer.refusals else "ok")
        return PushOutcome(True, answer)

    async def _read(self, message: ReadGrid) -> GridRead:
        # One window for every read; the background (the reconciler) stops short of it, so a
        # person's look at the grid does not wait behind a minute of background reads.
        reads = self._budgets.reads_per_minute
        limit = reads if message.interactive else max(1, reads - self.KEPT_FOR_PEOPLE)
        wait = await self._charge("cm-reads", "", limit)
        if wait is not None:
            return GridRead(None, retry_at=self._clock.monotonic() + wait)
        self.counters.calls += 1
        self._count(f"read-{message.kind}", "made")
        try:
            if message.kind == "availability":
                grid: AvailabilityGrid | RestrictionsGrid = await self._client.read_availability(
                    message.cm_property_id, message.first, message.last)
            else:
                grid = await self._client.read_restrictions(message.cm_property_id, message.first, message.last)
        except ChannelManagerError as exc:
            return GridRead(None, str(exc))
        return GridRead(grid)

    async def _create(self, call: Callable[[], Any]) -> Created:
        self.counters.calls += 1
        try:
            return Created(str(await call()))
        except ChannelManagerError as exc:
            return Created(None, str(exc))

    async def _read_feed(self, max_pages: int) -> FeedRead:
        try:
            feed = await self._client.booking_feed(max_pages=max_pages)
        except ChannelManagerError as exc:
            return FeedRead(error=str(exc))
        return FeedRead(feed.revisions, feed.complete)

    async def _ack(self, revision_id: str) -> Acked:
        """Only a 2xx acknowledges. A 404 says the revision is gone (acknowledged already, or
        withdrawn): nothing is left to do. Anything else (401, 403, 5xx, no answer) is asked
        again by a later round: the channel manager keeps offering the revision meanwhile."""
        try:
            await self._client.ack_booking_revision(revision_id)
        except Rejected as exc:
            if exc.status == 404:
                return Acked(True, refused=str(exc))
            log.warning("acknowledging a booking revision was refused: %s", exc)
            return Acked(False, error=str(exc))
        except ChannelManagerError as exc:
            log.warning("acknowledging a booking revision failed: %s", exc)
            return Acked(False, error=str(exc))
        return Acked(True)

    def _failed(self, failures_before: int, exc: ChannelManagerError) -> PushOutcome:
        """The pause a failed call earns, from the failures in a row the record counted
        before it; the sender records both (the actor keeps no pause of its own)."""
        now = self._clock.monotonic()
        failures = failures_before
        if isinstance(exc, Throttled):
            self.counters.throttled += 1
            pause = exc.retry_after if exc.retry_after is not None else self.THROTTLE_PAUSE
        else:
            failures += 1
            base = min(self.BACKOFF_MAX, self.FAILURE_PAUSE * 2 ** min(failures - 1, 16))
            # Never less than the minute Channex asks for; jitter in [base, 1.25 base) so
            # that properties failed together do not all come back at one instant.
            pause = base * (1 + self._jitter() / 4)
            if isinstance(exc, Rejected):
                pause = self.BACKOFF_MAX  # our fault: retrying soon will not help
        log.warning("channel manager call failed (%s); property paused %.1fs", exc, pause)
        return PushOutcome(False, error=str(exc), retry_at=now + pause, failures=failures)


@dataclass
class CallCounters:
    """Calls made and 429s drawn, kept across the actor's restarts (tests and the bench read them)."""

    calls: int = 0
    throttled: int = 0
