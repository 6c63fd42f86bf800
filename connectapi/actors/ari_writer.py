"""A property's ARI writes, each in one statement (docs/decisions/0132-a-keyed-write-in-one-statement.md).

The writer keeps the property's catalog (room types, rate plans and their policies,
currency) and checks each write against it without asking the record; the write's one
statement (storage/sql/connectapi_write_cells.sql) takes the property's lock, checks
that the catalog's version is still the one checked against, charges the cells, claims
the idempotency key, writes the cells and the batch, and keeps the outcome under the key.
A catalog that moved meanwhile is read again and the write checked again: nothing was
done. Run by the property's writer, so writes of a property are applied one at a time
in this process; the row lock serialises them across processes.
"""

from __future__ import annotations

import uuid

from ..budgets.charges import Counted, Verdict, refusal
from ..budgets.window import WindowState
from ..domain import idempotency as idem
from ..domain.ari_write import WriteCatalog, check_write
from ..storage import ari
from ..storage.database import Database, RecordBusy
from ..storage.idempotency import Stored
from ..tracing import spans
from .messages.property_writer import ApplyWrite, Refused, RejectedEntry, WriteAccepted, WriteOutcome

# A catalog changed this often between a read and the write is an operator scripting it:
# the write is answered busy (retry) rather than chasing it for ever.
MOST_CATALOG_READS = 4


class AriWrites:
    """The ARI writes of one property, and the catalog they are checked against."""

    def __init__(self, db: Database, property_id: int) -> None:
        self._db = db
        self._property_id = property_id
        self._catalog: WriteCatalog | None = None

    async def apply(self, message: ApplyWrite) -> WriteOutcome | Stored:
        for _ in range(MOST_CATALOG_READS):
            if self._catalog is None:
                self._catalog = await ari.write_catalog(self._db, self._property_id)
            done = await self._write(message, self._catalog)
            if done is not None:
                return done
            self._catalog = None
        raise RecordBusy("the property's catalog kept changing under the write", "40001")

    async def _write(self, message: ApplyWrite, catalog: WriteCatalog) -> WriteOutcome | Stored | None:
        """The write against `catalog`; None when the record's catalog is another."""
        plan, resource = message.plan, message.plan.resource
        checked = check_write(plan, catalog)
        rejected = tuple(RejectedEntry(r.cells, r.error) for r in checked.rejected)
        batch = uuid.uuid4()
        accepted = WriteAccepted(batch, resource, plan.requested_cells, 0, 0, rejected)
        refused = Refused(checked.refusal) if checked.refusal is not None else None
        written = await ari.write_cells(
            self._db, self._property_id, catalog.version, resource.value, batch, message.key_id, message.now,
            plan.requested_cells, checked.values, [r.view() for r in checked.rejected],
            refused.stored() if refused else None, None if refused else accepted.stored(),
            _budget(message), _key(message))
        match written.answer:
            case "stale":
                return None
            case "budget":
                charge = message.cells
                state = WindowState(charge.limit, charge.window, written.used or 0, written.reset_after or 0.0)
                found = refusal([charge], [Counted(Verdict.REFUSED, state, written.wait)])
                assert found is not None
                return Refused(found)
            case "kept":
                assert written.kept is not None
                return written.kept
            case "refused":
                assert refused is not None
                return refused
            case "written":
                spans.note({"connectapi.property_id": self._property_id, "connectapi.batch_id": str(batch),
                            "connectapi.resource": resource.value, "connectapi.cells_accepted": written.accepted,
                            "connectapi.cells_noop": written.noop, "connectapi.entries_rejected": len(rejected)})
                return WriteAccepted(batch, resource, plan.requested_cells, written.accepted, written.noop, rejected)
        raise RuntimeError(f"the record answered a write with {written.answer!r}")


def _budget(message: ApplyWrite) -> ari.CellsBudget:
    charge = message.cells
    return ari.CellsBudget(message.budget_now, charge.subject, charge.limit, charge.window)


def _key(message: ApplyWrite) -> ari.KeyToClaim | None:
    if message.key is None:
        return None
    return ari.KeyToClaim(message.key.route, message.key.key, message.key.body_hash,
                          message.now - idem.RETENTION, message.now - idem.STALE_IN_FLIGHT)
