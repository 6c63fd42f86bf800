"""The budgets: every rate budget the service holds its callers and itself to, in one room.

The rules (`rules.py`: which budgets a request of each kind is charged, and their limits),
the subjects they count (`subjects.py`), one charge and its verdict (`charges.py`), the
sliding window's arithmetic (`window.py`), the RateLimit headers (`headers.py`), the
slices a busy process counts ahead (`slices.py`, decision 0124), the statements that count
them in the record (`record.py`, `record_slices.py`, and the SQL functions in `sql/`), the
batcher that sends the asks of concurrent requests together (`batcher.py`), and the keeper
that builds a request's charges (`keeper.py`).

The rest of the house uses this face:

- the front admits a request (`BudgetKeeper.admit`, `admit_known`, `admit_request`),
  charges a booking (`charge_booking`, `charge_booking_change`), and names an ARI write's
  `cells` charge (`cells_charge`), which the write's own statement counts
  (storage/sql/connectapi_write_cells.sql calls connectapi_charge_budgets);
- the channel-manager actor paces its calls (`pace_call`);
- the janitor forgets idle subjects (`record.prune`).

The in-memory twin of the record's statement, which the tests hold the statement to and
the bench compares with, is test code (tests/budget_ledger.py).
"""

from __future__ import annotations

from ..storage.database import Database
from .charges import Charge, Verdict
from .keeper import Admitted, BudgetKeeper
from .record import charge
from .rules import Budgets, RequestKind

__all__ = ["Admitted", "BudgetKeeper", "Budgets", "RequestKind", "pace_call"]


async def pace_call(db: Database, now: float | None, name: str, whose: str, limit: int, window: float) -> float | None:
    """Count one call of the service's own (to the channel manager) against a budget every
    process shares: None when it fits, else the seconds until it would."""
    counted = await charge(db, now, [Charge(name, whose, 0, limit, window, 1, 1)])
    if counted[0].verdict is Verdict.REFUSED:
        return counted[0].wait if counted[0].wait is not None else window
    return None
