"""Several hosts on this machine (tests/hosts/topology.py): build them and measure one
partition and one failover, or keep them up to look around.

    sudo .venv/bin/python -m bench.hosts             # measure: bench/results/hosts.json
    sudo .venv/bin/python -m bench.hosts --keep      # build, print the addresses, wait for Ctrl-C
    sudo .venv/bin/python -m bench.hosts --quick     # build and tear down (checks the harness)

Needs root (network namespaces), Debian's PostgreSQL 15, HAProxy and faketime. Without
them it writes no figures and says why.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.hosts import scenarios
from tests.hosts.mixed_load import OtaSales
from tests.hosts.topology import TOKEN, Topology, missing

import json

from .results_dir import results_dir


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hosts")
    parser.add_argument("--quick", action="store_true", help="build the hosts and tear them down, nothing measured")
    parser.add_argument("--keep", action="store_true", help="build the hosts and keep them until Ctrl-C")
    parser.add_argument("--cut-seconds", type=float, default=60.0)
    args = parser.parse_args()
    if (why := missing()) is not None:
        print(f"bench.hosts: {why}", file=sys.stderr)
        return 1
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-hosts-") as work, \
            Topology.built(Path(work), service_hosts=3, skewed="svc3") as topo:
        built = time.perf_counter() - started
        print(f"bench.hosts: {len(topo.hosts)} hosts built in {built:.1f} s; balancer {topo.url}", flush=True)
        if args.keep:
            for name, host in topo.hosts.items():
                print(f"  {name:7} {host.address:15} ip netns exec {host.ns} ...")
            print(f"  DATABASE_URL={topo.database_url}\n  operator token {TOKEN}\nCtrl-C to tear down")
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                return 0
        figures: dict[str, Any] = {"built_seconds": round(built, 1), "quick": args.quick}
        if not args.quick:
            props, sales = scenarios.make_properties(topo), OtaSales()
            cut = scenarios.partition(topo, props, "svc1", args.cut_seconds, sales)
            cut.figures.pop("at")
            cut.figures.pop("at_wall")
            figures["partition"] = {**cut.figures, "error_seconds": cut.seconds_with_errors(),
                                    "error_span": round(cut.error_span(), 1),
                                    "cut_seconds": args.cut_seconds}
            topo.wait_http("client", topo.url_of("svc1") + "/readyz", timeout=30)
            failed = scenarios.failover(topo, props, sales)
            failed.figures.pop("at")
            failed.figures.pop("at_wall")
            figures["failover"] = {**failed.figures, "error_seconds": failed.seconds_with_errors(),
                                   "error_span": round(failed.error_span(), 1)}
            figures["overlapping_calls"] = topo.sandbox_stats()["overlappingCalls"]
    (results_dir() / "hosts.json").write_text(json.dumps(figures, indent=2))
    print(f"bench.hosts: done in {time.perf_counter() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("bench.hosts: the hosts are network namespaces: run it as root", file=sys.stderr)
        sys.exit(1)
    sys.exit(main())
