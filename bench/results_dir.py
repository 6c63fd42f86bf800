"""Where a scenario writes its figures: BENCH_RESULTS_DIR when given (`python -m bench`,
`make bench`, gives `bench/results/`, committed beside REPORT.md so the report can be
checked against its data), else a scratch directory: a scenario run alone (`python -m
bench.front`) leaves the committed figures of the last full run alone."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

COMMITTED = Path(__file__).parent / "results"


def results_dir() -> Path:
    given = os.environ.get("BENCH_RESULTS_DIR")
    chosen = Path(given) if given else Path(tempfile.gettempdir()) / "connectapi-bench-results"
    chosen.mkdir(parents=True, exist_ok=True)
    return chosen
