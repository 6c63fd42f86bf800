"""Pruning what the record keeps only for a while (the retention of `domain.retention`).

Each prune is one DELETE of at most `limit` rows, its own short transaction: the rows are
picked with FOR UPDATE SKIP LOCKED, so a request holding one is never waited for (the
row is left for a later statement) and a request never waits long for the janitor. A
row still needed is never picked, whatever its age:

- a write batch while any of its own cells (last written by it) is still dirty;
- a webhook delivery while pending; an event while any delivery of it remains;
- an e-mail not yet sent;
- an OTA revision not applied (received), kept for the owner (unmapped, refused: kept for
  ever, until applied again), or not yet acknowledged to the channel manager.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .database import Database, RecordRefused


@dataclass(frozen=True, slots=True)
class Retained:
    """A table the record prunes: `kind` names its retention setting, `time_column` the
    instant its retention counts from (NULL while the row is not done with: never pruned)."""

    table: str
    time_column: str
    kind: str


# For `connectapi status` (each table's size and oldest row) and for the janitor: the
# order is the pruning order (a delivery before its event).
RETAINED: tuple[Retained, ...] = (
    Retained("write_batches", "created_at", "batches"),
    Retained("webhook_deliveries", "delivered_at", "deliveries"),
    Retained("webhook_events", "occurred_at", "deliveries"),
    Retained("notifications", "sent_at", "emails"),
    Retained("allowlist_refusals", "at", "refusals"),
    Retained("ota_revisions", "settled_at", "ota_revisions"),
)

_PRUNABLE = {
    "write_batches": """
        SELECT b.id FROM write_batches b
        WHERE b.created_at <= $1
          AND NOT EXISTS (SELECT 1 FROM availability_cells c WHERE c.last_batch_id = b.id
                                                              AND c.version > c.pushed_version)
          AND NOT EXISTS (SELECT 1 FROM rate_cells c WHERE c.last_batch_id = b.id AND c.version > c.pushed_version)
          AND NOT EXISTS (SELECT 1 FROM restriction_cells c WHERE c.last_batch_id = b.id
                                                             AND c.version > c.pushed_version)
        LIMIT $2 FOR UPDATE OF b SKIP LOCKED""",
    "webhook_deliveries": """
        SELECT d.id FROM webhook_deliveries d
        WHERE d.status = 'delivered' AND d.delivered_at <= $1
        LIMIT $2 FOR UPDATE OF d SKIP LOCKED""",
    "webhook_events": """
        SELECT ev.id FROM webhook_events ev
        WHERE ev.occurred_at <= $1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = ev.id)
        LIMIT $2 FOR UPDATE OF ev SKIP LOCKED""",
    "notifications": """
        SELECT n.id FROM notifications n
        WHERE n.sent_at IS NOT NULL AND n.sent_at <= $1
        LIMIT $2 FOR UPDATE OF n SKIP LOCKED""",
    "allowlist_refusals": """
        SELECT r.id FROM allowlist_refusals r
        WHERE r.at <= $1
        LIMIT $2 FOR UPDATE OF r SKIP LOCKED""",
    "ota_revisions": """
        SELECT r.seq FROM ota_revisions r
        WHERE r.state IN ('applied', 'stale') AND r.acked_at IS NOT NULL AND r.settled_at <= $1
        LIMIT $2 FOR UPDATE OF r SKIP LOCKED""",
}
FOREIGN_KEY_VIOLATION = "23503"
_KEY = {"write_batches": "id", "webhook_deliveries": "id", "webhook_events": "id", "notifications": "id",
        "allowlist_refusals": "id", "ota_revisions": "seq"}
assert set(_PRUNABLE) == set(_KEY) == {r.table for r in RETAINED}


async def prune(db: Database, table: str, horizon: datetime, limit: int = 500) -> int:
    """Delete up to `limit` rows of `table` done with at or before `horizon` and no longer
    needed; answers how many went. One statement, one short transaction."""
    if table not in _PRUNABLE:
        raise ValueError(f"{table} is not a retained table")
    try:
        # The chosen rows in a CTE, which runs once. As `IN (subquery)` the planner may put
        # the subquery on the inner side of a nested loop and scan it again for each row,
        # and each scan (SKIP LOCKED, LIMIT) chose more: a batch of 100 deleted 1,233 rows
        # (seen under load in tests/api/test_retention.py).
        status = await db.execute(
            f"""WITH chosen AS MATERIALIZED ({_PRUNABLE[table]})
                DELETE FROM {table} t USING chosen WHERE t.{_KEY[table]} = chosen.{_KEY[table]}""", horizon, limit)
    except RecordRefused as exc:
        if exc.sqlstate != FOREIGN_KEY_VIOLATION:
            raise
        # A row chosen became needed meanwhile (a redeliver queued an event the statement had
        # found without deliveries, and committed before the delete reached it): nothing of
        # this batch went, and the next round chooses again.
        return 0
    return int(status.split()[-1])
