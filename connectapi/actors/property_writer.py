"""One writer per property: its ARI writes, its bookings and its OTA revisions, applied one
at a time. Every change to the property's inventory goes through it.

A request's budgets are counted in the record by the gates before it gets here
(http/api/gates.py, connectapi/budgets); an ARI write's cells are charged in the write's
own statement (ari_writer.py). A write awaits the record (and may wait on the property's row lock
held by another process), and nothing else waits behind it but the property's next write.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

import outcome
from opentelemetry.trace import SpanContext

from ..domain.ari_write import Resource
from ..domain.errors import ApiError
from ..engine import Actor
from ..storage.database import Database, StorageError
from .ari_writer import AriWrites
from .booking_writer import cancel_booking, create_booking, create_bookings, modify_booking
from .messages.property_writer import (ApplyOtaRevision, ApplyWrite, BookingDone, CancelBooking, CreateBooking,
                                       ModifyBooking, RefuseOtaRevision, RevisionSettled, WriteAccepted, WriterMessage)
from .ota_writer import apply_revision, refuse_revision
from .wakeups import Wakeups
from ..tracing import spans

log = logging.getLogger("connectapi.writer")


class PropertyWriter(Actor[WriterMessage]):
    # An unreachable record, or a transaction the record refused (rolled back whole), is the
    # asker's to report; the writer holds nothing the record does not (its copy of the
    # catalog is checked on every write), so neither is a reason to restart.
    replied_errors = (ApiError, StorageError)

    def __init__(self, property_id: int, db: Database, wakeups: Wakeups) -> None:
        self.property_id = property_id
        self._db = db
        self._wakeups = wakeups
        self._ari = AriWrites(db, property_id)

    def batch_key(self, message: WriterMessage) -> str | None:
        # Bookings queued behind one another share a transaction, and ARI writes a statement:
        # under load the lock, the round trip and the commit are paid once per batch instead
        # of once per booking or write.
        if isinstance(message, CreateBooking):
            return "create-booking"
        return "ari-write" if isinstance(message, ApplyWrite) else None

    def batch_takes(self, batch: list[WriterMessage], message: WriterMessage) -> bool:
        # A run of writes is one statement: bounded by its count and its cells.
        if isinstance(message, ApplyWrite):
            return AriWrites.takes([m for m in batch if isinstance(m, ApplyWrite)], message)
        return True

    async def handle_batch(self, messages: list[WriterMessage],
                           asked: list[SpanContext | None]) -> list[outcome.Outcome[Any]]:
        bookings = [m for m in messages if isinstance(m, CreateBooking)]
        if bookings:
            assert len(bookings) == len(messages), "a batch is of one kind"
            made = list(await create_bookings(self._db, self.property_id, bookings))
            for done in made:
                if isinstance(done, outcome.Value):
                    await self._committed(done.value, None)
            return list(made)
        writes = [m for m in messages if isinstance(m, ApplyWrite)]
        assert len(writes) == len(messages), "a batch is of one kind"
        applied = await self._ari.apply_together(writes, asked)
        # One wake-up for the run: the pushers read every dirty cell of the property anyway.
        moved = {w.plan.resource is Resource.AVAILABILITY for w, done in zip(writes, applied, strict=True)
                 if isinstance(done, outcome.Value) and isinstance(done.value, WriteAccepted)
                 and done.value.accepted_cells}
        if moved:
            await self._waking(self._wakeups.cells_dirty(self.property_id, True in moved, False in moved))
        return list(applied)

    async def handle(self, message: WriterMessage) -> Any:
        done = await self._apply(message)
        if isinstance(done, RevisionSettled) and isinstance(message, (ApplyOtaRevision, RefuseOtaRevision)):
            # The revision's apply, in the span the engine serves the intake's ask in.
            spans.note({"connectapi.property_id": self.property_id, "connectapi.revision_id": message.revision.id,
                        "connectapi.revision_state": done.state, "connectapi.events": done.events})
        await self._committed(done, message)
        return done

    async def _apply(self, message: WriterMessage) -> Any:
        match message:
            case ApplyWrite():
                return await self._ari.apply(message)
            case CreateBooking():
                return await create_booking(self._db, self.property_id, message)
            case ModifyBooking():
                return await modify_booking(self._db, self.property_id, message)
            case CancelBooking():
                return await cancel_booking(self._db, self.property_id, message.key_id, message.booking_id,
                                            message.reason, message.now)
            case ApplyOtaRevision(revision, now, shared, within):
                return await apply_revision(self._db, revision, now, within, shared)
            case RefuseOtaRevision(revision, why, now):
                return await refuse_revision(self._db, revision, why, now)
        raise TypeError(f"not a writer message: {message!r}")

    async def _committed(self, done: object, message: WriterMessage | None) -> None:
        """The work a commit left for others, told to whoever does it. A wake-up is a hint
        (each listener also sweeps the record): one that fails is logged, and the committed
        change is still answered as committed."""
        await self._waking(self._wake_for(done, message))

    async def _waking(self, wake: Awaitable[None]) -> None:
        try:
            await wake
        except Exception:  # noqa: BLE001 - a bug in waking must not turn a commit into a failure
            log.exception("property %d: the wake-up after a commit failed; the sweeps find the work",
                          self.property_id)

    async def _wake_for(self, done: object, message: WriterMessage | None) -> None:
        wakeups = self._wakeups
        match done:
            case WriteAccepted() if done.accepted_cells and isinstance(message, ApplyWrite):
                availability = message.plan.resource is Resource.AVAILABILITY
                await wakeups.cells_dirty(self.property_id, availability, not availability)
            case BookingDone():
                if done.inventory_moved:
                    await wakeups.cells_dirty(self.property_id, True, False)
                if done.mails_queued:
                    wakeups.mails_queued()
            case RevisionSettled():
                wakeups.revision_settled(self.property_id)
                if done.inventory_moved:
                    await wakeups.cells_dirty(self.property_id, True, False)
                if done.events:
                    wakeups.events_queued()
                if done.mails:
                    wakeups.mails_queued()
