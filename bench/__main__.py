"""`python -m bench` (`make bench`): every scenario, one after another, and their report.

Each scenario is its own command (`python -m bench.front`, `.pipeline`, `.bookings`,
`.webhooks`, `.actors`, `.soak`), run here with bounded times; each starts the service on
the embedded defaults (budgets lifted where the scenario needs it) and writes its JSON to
`bench/results/`. A scenario marked `background` (the soak) keeps running while the ones
after it run. This command then writes `bench/results/latest.json` and
`bench/REPORT.md` with PNG plots in `bench/plots/`. `--quick` runs each for a few seconds,
to check the harness itself (`make test` does this once).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .report import SCENARIOS, Scenario, write_report

HERE = Path(__file__).parent


def _wait_all(running: list[tuple[Scenario, subprocess.Popen[bytes]]]) -> None:
    while running:
        scenario, process = running.pop(0)
        if (code := process.wait()) != 0:
            print(f"    {scenario.name}: exited {code}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="a few seconds per scenario")
    parser.add_argument("--only", action="append", help="run only these scenarios (repeat)")
    parser.add_argument("--render", action="store_true",
                        help="run nothing: draw the report again from the figures in the results directory (after "
                             "one scenario was run again alone into it, say `python -m bench.hosts`)")
    parser.add_argument("--report-dir", type=Path, default=HERE, help="where REPORT.md and plots/ go")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results",
                        help="where the scenarios' figures and latest.json go (committed beside the report)")
    args = parser.parse_args()
    results_dir = args.results_dir.resolve()
    results_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if args.render:
        return _render(results_dir, args.report_dir)
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    running: list[tuple[Scenario, subprocess.Popen[bytes]]] = []
    for n, scenario in enumerate(chosen, start=1):
        argv = scenario.quick if args.quick else scenario.full
        beside = " in the background, beside the next" if scenario.background and n < len(chosen) else ""
        print(f"[{n}/{len(chosen)}] {scenario.title}{beside} ({time.perf_counter() - started:.0f} s so far) ...",
              flush=True)
        (results_dir / scenario.result).unlink(missing_ok=True)
        running.append((scenario, subprocess.Popen([sys.executable, "-m", f"bench.{scenario.module}", *argv],
                                                   cwd=HERE.parent,
                                                   env={**os.environ, "BENCH_RESULTS_DIR": str(results_dir)})))
        if not beside:
            _wait_all(running)
    _wait_all(running)
    figures = {s.name: json.loads((results_dir / s.result).read_text())
               for s in chosen if (results_dir / s.result).exists()}
    report = write_report(figures, quick=args.quick, seconds=time.perf_counter() - started,
                          report_dir=args.report_dir)
    (results_dir / "latest.json").write_text(json.dumps(report, indent=2))
    missing = [s.name for s in chosen if s.name not in figures]
    print(f"report: {args.report_dir / 'REPORT.md'} ({time.perf_counter() - started:.0f} s); "
          f"targets met {sum(t['met'] is True for t in report['targets'])} of {len(report['targets'])}"
          + (f"; no result from {missing}" if missing else ""), flush=True)
    return 1 if missing else 0


def _render(results_dir: Path, report_dir: Path) -> int:
    """The report of the last full run, with what was run again since (each scenario's JSON
    in the results directory as it is now)."""
    last = json.loads((results_dir / "latest.json").read_text())
    figures = {s.name: json.loads((results_dir / s.result).read_text())
               for s in SCENARIOS if (results_dir / s.result).exists()}
    newer = sorted(s.name for s in SCENARIOS if (results_dir / s.result).exists()
                   and (results_dir / s.result).stat().st_mtime > (results_dir / "latest.json").stat().st_mtime)
    note = (f"Run {last['at'][:16].replace('T', ' ')} UTC"
            + (f" (figures of {', '.join(newer)} from a later run of that scenario alone, "
               f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})" if newer else ""))
    report = write_report(figures, quick=bool(last["quick"]), seconds=float(last["seconds"]), report_dir=report_dir,
                          rendered=note)
    report["at"] = last["at"]
    (results_dir / "latest.json").write_text(json.dumps(report, indent=2))
    print(f"report: {report_dir / 'REPORT.md'} drawn again from {results_dir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
