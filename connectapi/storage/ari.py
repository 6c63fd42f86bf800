"""ARI cells: reads for the GET routes, the catalog a write is checked against, and the
write itself: one statement (`write_cells`), bulk over arrays, never one per cell, and the
writes queued together for a property in one statement (`write_cells_together`).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

import asyncpg

from ..domain.ari_write import RejectedCells, WriteCatalog
from ..tracing import spans
from . import idempotency
from .database import Database
from .records import AvailabilityNight, PropertyLock, RateNight, RestrictionFields, RestrictionNight

Cell = tuple[int, date]

# Record fields <-> API fields of a restriction cell.
RESTRICTION_COLUMNS: dict[str, str] = {
    "stopSell": "stop_sell",
    "closedToArrival": "closed_to_arrival",
    "closedToDeparture": "closed_to_departure",
    "minStayArrival": "min_stay_arrival",
    "minStayThrough": "min_stay_through",
    "maxStay": "max_stay",
}


async def lock_property(conn: asyncpg.Connection, property_id: int) -> PropertyLock:
    """Serialise writes of a property across processes; returns what the checks need.

    NO KEY UPDATE, not UPDATE: it excludes other writers but not the KEY SHARE locks that
    foreign-key checks take, so inserts that name the property (an idempotency claim, a
    key) do not wait behind a write.
    """
    row = await conn.fetchrow(
        """SELECT id, name, currency, timezone, owner_email, guest_confirmation, pms, mode, twin_of FROM properties
           WHERE id = $1 FOR NO KEY UPDATE""", property_id)
    if row is None:
        raise LookupError(f"no property {property_id} to lock")
    return PropertyLock(row["id"], row["name"], row["currency"].strip(), row["timezone"], row["owner_email"],
                        row["guest_confirmation"], row["pms"], row["mode"], row["twin_of"])


async def hold_property(conn: asyncpg.Connection, property_id: int) -> None:
    """The property's lock in `lock_property`'s mode, reading nothing: for work that must
    be serialised with the property's writers but needs none of its fields."""
    await conn.execute("SELECT 1 FROM properties WHERE id = $1 FOR NO KEY UPDATE", property_id)


def _columns(cells: list[Cell]) -> tuple[list[int], list[date]]:
    return [c[0] for c in cells], [c[1] for c in cells]


async def write_catalog(db: Database, property_id: int) -> WriteCatalog:
    """What a write of the property is checked against, and its version: in one statement,
    so the version is the one of the catalog read (a twin's catalog is its live property's,
    its currency its own). A per-person plan prices 1 to its room type's maxAdults."""
    row = await db.fetchrow(
        """SELECT p.currency,
                  (SELECT coalesce(sum(v.version), 0) FROM catalog_versions v
                   WHERE v.property_id IN (p.id, coalesce(p.twin_of, p.id))) AS version,
                  ARRAY(SELECT r.id FROM room_types r WHERE r.property_id = coalesce(p.twin_of, p.id)) AS rooms,
                  q.plans, q.min_rates, q.max_rates, q.most_adults
           FROM properties p
           CROSS JOIN LATERAL (SELECT array_agg(q.id) AS plans, array_agg(q.min_rate) AS min_rates,
                                      array_agg(q.max_rate) AS max_rates,
                                      array_agg(CASE WHEN q.sell_mode = 'per_person' THEN r.max_adults END)
                                          AS most_adults
                               FROM rate_plans q JOIN room_types r ON r.id = q.room_type_id
                               WHERE q.property_id = coalesce(p.twin_of, p.id)) q
           WHERE p.id = $1""", property_id)
    if row is None:
        raise LookupError(f"no property {property_id}")
    plans = list(zip(row["plans"] or (), row["min_rates"] or (), row["max_rates"] or (), row["most_adults"] or (),
                     strict=True))
    return WriteCatalog(row["version"], row["currency"].strip(), frozenset(row["rooms"]),
                        {plan: (low, high) for plan, low, high, _ in plans},
                        {plan: frozenset(range(1, most + 1)) for plan, _, _, most in plans if most is not None})


@dataclass(frozen=True, slots=True)
class KeyToClaim:
    """An idempotency key a write claims in its own statement, and when a record under it
    is old enough to be replaced (past retention, or a claim abandoned in flight)."""

    route: str
    key: str
    body_hash: bytes
    replace_before: datetime
    stale_before: datetime


@dataclass(frozen=True, slots=True)
class CellsBudget:
    """The write's `cells` budget, as connectapi_charge_budgets takes one item."""

    now: float | None
    subject: str
    limit: int
    window: float


@dataclass(frozen=True, slots=True)
class CellsWritten:
    """What `write_cells` did: `answer` is 'written', 'refused' (the refusal kept), 'kept'
    (the key was held: `kept` says by what), 'budget' (the cells did not fit: the window as
    counted) or 'stale' (the catalog moved to `catalog`: nothing done)."""

    answer: str
    accepted: int
    noop: int
    catalog: int | None
    used: int | None
    reset_after: float | None
    wait: float | None
    kept: idempotency.Stored | None


