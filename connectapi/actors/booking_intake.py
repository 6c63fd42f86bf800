"""BookingIntake: OTA booking revisions in from the channel manager's feed.

A round pulls the feed (through the ChannelManagerActor), stores each revision as it
came (less any card data, taken out first: PCI), has the property's writer apply what is
stored and not yet applied (one transaction each, under the property's lock), and only
then acknowledges what is settled. A crash anywhere loses nothing: what was stored is
applied next round, and an unacknowledged revision is offered again by the channel
manager and is a no-op.

Only a 2xx or a 404 (the revision gone) settles an acknowledgement; any other answer leaves
the revision applied with its acknowledgement pending, asked again next round, and never
applied or announced again (applying takes only what is still 'received').

Rounds run when the channel manager notifies us (a trigger only: its notification carries
no data we trust) and on a timer, as a safety net for a notification that never came.

Several processes on one record take turns: a round runs under the intake's lease in the
record (a `round` lease: actors.lease_hold), renewed while it runs, so one process at a time reads the feed,
applies and acknowledges. A process woken while another holds the lease leaves it a
round more to run; one that dies mid-round leaves the lease to run out, and another
process takes the feed over from the record. The revision's own row lock still keeps an
apply to once if two rounds ever overlap (a holder stalled past its lease).
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta

import trio

from ..channel.client import FEED_MAX_PAGES
from ..domain import ota_bookings as ota_rules
from ..domain.ota_bookings import MalformedRevision
from ..domain.revision_screen import bounded
from ..engine import (ActorCrashed, ActorError, ActorUnavailable, AskTimeout, Clock, Mailbox, NextRound, Registry,
                      RoundsActor, Wake)
from ..storage import ota
from ..storage.leases import LeaseKind
from ..tracing import spans
from ..storage.database import LOCK_NOT_AVAILABLE, RECORD_AWAY, RECORD_BUSY, Database, RecordRefused, StorageError
from .lease_hold import HeldElsewhere, LeaseHolder
from .messages.channel_manager import AckRevision, ChannelMessage, ReadFeed
from .messages.property_writer import ApplyOtaRevision, RefuseOtaRevision, RevisionSettled, WriterMessage

log = logging.getLogger("connectapi.intake")


@dataclass
class Round:
    """What a round did: revisions stored, applied (each property's writer wakes whoever
    acts on what it committed), acknowledged."""

    stored: int = 0
    settled: dict[str, int] = field(default_factory=Counter)
    acknowledged: int = 0
    # Of those, offered again after their acknowledgement and acknowledged again for the
    # first time by this intake (ours lost on its way): they leave the feed too.
    acknowledged_again: int = 0
    more: bool = False  # more is left than a round takes: the next round starts at once


ROUND_BATCH = 500  # revisions a round applies, and acknowledges, at most
ACKED_AGAIN_KEPT = 10_000  # revision ids acknowledged again that an intake remembers
# Properties whose revisions a round applies side by side: a slow one holds up no other. Each
# holds a connection of the process's pool (ten) while it applies: most stay for requests.
PROPERTIES_AT_ONCE = 4
# Applies of one revision that ran past their time (ApplyOtaRevision.within) or were rolled
# back for now, a round apart, before it is refused: kept, the owner told, acknowledged.
APPLY_TRIES = 3
ASK_TIMEOUT = 30.0
# The intake's lease: held for LEASE past each renewal, renewed every RENEW_SECONDS while a
# round runs, so a live holder never loses it and a dead one's runs out within LEASE.
LEASE_NAME = "booking-intake"
LEASE = timedelta(seconds=30)
RENEW_SECONDS = 10.0


class BookingIntake(RoundsActor[Wake]):
    name = "booking-intake"
    # The record away, or the channel-manager actor restarting: the revisions wait where
    # they are (the feed, the record) for the next round.
    waits_out = (*RECORD_AWAY, ActorError)
    waits_out_briefly = RECORD_BUSY

    def __init__(self, db: Database, clock: Clock, channel: Mailbox[ChannelMessage],
                 writers: Registry[int, WriterMessage], sweep_seconds: float = 60.0,
                 feed_pages: int = FEED_MAX_PAGES, batch: int = ROUND_BATCH, holder: str | None = None,
                 mode: str = "live") -> None:
        self._mode = mode  # `test`: TwinsIntake's
        self._db = db
        self._clock = clock
        self._channel = channel
        self._writers = writers
        self.interval = sweep_seconds
        self._feed_pages = feed_pages
        self._batch = batch
        self._unknown_properties: set[str] = set()
        self._leases = LeaseHolder(db, clock, holder)
        # Revisions acknowledged again, the latest last: one offered after that too is a feed
        # that does not take our acknowledgements, and no reason to read it again at once.
        self._acked_again: OrderedDict[str, None] = OrderedDict()

    async def round(self) -> NextRound:
        try:
            async with self._leases.hold(LeaseKind.ROUND, LEASE_NAME, LEASE.total_seconds(), RENEW_SECONDS) as held:
                done = await self.traced_pull()
        except HeldElsewhere as other:
            # Another process is in a round: it runs one more when it ends (the take asked
            # it to). Look again when its lease would run out, in case it died.
            return NextRound(due_in=other.remaining + 1.0)
        if held.error is not None:  # the record could not be asked: waited out as the record away
            raise held.error
        if held.lost:  # the process holding the lease now goes on
            return NextRound()
        return NextRound(more=done.more or held.again)

    async def traced_pull(self) -> Round:
        """`pull` in a span of its own: each revision's apply is served under it."""
        with spans.span("booking intake round", attributes={"connectapi.mode": self._mode}) as traced:
            done = await self.pull()
            traced.set_attributes({"connectapi.stored": done.stored, "connectapi.acknowledged": done.acknowledged,
                                   "connectapi.settled": sum(done.settled.values())})
        return done

    async def pull(self) -> Round:
        done = Round()
        feed = await self._channel.ask(ReadFeed(self._feed_pages), ASK_TIMEOUT)
        if feed.error is not None:
            log.warning("intake: could not read the booking feed: %s", feed.error)
        await self._store(feed.revisions, done)
        waiting = await ota.received(self._db, self._batch, self._mode)
        taken, failure = await self._apply_all(waiting, done)
        acked = 0
        for revision_id in await ota.unacknowledged(self._db, self._batch, self._mode):
            if not await self._ack(revision_id):
                break  # the rest wait for a later round
            acked += 1
        done.acknowledged += acked
        if failure is not None:
            raise failure  # a bug of ours, once what was settled is acknowledged
        # Revisions new to the record, or acknowledged for the first time, leave the feed for
        # good, and so does one acknowledged again once (our acknowledgement was lost). One
        # acknowledged again before does not count: a channel manager that keeps offering it
        # would have the feed read in a loop.
        took_something = bool(done.stored or acked or done.acknowledged_again)
        if not feed.complete and not took_something:
            log.warning("intake: the pages of the booking feed a round reads hold nothing it can take")
        # At once again only when this round cleared a whole batch: revisions whose writer
        # cannot take them (down, say) would otherwise have the feed read in a loop.
        done.more = (len(waiting) == self._batch and taken == len(waiting)) or acked == self._batch or (
            not feed.complete and took_something)
        return done

    async def _apply_all(self, waiting: list[ota.Received], done: Round) -> tuple[int, Exception | None]:
        """Each property's waiting revisions in the order they came, properties side by side
        (PROPERTIES_AT_ONCE at a time): one whose apply is slow, or whose record refuses for
        now, holds up its own property's others only, never another property's nor the
        acknowledgements. Answers how many were settled, and a failure that is a bug."""
        by_property: dict[int, list[ota.Received]] = {}
        for item in waiting:
            by_property.setdefault(item.property_id, []).append(item)
        limiter = trio.CapacityLimiter(PROPERTIES_AT_ONCE)
        taken = 0
        failed: list[Exception] = []

        async def apply_property(items: list[ota.Received]) -> None:
            nonlocal taken
            async with limiter:
                try:
                    for item in items:
                        applied = await self._apply(item)
                        if applied is None:
                            return  # the property's others wait behind it for a later round
                        taken += 1
                        done.settled[applied.state] += 1
                except StorageError as exc:
                    # The record, for this property now: its revisions wait for a later round.
                    log.warning("intake: the revisions of property %d wait: %s", items[0].property_id, exc)
                except Exception as exc:  # noqa: BLE001 - raised by the round, once the others are done
                    failed.append(exc)

        async with trio.open_nursery() as nursery:
            for items in by_property.values():
                nursery.start_soon(apply_property, items)
        return taken, (failed[0] if failed else None)

    async def _apply(self, item: ota.Received) -> RevisionSettled | None:
        """The revision applied by its property's writer; refused if the record refuses it
        for good (or a bug of ours crashes on it), or once APPLY_TRIES applies ran out of time
        or were rolled back for now; None if it was not applied now and may be next round
        (the writer down, busy or restarting; a try that ran out of time)."""
        if item.attempts >= APPLY_TRIES:
            # Its tries are spent (its refusal failed last round): refused without another.
            why = f"it could not be applied in {item.attempts} tries"
            return await self._refuse(item, why)
        try:
            applying = ApplyOtaRevision(item, self._clock.now(), self._clock.shared_time())
            return await self._writers.ask(item.property_id, applying, ASK_TIMEOUT)
        except RecordRefused as exc:
            if exc.sqlstate == LOCK_NOT_AVAILABLE:
                # It waited for the property's lock: no fault of the revision's, not a try.
                log.warning("intake: revision %s waits for its property's lock: %s", item.id, exc)
                return None
            if exc.transient:
                # Ours (past its time) says itself; the record's says its kind, not its SQL.
                reason = str(exc) if exc.__cause__ is None else type(exc.__cause__).__name__
                tries = await ota.count_attempt(self._db, item.seq, f"try {item.attempts + 1} of {APPLY_TRIES}: "
                                                f"{reason}")
                if tries < APPLY_TRIES:
                    log.warning("intake: revision %s was rolled back for now (try %d of %d): %s", item.id, tries,
                                APPLY_TRIES, exc)
                    return None
                log.error("intake: revision %s could not be applied in %d tries: %s", item.id, tries, exc)
                why = f"it could not be applied in {tries} tries ({reason})"
            else:
                log.error("intake: revision %s could not be applied: %s", item.id, exc)
                why = f"could not be applied ({type(exc.__cause__ or exc).__name__})"
        except ActorCrashed as exc:
            log.error("intake: revision %s crashed the writer: %s", item.id, exc)
            why = f"could not be applied ({type(exc.__cause__ or exc).__name__})"
        except (ActorUnavailable, AskTimeout) as exc:
            log.warning("intake: the writer of property %d cannot take revision %s now: %s", item.property_id,
                        item.id, exc)
            return None
        return await self._refuse(item, why)

    async def _refuse(self, item: ota.Received, why: str) -> RevisionSettled | None:
        try:
            return await self._writers.ask(item.property_id, RefuseOtaRevision(item, why, self._clock.now()),
                                           ASK_TIMEOUT)
        except (RecordRefused, ActorCrashed, ActorUnavailable, AskTimeout) as exc:
            log.error("intake: revision %s could not be kept as refused either: %s", item.id, exc)
            return None

    async def _store(self, feed: list[dict[str, object]], done: Round) -> None:
        properties = await ota.property_ids_by_cm(self._db, self._mode)
        for as_came in feed:
            # PCI: the card goes first, before anything here can store, log or tell it.
            raw = ota_rules.without_card(as_came)
            try:
                revision_id, system_id, cm_property, cm_booking = ota_rules.revision_key(raw)
                revised_at = ota_rules.revised_at(raw)
            except MalformedRevision as exc:
                # Nothing to file it under: leave it in the feed (the channel manager tells the
                # property after 30 minutes) and say so in the log.
                log.error("intake: a revision in the feed cannot be stored: %s", exc)
                continue
            property_id = properties.get(cm_property)
            if property_id is None:
                if cm_property not in self._unknown_properties:
                    self._unknown_properties.add(cm_property)
                    log.warning("intake: revisions for a channel-manager property we do not map are left alone")
                continue
            # Kept for review as it came, but bounded: the feed is input (decision 0126).
            kept, cuts = bounded(raw)
            try:
                stored = await ota.store_revision(self._db, revision_id, system_id, property_id, cm_booking,
                                                  revised_at, kept, cuts, self._clock.now())
            except RecordRefused as exc:
                if exc.transient:
                    raise
                # A value the record cannot keep, that nothing here foresaw: this one item stays
                # in the feed (the channel manager tells the property), the others go on.
                log.error("intake: revision %s cannot be stored: %s", revision_id, exc)
                continue
            if stored.outcome == "clash":
                log.warning("intake: revision %s of property %d repeats the id or system id of an earlier revision "
                            "of another booking, or names another property's booking: kept for review",
                            revision_id, property_id)
            if stored.outcome != "again":
                done.stored += 1
            elif stored.ack_now:
                # Nothing to apply, only the acknowledgement to give. One still pending is
                # given below, once a round, with the others.
                if await self._ack(revision_id):
                    done.acknowledged += 1
                    if revision_id not in self._acked_again:
                        done.acknowledged_again += 1
                    self._acked_again[revision_id] = None
                    self._acked_again.move_to_end(revision_id)
                    if len(self._acked_again) > ACKED_AGAIN_KEPT:
                        self._acked_again.popitem(last=False)

    async def _ack(self, revision_id: str) -> bool:
        acked = await self._channel.ask(AckRevision(revision_id), ASK_TIMEOUT)
        if acked.refused is not None:
            log.warning("intake: the channel manager refused an acknowledgement: %s", acked.refused)
        if not acked.done:
            log.warning("intake: could not acknowledge a revision: %s", acked.error)
            return False
        await ota.acknowledged(self._db, revision_id, self._clock.now())
        return True


class TwinsIntake(BookingIntake):
    """The intake of this process's test sandbox: the test twins' OTA revisions
    (docs/decisions/0115-test-mode-twins.md). Each process reads its own test sandbox, so a
    round takes no lease: no other process reads that feed."""

    def __init__(self, db: Database, clock: Clock, channel: Mailbox[ChannelMessage],
                 writers: Registry[int, WriterMessage], sweep_seconds: float = 60.0) -> None:
        super().__init__(db, clock, channel, writers, sweep_seconds, mode="test")

    async def round(self) -> NextRound:
        return NextRound(more=(await self.traced_pull()).more)
