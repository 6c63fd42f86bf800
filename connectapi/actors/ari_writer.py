"""A property's ARI writes, each in one statement (docs/decisions/0132-a-keyed-write-in-one-statement.md).

The writer keeps the property's catalog (room types, rate plans and their policies,
currency) and checks each write against it without asking the record; the write's one
statement (storage/sql/connectapi_write_cells.sql) takes the property's lock, checks
that the catalog's version is still the one checked against, charges the cells, claims
the idempotency key, writes the cells and the batch, and keeps the outcome under the key.
A catalog that moved meanwhile is read again and the write checked again: nothing was
done. Run by the property's writer, so writes of a property are applied one at a time
in this process; the row lock serialises them across processes. Writes queued behind one
another go in one statement, each still done as if alone
(docs/decisions/0148-writes-queued-together-in-one-statement.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass

import outcome
from opentelemetry.trace import Span, SpanContext
from opentelemetry.util.types import AttributeValue

from ..budgets.charges import Counted, Verdict, refusal
from ..budgets.window import WindowState
from ..domain import idempotency as idem
from ..domain.ari_write import MAX_CELLS, WriteCatalog, check_write
from ..domain.errors import ApiError
from ..storage import ari
from ..storage.database import Database, RecordBusy, RecordRefused, StorageError
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
            write = self._prepare(message, self._catalog)
            done = self._answer(write, await ari.write_cells(self._db, write.cells), spans.note)
            if done is not None:
                return done
            self._catalog = None
        raise RecordBusy("the property's catalog kept changing under the write", "40001")

    async def apply_together(self, messages: list[ApplyWrite],
                             asked: list[SpanContext | None]) -> list[outcome.Outcome[WriteOutcome | Stored]]:
        """Writes queued behind one another (at most MOST_WRITES_TOGETHER of them, of at most
        MAX_CELLS cells in all: `takes`), in one statement: one round trip and one commit for
        the run instead of one each. Each is answered exactly as `apply` would have answered
        it alone, in the order queued, and traced in a span of its own under its asker's
        (`asked`), which its batch keeps for its push.

        The statement is one transaction. If the record refuses it (rolled back whole), each
        write is applied again on its own, so only the write the record refuses fails; if it
        refuses it for now (RecordBusy: a lock not had in time, a deadlock), each asker hears
        so, as alone. If the record is away, or the statement's end unknown (a timeout, a lost
        connection), each asker hears so, as for a write alone: none is applied again here.
        A write the catalog moved under did nothing, and is applied again on its own against
        the catalog read afresh. A failure to read the catalog is the run's answer (the
        engine answers it to each)."""
        if self._catalog is None:
            self._catalog = await ari.write_catalog(self._db, self._property_id)
        catalog = self._catalog
        prepared = [self._prepare(message, catalog) for message in messages]
        with ExitStack() as each:
            opened = [each.enter_context(spans.beside(f"PropertyWriter {ApplyWrite.__name__}", parent=parent))
                      for parent in asked]
            try:
                written = await ari.write_cells_together(self._db, [write.cells for write in prepared],
                                                         [spans.traceparent_of(span) for span in opened])
            except RecordBusy as busy:
                # Refused for now (a lock not had in time, a deadlock): each asker hears so, as
                # alone, rather than each write waiting out the same lock again in turn.
                return _failed(opened, busy)
            except RecordRefused:
                written = None
            except StorageError as away:
                return _failed(opened, away)
            results: list[outcome.Outcome[WriteOutcome | Stored]] = []
            for i, (message, write, span) in enumerate(zip(messages, prepared, opened, strict=True)):
                done = None if written is None else self._answer(write, written[i], span.set_attributes)
                if done is not None:
                    results.append(outcome.Value(done))
                    continue
                if written is not None and self._catalog is catalog:  # the catalog moved: read it once
                    self._catalog = None
                # Refused with the run, or stale: again on its own, in a span of its own.
                span.set_attribute("connectapi.applied_alone", True)
                results.append(await self._apply_alone(message, asked[i]))
        return results

    @staticmethod
    def takes(run: list[ApplyWrite], message: ApplyWrite) -> bool:
        """Whether `message` joins a run of writes in one statement: a run is short enough
        that its askers, each answered when the whole run is, wait about as long as alone."""
        return len(run) < ari.MOST_WRITES_TOGETHER and \
            sum(m.plan.requested_cells for m in run) + message.plan.requested_cells <= MAX_CELLS

    async def _apply_alone(self, message: ApplyWrite,
                           asked: SpanContext | None) -> outcome.Outcome[WriteOutcome | Stored]:
        with spans.span(f"PropertyWriter {ApplyWrite.__name__}", parent=asked):
            try:
                return outcome.Value(await self.apply(message))
            except (ApiError, StorageError) as refused:  # the asker's to report, as for a write alone
                return outcome.Error(refused)

    def _prepare(self, message: ApplyWrite, catalog: WriteCatalog) -> _Prepared:
        """The write checked against `catalog`, as the record takes it, and what it is
        answered with if the record writes it or refuses it whole."""
        plan, resource = message.plan, message.plan.resource
        checked = check_write(plan, catalog)
        rejected = tuple(RejectedEntry(r.cells, r.error) for r in checked.rejected)
        batch = uuid.uuid4()
        accepted = WriteAccepted(batch, resource, plan.requested_cells, 0, 0, rejected)
        refused = Refused(checked.refusal) if checked.refusal is not None else None
        cells = ari.CellsWrite(
            self._property_id, catalog.version, resource.value, batch, message.key_id, message.now,
            plan.requested_cells, checked.values, [r.view() for r in checked.rejected],
            refused.stored() if refused else None, None if refused else accepted.stored(),
            _budget(message), _key(message))
        return _Prepared(message, cells, accepted, refused)

    def _answer(self, write: _Prepared, written: ari.CellsWritten,
                note: Callable[[Mapping[str, AttributeValue]], None]) -> WriteOutcome | Stored | None:
        """What the write is answered (its span told what was written); None when the
        record's catalog was another (nothing done)."""
        accepted = write.accepted
        match written.answer:
            case "stale":
                return None
            case "budget":
                charge = write.message.cells
                state = WindowState(charge.limit, charge.window, written.used or 0, written.reset_after or 0.0)
                found = refusal([charge], [Counted(Verdict.REFUSED, state, written.wait)])
                assert found is not None
                return Refused(found)
            case "kept":
                assert written.kept is not None
                return written.kept
            case "refused":
                assert write.refused is not None
                return write.refused
            case "written":
                note({"connectapi.property_id": self._property_id, "connectapi.batch_id": str(accepted.batch_id),
                      "connectapi.resource": accepted.resource.value, "connectapi.cells_accepted": written.accepted,
                      "connectapi.cells_noop": written.noop, "connectapi.entries_rejected": len(accepted.rejected)})
                return WriteAccepted(accepted.batch_id, accepted.resource, accepted.requested_cells,
                                     written.accepted, written.noop, accepted.rejected)
        raise RuntimeError(f"the record answered a write with {written.answer!r}")


def _failed(opened: list[Span], error: StorageError) -> list[outcome.Outcome[WriteOutcome | Stored]]:
    """A run's error as each write's answer, its span saying so."""
    for span in opened:
        spans.failed(span, type(error).__name__)
    return [outcome.Error(error) for _ in opened]


@dataclass(frozen=True, slots=True)
class _Prepared:
    message: ApplyWrite
    cells: ari.CellsWrite
    accepted: WriteAccepted  # its counts are the record's to give
    refused: Refused | None


def _budget(message: ApplyWrite) -> ari.CellsBudget:
    charge = message.cells
    return ari.CellsBudget(message.budget_now, charge.subject, charge.limit, charge.window)


def _key(message: ApplyWrite) -> ari.KeyToClaim | None:
    if message.key is None:
        return None
    return ari.KeyToClaim(message.key.route, message.key.key, message.key.body_hash,
                          message.now - idem.RETENTION, message.now - idem.STALE_IN_FLIGHT)