_WRITE_ARGS = 25
_WRITE_CELLS = ("SELECT * FROM connectapi_write_cells("
                + ", ".join(f"${i}" for i in range(1, _WRITE_ARGS + 1)) + ")")
# Most writes one statement carries (the writer's runs are no longer), so a connection
# prepares at most this many texts of it.
MOST_WRITES_TOGETHER = 16


@dataclass(frozen=True, slots=True)
class CellsWrite:
    """One write as connectapi_write_cells takes it: the cells that passed the writer's
    checks (`values`), the entries it rejected, and what is kept under the key either way
    (`refusal` when the write is refused whole, else `outcome`)."""

    property_id: int
    catalog_version: int
    resource: str
    batch: uuid.UUID
    key_id: int | None
    at: datetime
    requested: int
    values: Mapping[Cell, Any]
    rejected: list[RejectedCells]
    refusal: Mapping[str, object] | None
    outcome: Mapping[str, object] | None
    budget: CellsBudget
    key: KeyToClaim | None

    def arguments(self, trace_parent: str | None) -> tuple[Any, ...]:
        cells = list(self.values)
        ids, nights = _columns(cells)
        restrictions = None
        numbers: list[Any] | None = None
        occupancies: list[int] | None = None
        if self.resource == "restrictions":
            restrictions = list(self.values.values())
        elif self.resource == "rates":  # {occupancy: minor units} a plan's night: a row each
            priced = [(cell, occupancy, rate) for cell, prices in self.values.items()
                      for occupancy, rate in prices.items()]
            ids, nights = _columns([cell for cell, _, _ in priced])
            occupancies, numbers = [o for _, o, _ in priced], [r for _, _, r in priced]
        else:
            numbers = list(self.values.values())
        key, budget = self.key, self.budget
        return (self.property_id, self.catalog_version, self.resource, self.batch, self.key_id, self.at,
                self.requested, ids, nights, numbers, occupancies, restrictions, self.rejected, self.refusal,
                self.outcome, budget.now, budget.subject, budget.limit, budget.window,
                key.route if key else None, key.key if key else None, key.body_hash if key else None,
                key.replace_before if key else None, key.stale_before if key else None, trace_parent)


async def write_cells(db: Database, write: CellsWrite) -> CellsWritten:
    """One write, whole, in one statement (storage/sql/connectapi_write_cells.sql): the
    property's lock, the catalog's version, the cells budget, the key, the cells, the batch
    and the outcome under the key."""
    return (await write_cells_together(db, [write]))[0]


async def write_cells_together(db: Database, writes: list[CellsWrite],
                               written_in: list[str | None] | None = None) -> list[CellsWritten]:
    """Writes queued together for one property (at most MOST_WRITES_TOGETHER), in order,
    each as connectapi_write_cells does it alone, in one statement: one round trip and one
    commit for the run. The statement is one transaction: if the record refuses any of them
    (RecordRefused), none of them is done.

    Each batch keeps the span it was written in (`written_in`, a traceparent per write;
    None: the current span for all): its push, later and maybe elsewhere, links to it."""
    if not 0 < len(writes) <= MOST_WRITES_TOGETHER:
        raise ValueError(f"{len(writes)} writes: one statement takes 1 to {MOST_WRITES_TOGETHER}")
    if written_in is None:
        written_in = [spans.traceparent()] * len(writes)
    arguments = [argument for write, parent in zip(writes, written_in, strict=True)
                 for argument in write.arguments(parent)]
    with spans.span("record connectapi_write_cells", kind=spans.CLIENT,
                    attributes={"db.system": "postgresql", "db.operation": "connectapi_write_cells",
                                "connectapi.writes": len(writes)}):
        if len(writes) == 1:
            rows = list(filter(None, [await db.fetchrow(_WRITE_CELLS, *arguments)]))
        else:
            rows = sorted(await db.fetch(_statement_for(len(writes)), *arguments), key=lambda row: row["n"])
    if len(rows) != len(writes):
        raise RuntimeError(f"connectapi_write_cells answered {len(rows)} rows for {len(writes)} writes")
    return [_written(row) for row in rows]


@functools.cache
def _statement_for(count: int) -> str:
    """`count` calls of connectapi_write_cells in one statement, run in the order written (a
    UNION ALL's branches run one after the other, each call whole before the next starts,
    and each sees what the calls before it wrote), each answer numbered from 1."""
    return " UNION ALL ".join(
        f"SELECT {n} AS n, w.* FROM connectapi_write_cells("
        + ", ".join(f"${(n - 1) * _WRITE_ARGS + i}" for i in range(1, _WRITE_ARGS + 1)) + ") w"
        for n in range(1, count + 1))


