"""Budget slices taken from the record and given back (connectapi_reserve_budgets,
migration 0027; what they are: slices.py)."""

from __future__ import annotations

from collections.abc import Sequence

from .slices import GiveBack, Grant, Want
from ..storage.database import Database

_RESERVE = "SELECT * FROM connectapi_reserve_budgets($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"


async def reserve(db: Database, now: float | None, ahead: float, wants: Sequence[Want],
                  give_backs: Sequence[GiveBack]) -> list[Grant]:
    """Give back `give_backs`, then grant what fits of `wants` (one answer each, in
    order), counted at the record's instant plus `ahead`. `now`: as for budgets.charge."""
    args = (now, ahead, [w.subject for w in wants], [w.limit for w in wants], [w.window for w in wants],
            [w.tokens for w in wants], [w.cap for w in wants],
            [g.subject for g in give_backs], [g.at for g in give_backs], [g.tokens for g in give_backs])
    rows = await db.run(lambda conn: conn.fetch(_RESERVE, *args))
    return [Grant(row["subject"], row["granted"], row["at"], row["used"], row["reset_after"]) for row in rows]

