"""Budget counts in the record, shared by every process and machine (migration 0016)."""

from __future__ import annotations

from collections.abc import Sequence

from ..domain.budget_charges import Charge, Counted, Verdict
from ..domain.sliding_window import WindowState
from .database import Database

_VERDICTS = {v.value: v for v in Verdict}


async def charge(db: Database, now: float | None, charges: Sequence[Charge]) -> list[Counted]:
    """Check and charge `charges` in one statement (see `connectapi_charge_budgets`).

    `now`: seconds since the epoch; None takes the database server's clock, the one clock
    every process and machine shares. Tests give their fake clock's time.
    """
    rows = await db.fetch(
        "SELECT * FROM connectapi_charge_budgets($1, $2, $3, $4, $5, $6, $7, $8)",
        now,
        [c.subject for c in charges],
        [c.stage for c in charges],
        [c.limit for c in charges],
        [c.window for c in charges],
        [c.need for c in charges],
        [c.amount for c in charges],
        [c.fallback for c in charges],
    )
    return [
        Counted(_VERDICTS[row["verdict"]], WindowState(c.limit, c.window, row["used"], row["reset_after"]),
                row["wait"])
        for c, row in zip(charges, rows, strict=True)
    ]


async def prune(db: Database, now: float | None, limit: int = 500) -> int:
    """Forget up to `limit` subjects with nothing left in their window; answers how many.
    Rows a request holds are skipped, so a request never waits for this."""
    pruned: int = await db.fetchval("SELECT connectapi_prune_budgets($1, $2)", now, limit)
    return pruned


async def subjects(db: Database) -> int:
    """How many subjects the record counts now (tests and metrics)."""
    found: int = await db.fetchval("SELECT count(*) FROM budget_windows")
    return found
