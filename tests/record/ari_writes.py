"""A planned ARI write applied as the property's writer applies it (one statement), for
record tests that need cells written: no key, a cells budget nothing here spends."""

from __future__ import annotations

from datetime import datetime

from connectapi.actors.ari_writer import AriWrites
from connectapi.actors.messages.property_writer import ApplyWrite, WriteOutcome
from connectapi.budgets.charges import Charge
from connectapi.domain.ari_write import WritePlan
from connectapi.storage.database import Database
from connectapi.storage.idempotency import Stored


async def apply_write(db: Database, property_id: int, plan: WritePlan, now: datetime) -> WriteOutcome:
    unbounded = Charge("cells", str(property_id), 1, 10**9, 60.0, plan.requested_cells, plan.requested_cells)
    done = await AriWrites(db, property_id).apply(ApplyWrite(None, plan, now, None, unbounded, None))
    assert not isinstance(done, Stored), "a write without a key finds no key held"
    return done
