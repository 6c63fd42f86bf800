"""Where a scenario writes its figures: `bench/results/` (committed beside REPORT.md, so
the report can be checked against its data), or BENCH_RESULTS_DIR (a quick run in the
tests writes elsewhere, leaving the committed figures alone)."""

from __future__ import annotations

import os
from pathlib import Path


def results_dir() -> Path:
    chosen = Path(os.environ.get("BENCH_RESULTS_DIR") or Path(__file__).parent / "results")
    chosen.mkdir(parents=True, exist_ok=True)
    return chosen
