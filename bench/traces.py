"""`python -m bench.traces`: what traces cost a request (issue 46).

Two servers alike but for tracing, each on its own record: one with no OTLP endpoint set
(off, the default), one exporting every span to a local collector that keeps nothing
(bench/otlp_sink.py, its own process). Rounds alternate between them, so drift hits both.
Per route: requests a second, p50, and the server's CPU-ms a request (the kernel's count
for its process). GET /property is the front alone; a one-cell PUT /rates is the whole
write path (gates, writer, the write's statement, and the push it brings).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import trio

from . import front_profile
from .front import summary
from .load import Run, load
from .process import bench_servers, free_port
from .results_dir import results_dir

PROPERTY = "/api/v1/connect-api/v1/property"
RATES = "/api/v1/connect-api/v1/rates"


def _rate_body(plan: int) -> Callable[[int], bytes]:
    """The n-th write: one night of one plan, its price changed each time (no no-ops)."""
    first = time.gmtime(time.time() + 86400 * 30)
    night = time.strftime("%Y-%m-%d", first)

    def body(n: int) -> bytes:
        return json.dumps({"updates": [{"ratePlanId": plan, "dateFrom": night, "dateTo": night,
                                        "rate": f"{100 + n % 400}.00", "currency": "EUR"}]}).encode()
    return body


async def _round(ready: dict[str, Any], route: str, connections: int, seconds: float) -> tuple[Run, float]:
    auth = {"Authorization": f"Bearer {ready['key']}"}
    before = front_profile.process_cpu_seconds(ready["pid"])
    if route == "GET /property":
        run = await load(ready["port"], PROPERTY, auth, connections, seconds)
    else:
        run = await load(ready["port"], RATES, auth, connections, seconds, method="PUT",
                         body_for=_rate_body(ready["ratePlans"][0]), good=(202,))
    return run, front_profile.process_cpu_seconds(ready["pid"]) - before


def _row(runs: list[tuple[Run, float]]) -> dict[str, float]:
    row = summary([run for run, _ in runs])
    cpu = sum(c for _, c in runs)
    return {**row, "cpu_ms_per_request": cpu * 1000 / row["requests"] if row["requests"] else float("nan")}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.traces")
    parser.add_argument("--seconds", type=float, default=4.0, help="length of one measured round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--warm-up", type=float, default=1.0, help="seconds of each route on each server first")
    args = parser.parse_args()

    sink_port = free_port()
    sink = subprocess.Popen([sys.executable, "-m", "bench.otlp_sink", str(sink_port)])
    on_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink_port}", "OTEL_SERVICE_NAME": "bench"}
    off_env = {name: "" for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")}
    results: dict[str, dict[str, list[tuple[Run, float]]]] = {
        mode: {"GET /property": [], "PUT /rates, one cell": []} for mode in ("off", "on")}
    try:
        with bench_servers(off_env, on_env) as (off, on):
            servers = {"off": off, "on": on}

            async def measure() -> None:
                for mode, ready in servers.items():  # warm-up
                    for route in results[mode]:
                        await _round(ready, route, args.connections, args.warm_up)
                for _ in range(args.rounds):
                    for route in results["off"]:
                        for mode, ready in servers.items():
                            results[mode][route].append(await _round(ready, route, args.connections,
                                                                     args.seconds))

            trio.run(measure)
    finally:
        sink.terminate()
        sink.wait(10)

    rows = {mode: {route: _row(runs) for route, runs in routes.items()} for mode, routes in results.items()}
    print(f"{'route':<24}{'traces':>8}{'req/s':>10}{'p50 ms':>10}{'CPU-ms/req':>12}{'errors':>8}")
    cost = {}
    for route in rows["off"]:
        for mode in ("off", "on"):
            row = rows[mode][route]
            print(f"{route:<24}{mode:>8}{row['rps']:>10.0f}{row['p50_ms']:>10.2f}{row['cpu_ms_per_request']:>12.3f}"
                  f"{row['errors']:>8.0f}")
        cost[route] = rows["on"][route]["cpu_ms_per_request"] - rows["off"][route]["cpu_ms_per_request"]
        print(f"{'':<24}{'cost':>8}{'':>20}{cost[route]:>12.3f}  CPU-ms a request with traces on")
    print(f"({args.connections} connections, {args.rounds} rounds of {args.seconds:.0f}s each, cores: {os.cpu_count()})")
    out = results_dir()
    out.mkdir(exist_ok=True)
    (out / "traces.json").write_text(json.dumps({
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows, "cost_cpu_ms": cost,
        "connections": args.connections, "rounds": args.rounds, "seconds": args.seconds}, indent=2))
    errors = sum(row["errors"] for routes in rows.values() for row in routes.values())
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
