"""One writer per property: its ARI writes and its bookings, applied one at a time.

Kept apart from the PropertyActor on purpose: a write awaits the record (and may wait on
the property's row lock held by another process), and while an actor awaits it does not
serve its mailbox. Budgets must not wait behind a write.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import outcome

from ..domain.ari_write import WritePlan
from ..domain.errors import ApiError
from ..engine import Actor
from ..storage.database import Database, StorageUnavailable
from .ari_writer import Answer, IdempotencyClaim, apply_write
from .booking_writer import CreateBooking, Outcome, cancel_booking, create_booking, create_bookings


@dataclass(frozen=True, slots=True)
class ApplyWrite:
    """Apply a planned write whose cells are already charged; answers an Answer."""

    key_id: int
    plan: WritePlan
    now: datetime
    claim: IdempotencyClaim | None


@dataclass(frozen=True, slots=True)
class CancelBooking:
    key_id: int
    booking_id: int
    reason: str | None
    now: datetime


WriterMessage = ApplyWrite | CreateBooking | CancelBooking


class PropertyWriter(Actor[WriterMessage]):
    # An unreachable record, or a transaction the record refused (rolled back whole), is the
    # asker's to report; the writer holds no state, so neither is a reason to restart.
    replied_errors = (ApiError, StorageUnavailable, asyncpg.PostgresError)

    def __init__(self, property_id: int, db: Database) -> None:
        self.property_id = property_id
        self._db = db

    def batch_key(self, message: WriterMessage) -> str | None:
        # Bookings queued behind one another share a transaction: under load the lock, the
        # BEGIN and the COMMIT are paid once per batch instead of once per booking.
        return "create-booking" if isinstance(message, CreateBooking) else None

    async def handle_batch(self, messages: list[WriterMessage]) -> list[outcome.Outcome[Any]]:
        bookings = [m for m in messages if isinstance(m, CreateBooking)]
        assert len(bookings) == len(messages), "only bookings are batched"
        return list(await create_bookings(self._db, self.property_id, bookings))

    async def handle(self, message: WriterMessage) -> Answer | Outcome:
        match message:
            case ApplyWrite():
                return await apply_write(self._db, self.property_id, message.key_id, message.plan, message.now,
                                         message.claim)
            case CreateBooking():
                return await create_booking(self._db, self.property_id, message)
            case CancelBooking():
                return await cancel_booking(self._db, self.property_id, message.key_id, message.booking_id,
                                            message.reason, message.now)
