"""The PropertyWriter's protocol: every change to a property's inventory and record.

Replies are domain outcomes: what happened, never an HTTP status or body (the front
makes those). An outcome is also what an idempotency key keeps: `stored()` is written in
the write's own transaction and `outcome_from_stored` brings it back for a replay, which
the front then answers exactly as it answered the first time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...domain.ari_write import WritePlan
from ...domain.booking_models import BookingIn, BookingPatchIn
from ...domain.errors import ApiError
from ...engine import Ask
from ...storage.ota import Received


@dataclass(frozen=True, slots=True)
class IdempotencyClaim:
    """The idempotency key a request holds; the writer records the outcome under it."""

    route: str
    key: str


@dataclass(frozen=True, slots=True)
class Refused:
    """A refusal made against the record (unknown ids, no availability ...): nothing was
    written but the outcome under the idempotency key."""

    error: ApiError

    def stored(self) -> dict[str, Any]:
        return {"outcome": "refused", "code": self.error.code, "message": self.error.message,
                "details": self.error.details}


@dataclass(frozen=True, slots=True)
class WriteAccepted:
    """An ARI write in the record: the contract's write result (batch, counts, rejected)."""

    result: dict[str, Any]

    @property
    def accepted_cells(self) -> int:
        return int(self.result["acceptedCells"])

    def stored(self) -> dict[str, Any]:
        return {"outcome": "write-accepted", "result": self.result}


@dataclass(frozen=True, slots=True)
class BookingDone:
    """A booking as it stands after the request: `made` when this request created, changed
    or cancelled it (False for a repeat, or a change that changed nothing); whether its inventory moved and e-mails were queued
    (work for the inventory drain and the outbox)."""

    booking: dict[str, Any]  # the contract's Booking resource
    made: bool
    inventory_moved: bool = False
    mails_queued: bool = False

    def stored(self) -> dict[str, Any]:
        return {"outcome": "booking", "made": self.made, "booking": self.booking}


WriteOutcome = WriteAccepted | Refused
BookingOutcome = BookingDone | Refused
StoredOutcome = WriteAccepted | BookingDone | Refused


def outcome_from_stored(stored: dict[str, Any]) -> StoredOutcome | None:
    """An outcome kept under an idempotency key; None for a record of an older version,
    which kept the answer itself."""
    match stored.get("outcome"):
        case "refused":
            return Refused(ApiError(stored["code"], stored["message"], stored.get("details")))
        case "write-accepted":
            return WriteAccepted(stored["result"])
        case "booking":
            return BookingDone(stored["booking"], bool(stored["made"]))
    return None


@dataclass(frozen=True, slots=True)
class ApplyWrite(Ask[WriteOutcome]):
    """Apply a planned write whose cells are already charged."""

    key_id: int
    plan: WritePlan
    now: datetime
    claim: IdempotencyClaim | None


@dataclass(frozen=True, slots=True)
class CreateBooking(Ask[BookingOutcome]):
    """Create a booking whose budgets are already charged."""

    key_id: int
    scopes: tuple[str, ...]
    body: BookingIn
    now: datetime
    claim: IdempotencyClaim | None


@dataclass(frozen=True, slots=True)
class ModifyBooking(Ask[BookingOutcome]):
    """Change an API booking by a merge patch; its budgets are already charged."""

    key_id: int
    booking_id: int
    patch: BookingPatchIn
    if_match: frozenset[int] | None  # the revisions the caller's If-Match names; None: any
    now: datetime
    claim: IdempotencyClaim | None


@dataclass(frozen=True, slots=True)
class CancelBooking(Ask[BookingOutcome]):
    key_id: int
    booking_id: int
    reason: str | None
    now: datetime


@dataclass(frozen=True, slots=True)
class RevisionSettled:
    """How an OTA revision ended (`applied`, `stale`, `unmapped`, `refused`, or `already
    settled` by another process), and the work it left for others."""

    state: str
    note: str | None = None
    booking_id: int | None = None
    inventory_moved: bool = False
    events: int = 0
    mails: int = 0


@dataclass(frozen=True, slots=True)
class ApplyOtaRevision(Ask[RevisionSettled]):
    """Apply a stored OTA revision of this property: its booking, its inventory, its event."""

    revision: Received
    now: datetime


@dataclass(frozen=True, slots=True)
class RefuseOtaRevision(Ask[RevisionSettled]):
    """Keep a revision that could not be applied as `refused`, and tell the owner why."""

    revision: Received
    why: str
    now: datetime


WriterMessage = ApplyWrite | CreateBooking | ModifyBooking | CancelBooking | ApplyOtaRevision | RefuseOtaRevision
