"""Budget counts in the record, shared by every process and machine (migration 0016)."""

from __future__ import annotations

from collections.abc import Sequence

from .charges import Charge, Counted, Verdict
from .window import WindowState
from ..storage.database import Database, HeldConnection

_VERDICTS = {v.value: v for v in Verdict}
_CHARGE = "SELECT * FROM connectapi_charge_budgets($1, $2, $3, $4, $5, $6, $7, $8, $9)"


async def charge(db: Database, now: float | None, charges: Sequence[Charge]) -> list[Counted]:
    """Check and charge one request's `charges` in one statement."""
    check_stages(charges)
    return (await charge_many(db, now, [charges]))[0]


async def charge_many(db: Database | HeldConnection, now: float | None,
                      requests: Sequence[Sequence[Charge]]) -> list[list[Counted]]:
    """Check and charge several requests' charges in one statement (see
    `connectapi_charge_budgets`): each request on its own, in the order given.

    `now`: seconds since the epoch; None takes the database server's clock, the one clock
    every process and machine shares. Tests give their fake clock's time.

    Each request's charges are checked (`check_stages`) by the caller, once, before they are
    batched with others (RecordCounter.charge, `charge`).
    """
    items = [(n, c) for n, charges in enumerate(requests) for c in charges]
    args = (
        now,
        [n for n, _ in items],
        [c.subject for _, c in items],
        [c.stage for _, c in items],
        [c.limit for _, c in items],
        [c.window for _, c in items],
        [c.need for _, c in items],
        [c.amount for _, c in items],
        [c.fallback for _, c in items],
    )
    rows = await db.run(lambda conn: conn.fetch(_CHARGE, *args))
    answers: list[list[Counted]] = [[] for _ in requests]
    for (n, c), row in zip(items, rows, strict=True):
        answers[n].append(Counted(_VERDICTS[row["verdict"]],
                                  WindowState(c.limit, c.window, row["used"], row["reset_after"]), row["wait"]))
    return answers


def check_stages(charges: Sequence[Charge]) -> None:
    """A subject at most once in a stage: the statement checks a stage against the count
    before it, so a subject twice would be checked twice against the same count."""
    staged = [(c.stage, c.subject) for c in charges]
    if len(set(staged)) != len(staged):
        raise ValueError(f"a subject twice in one stage: {staged}")


async def prune(db: Database, now: float | None, limit: int = 500) -> int:
    """Forget up to `limit` subjects with nothing left in their window; answers how many.
    Rows a request holds are skipped, so a request never waits for this."""
    pruned: int = await db.fetchval("SELECT connectapi_prune_budgets($1, $2)", now, limit)
    return pruned


async def subjects(db: Database) -> int:
    """How many subjects the record counts now (tests and metrics)."""
    found: int = await db.fetchval("SELECT count(*) FROM budget_windows")
    return found