def _written(row: Any) -> CellsWritten:
    kept = None
    if row["answer"] == "kept":
        kept = idempotency.Stored(row["same_body"], row["kept_state"] == "in_flight", row["kept_status"],
                                  row["kept_response"])
    return CellsWritten(row["answer"], row["accepted"] or 0, row["noop"] or 0, row["catalog"], row["used"],
                        row["reset_after"], row["wait"], kept)


_CELL_TABLES = {"availability": "availability_cells", "rates": "rate_cells", "restrictions": "restriction_cells"}


@dataclass(frozen=True, slots=True)
class ChannelTask:
    """A call to the channel manager that carried a batch's cells: its task id, its kind."""

    task_id: str
    kind: Literal["availability", "restrictions"]
    sent_at: datetime


@dataclass(frozen=True, slots=True)
class BatchView:
    """A batch as GET /batches/{id} shows it."""

    id: uuid.UUID
    resource: str
    created_at: datetime
    requested_cells: int
    accepted_cells: int
    noop_cells: int
    rejected: list[RejectedCells]  # the entries of the write refused whole
    cm_last_error: str | None  # the property's
    pending_cells: int  # its own cells (last written by it) still dirty
    refused_cells: int  # of those, the ones the channel manager refused
    channel_tasks: list[ChannelTask]  # the first 100, oldest first


async def get_batch(db: Database, property_id: int, batch: uuid.UUID) -> BatchView | None:
    """The batch with its pending cells (its own cells, last written by it, still dirty), of
    them those the channel manager refused, and the task ids of the calls that carried its
    cells."""

    async def work(conn: asyncpg.Connection) -> BatchView | None:
        row = await conn.fetchrow(
            """SELECT b.id, b.resource, b.created_at, b.requested_cells, b.accepted_cells, b.noop_cells, b.rejected,
                      p.cm_last_error
               FROM write_batches b JOIN properties p ON p.id = b.property_id
               WHERE b.id = $1 AND b.property_id = $2""",
            batch, property_id,
        )
        if row is None:
            return None
        pending = refused = 0
        if row["accepted_cells"]:
            counted = await conn.fetchrow(
                f"SELECT count(*) AS pending, count(*) FILTER (WHERE refused_version = version) AS refused "
                f"FROM {_CELL_TABLES[row['resource']]} WHERE last_batch_id = $1 AND version > pushed_version",
                batch,
            )
            pending, refused = counted["pending"], counted["refused"]
        tasks = await conn.fetch(
            """SELECT task_id, kind, sent_at FROM batch_channel_tasks WHERE batch_id = $1
               ORDER BY sent_at, task_id LIMIT 100""", batch)
        return BatchView(row["id"], row["resource"], row["created_at"], row["requested_cells"], row["accepted_cells"],
                         row["noop_cells"], row["rejected"], row["cm_last_error"], pending, refused,
                         [ChannelTask(t["task_id"], t["kind"], t["sent_at"]) for t in tasks])

    return await db.run(work)


async def read_availability(db: Database, property_id: int, first: date, last: date) -> list[AvailabilityNight]:
    rows = await db.fetch(
        """SELECT c.room_type_id, c.night, c.available FROM availability_cells c
           WHERE c.property_id = $1 AND c.night BETWEEN $2 AND $3 ORDER BY c.room_type_id, c.night""",
        property_id, first, last,
    )
    return [AvailabilityNight(r[0], r[1], r[2]) for r in rows]


async def read_rates(db: Database, property_id: int, first: date, last: date) -> list[RateNight]:
    rows = await db.fetch(
        """SELECT c.rate_plan_id, c.night, c.occupancy, c.rate_minor FROM rate_cells c
           WHERE c.property_id = $1 AND c.night BETWEEN $2 AND $3 ORDER BY c.rate_plan_id, c.night, c.occupancy""",
        property_id, first, last,
    )
    return [RateNight(r[0], r[1], r[2], r[3]) for r in rows]


async def read_restrictions(db: Database, property_id: int, first: date, last: date) -> list[RestrictionNight]:
    rows = await db.fetch(
        f"""SELECT c.rate_plan_id, c.night, {', '.join('c.' + col for col in RESTRICTION_COLUMNS.values())}
            FROM restriction_cells c
            WHERE c.property_id = $1 AND c.night BETWEEN $2 AND $3 ORDER BY c.rate_plan_id, c.night""",
        property_id, first, last,
    )
    return [RestrictionNight(r["rate_plan_id"], r["night"], RestrictionFields(
        stopSell=r["stop_sell"], closedToArrival=r["closed_to_arrival"], closedToDeparture=r["closed_to_departure"],
        minStayArrival=r["min_stay_arrival"], minStayThrough=r["min_stay_through"], maxStay=r["max_stay"]))
        for r in rows]
