"""`python -m bench --quick`: the benchmark harness itself runs every scenario end to end and
writes its report (the figures of a quick run say nothing about the targets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_quick_bench_writes_a_report_with_every_scenario(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "bench", "--quick", "--report-dir", str(tmp_path),
                          "--results-dir", str(tmp_path / "results")], cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    progress = [line for line in run.stdout.splitlines() if line.startswith("[")]
    assert len(progress) == 9  # a progress line per scenario
    report = (tmp_path / "REPORT.md").read_text()
    for scenario in ("front", "pipeline", "bookings", "webhooks", "actors", "soak", "scale", "traces"):
        assert f"| {scenario} |" in report, scenario
    assert "quick mode" in report and "cores" in report
    for plot in ("latency.png", "soak.png", "channel_calls.png"):
        assert (tmp_path / "plots" / plot).stat().st_size > 1000, plot
    # The hosts scenario, quick: the hosts built and torn down, nothing measured (no row).
    hosts = json.loads((tmp_path / "results" / "hosts.json").read_text())
    assert hosts["quick"] is True and hosts["built_seconds"] > 0
    latest = json.loads((tmp_path / "results" / "latest.json").read_text())
    assert latest["quick"] is True and {t["scenario"] for t in latest["targets"]} == {
        "front", "pipeline", "bookings", "webhooks", "actors", "soak", "scale", "traces"}
    # The one-cell PUT's CPU as a multiple of GET /property's, from the same run's rows.
    scale = json.loads((tmp_path / "results" / "scale.json").read_text())
    cpu = {row["route"]: row["cpu_ms_per_request"] for row in scale["workers"] if row["workers"] == 1}
    share = [t for t in latest["targets"] if t["name"].startswith("one-cell PUT /rates CPU over GET")]
    assert [t["value"] for t in share] == [round(cpu["PUT /rates (1 cell)"] / cpu["GET /property"], 2)]
    # Traces on cost each route something, measured against the same routes with them off.
    traces = json.loads((tmp_path / "results" / "traces.json").read_text())
    assert set(traces["cost_cpu_ms"]) == {"GET /property", "PUT /rates, one cell"}
    assert all(row["requests"] > 0 and row["errors"] == 0 for rows in traces["rows"].values()
               for row in rows.values())
