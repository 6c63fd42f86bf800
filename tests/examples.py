"""How many examples a property test draws: its full count in `make test` (as CI runs it),
a share of it in `make check`, the quick loop (`CONNECTAPI_EXAMPLES=0.2`). The same
properties on fewer inputs: the hypothesis tests were a tenth of make check's time, most
of it in two modules (tests/unit/test_cm_client_answers.py, test_json_body.py)."""

from __future__ import annotations

import os

FEWEST = 10  # what a share leaves any test at least (or its own count, if fewer)


def _share() -> float:
    text = os.environ.get("CONNECTAPI_EXAMPLES", "1")
    share = float(text)
    if not 0 < share <= 1:
        raise ValueError(f"CONNECTAPI_EXAMPLES is a share of each test's examples, in (0, 1]: {text!r}")
    return share


SHARE = _share()


def examples(count: int) -> int:
    """`count` examples, or this run's share of them."""
    return min(count, max(FEWEST, round(count * SHARE)))
