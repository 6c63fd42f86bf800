"""The PropertyWriter's protocol: every change to a property's inventory and record.

Replies are domain outcomes: what happened, never an HTTP status or body (the front
makes those). An outcome is also what an idempotency key keeps: `stored()` is written in
the write's own transaction and `outcome_from_stored` brings it back for a replay, which
the front then answers exactly as it answered the first time.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict

from pydantic import TypeAdapter

from ...budgets.charges import Charge
from ...domain.ari_write import RejectedCells, Resource, WritePlan
from ...domain.booking_models import BookingIn, BookingPatchIn
from ...domain.errors import ApiError
from ...engine import Ask
from ...storage.idempotency import Stored
from ...storage.ota import Received
from ...storage.records import Booking
from .kept_booking_bodies import booking_from_body


class StoredRefusal(TypedDict):
    """A refusal as an idempotency key keeps it."""

    outcome: Literal["refused"]
    code: str
    message: str
    details: Any  # the refusal's details, as the contract's error envelope carries them


class StoredWriteResult(TypedDict):
    """The contract's write result under the names it gives them (records kept before the
    outcome was typed carry `pushedBy` and `poll` too, and read back the same way)."""

    batchId: str
    resource: str
    requestedCells: int
    acceptedCells: int
    noopCells: int
    rejected: list[RejectedCells]


class StoredWrite(TypedDict):
    outcome: Literal["write-accepted"]
    result: StoredWriteResult


class StoredBooking(TypedDict):
    outcome: Literal["booking"]
    made: bool
    replay: bool
    record: Any  # the Booking record as JSON (its TypeAdapter's dump)


StoredAs = StoredRefusal | StoredWrite | StoredBooking


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

    def stored(self) -> StoredRefusal:
        return {"outcome": "refused", "code": self.error.code, "message": self.error.message,
                "details": self.error.details}


@dataclass(frozen=True, slots=True)
class RejectedEntry:
    """An entry of a write refused whole (outside its plan's rate policy): its cells and why."""

    cells: int
    error: str


@dataclass(frozen=True, slots=True)
class WriteAccepted:
    """An ARI write in the record: its batch, its counts and the entries refused whole.
    The contract's write result is made of it by the front (http/api/ari.py)."""

    batch_id: uuid.UUID
    resource: Resource
    requested_cells: int
    accepted_cells: int
    noop_cells: int
    rejected: tuple[RejectedEntry, ...]

    def stored(self) -> StoredWrite:
        return {"outcome": "write-accepted", "result": {
            "batchId": str(self.batch_id), "resource": self.resource.value,
            "requestedCells": self.requested_cells, "acceptedCells": self.accepted_cells,
            "noopCells": self.noop_cells, "rejected": [{"cells": r.cells, "error": r.error} for r in self.rejected]}}

    @staticmethod
    def from_stored(result: StoredWriteResult) -> WriteAccepted:
        return WriteAccepted(uuid.UUID(result["batchId"]), Resource(result["resource"]), int(result["requestedCells"]),
                             int(result["acceptedCells"]), int(result["noopCells"]),
                             tuple(RejectedEntry(int(r["cells"]), str(r["error"])) for r in result["rejected"]))


_BOOKING_RECORD = TypeAdapter(Booking)


@dataclass(frozen=True, slots=True)
class BookingDone:
    """A booking as it stands after the request: `made` when this request created, changed
    or cancelled it (False for a repeat, or a change that changed nothing); `replay` when it
    is the answer to a repeat of an earlier request; whether its inventory moved and e-mails
    were queued (work for the inventory drain and the outbox). The contract's Booking is made
    of it by the front (http/api/booking_body.py)."""

    booking: Booking
    made: bool
    replay: bool = False
    inventory_moved: bool = False
    mails_queued: bool = False

    def stored(self) -> StoredBooking:
        return {"outcome": "booking", "made": self.made, "replay": self.replay,
                "record": _BOOKING_RECORD.dump_python(self.booking, mode="json")}


WriteOutcome = WriteAccepted | Refused
BookingOutcome = BookingDone | Refused
StoredOutcome = WriteAccepted | BookingDone | Refused


def outcome_from_stored(stored: dict[str, Any], property_id: int) -> StoredOutcome | None:
    """An outcome kept under an idempotency key of `property_id`; None for a record of an
    older version, which kept the answer itself."""
    match stored.get("outcome"):
        case "refused":
            return Refused(ApiError(stored["code"], stored["message"], stored.get("details")))
        case "write-accepted":
            return WriteAccepted.from_stored(stored["result"])
        case "booking" if "record" in stored:
            return BookingDone(_BOOKING_RECORD.validate_python(stored["record"]), bool(stored["made"]),
                               replay=bool(stored["replay"]))
        case "booking":
            # Kept before the outcome was typed: the contract's Booking as it was answered.
            return BookingDone(booking_from_body(stored["booking"], property_id), bool(stored["made"]),
                               replay=bool(stored["booking"].get("replay", False)))
    return None


@dataclass(frozen=True, slots=True)
class KeyedWrite:
    """An ARI write's idempotency key, claimed by the writer in the write's own statement."""

    route: str
    key: str
    body_hash: bytes


@dataclass(frozen=True, slots=True)
class ApplyWrite(Ask[WriteOutcome | Stored]):
    """Apply a planned write: the writer charges its cells (`cells`, counted at
    `budget_now`), claims its key and writes, in one statement. Answers the outcome, or
    what holds the key (`Stored`: a replay, a request in flight, or another body)."""

    key_id: int | None  # the batch's key; None for a write no key made (record tests)
    plan: WritePlan
    now: datetime
    key: KeyedWrite | None
    cells: Charge
    budget_now: float | None


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


# How long an OTA revision's apply may hold its property's lock before it is rolled back
# (a try the intake counts; decision 0126). A revision applies in milliseconds.
OTA_APPLY_WITHIN = 10.0


@dataclass(frozen=True, slots=True)
class ApplyOtaRevision(Ask[RevisionSettled]):
    """Apply a stored OTA revision of this property: its booking, its inventory, its event;
    rolled back (RecordBusy) if it runs past `within` seconds."""

    revision: Received
    now: datetime
    # The asker's Clock.shared_time(): the events' deliveries fall due on the database's
    # clock (None), or at a test's.
    shared: float | None
    within: float = OTA_APPLY_WITHIN


@dataclass(frozen=True, slots=True)
class RefuseOtaRevision(Ask[RevisionSettled]):
    """Keep a revision that could not be applied as `refused`, and tell the owner why."""

    revision: Received
    why: str
    now: datetime


WriterMessage = ApplyWrite | CreateBooking | ModifyBooking | CancelBooking | ApplyOtaRevision | RefuseOtaRevision
