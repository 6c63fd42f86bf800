"""One writer per property: its ARI writes, applied one at a time.

Kept apart from the PropertyActor on purpose: a write awaits the record (and may wait on
the property's row lock held by another process), and while an actor awaits it does not
serve its mailbox. Budgets must not wait behind a write.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..domain.ari_write import WritePlan
from ..domain.errors import ApiError
from ..engine import Actor
from ..storage.database import Database, StorageUnavailable
from .ari_writer import Answer, IdempotencyClaim, apply_write


@dataclass(frozen=True, slots=True)
class ApplyWrite:
    """Apply a planned write whose cells are already charged; answers an Answer."""

    key_id: int
    plan: WritePlan
    now: datetime
    claim: IdempotencyClaim | None


WriterMessage = ApplyWrite


class PropertyWriter(Actor[WriterMessage]):
    # An unreachable record is the asker's to report; it is no reason to restart.
    replied_errors = (ApiError, StorageUnavailable)

    def __init__(self, property_id: int, db: Database) -> None:
        self.property_id = property_id
        self._db = db

    async def handle(self, message: WriterMessage) -> Answer:
        return await apply_write(self._db, self.property_id, message.key_id, message.plan, message.now, message.claim)
