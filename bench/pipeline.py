"""`python -m bench.pipeline`: from 202 to the channel manager holding the value.

The service runs with its in-process sandbox channel manager (real HTTP, real budgets).
For one property writing at idle, and for many properties writing at once, it times each
PUT's 202 until its batch is `completed` (its cells marked pushed, i.e. the channel
manager accepted them), and reports channel-manager calls per 1000 accepted cells, the
429s drawn, and whether the sandbox's grid equals the record at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx

from .process import bench_server

ADMIN_TOKEN = "bench-operator"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def make_property(admin: httpx.Client, name: str) -> tuple[int, int, str]:
    body = json.loads((Path(__file__).parents[1] / "docs/examples/property.json").read_text())
    body["name"] = name
    prop = admin.post("/properties", json=body).json()["data"]
    key = admin.post(f"/properties/{prop['id']}/keys", json={"label": "bench", "scopes": ["ari:read", "ari:write"]}
                     ).json()["data"]["key"]
    return prop["id"], prop["roomTypes"][0]["id"], key


def write_and_wait(api: httpx.Client, room: int, night: date, value: int, timeout: float = 180.0) -> float:
    started = time.perf_counter()
    answer = api.put("/availability", json={"updates": [
        {"roomTypeId": room, "dateFrom": night.isoformat(), "dateTo": night.isoformat(), "available": value}]})
    if answer.status_code != 202:
        raise RuntimeError(f"PUT answered {answer.status_code}: {answer.text[:200]}")
    poll = answer.json()["data"]["poll"].removeprefix("/api/v1/connect-api/v1")
    while time.perf_counter() - started < timeout:
        if api.get(poll).json()["data"]["status"] == "completed":
            return time.perf_counter() - started
        time.sleep(0.02)
    raise RuntimeError("a batch did not complete in time")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline")
    parser.add_argument("--properties", type=int, default=200)
    parser.add_argument("--idle-writes", type=int, default=10)
    parser.add_argument("--idle-gap", type=float, default=6.5, help="seconds between idle writes (10 a minute)")
    args = parser.parse_args()

    with bench_server() as ready:
        base = f"http://127.0.0.1:{ready['port']}"
        admin = httpx.Client(base_url=f"{base}/api/v1/admin", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                             timeout=60)
        stats0 = admin.get("/sandbox").json()["data"]["stats"]

        # One property at idle: a write every idle-gap seconds, inside the channel manager's budget.
        pid, room, key = make_property(admin, "Idle")
        api = httpx.Client(base_url=f"{base}/api/v1/connect-api/v1", headers={"Authorization": f"Bearer {key}"},
                           timeout=60)
        first = date.today() + timedelta(days=2)
        idle = []
        for i in range(args.idle_writes):
            idle.append(write_and_wait(api, room, first + timedelta(days=i), i % 5))
            time.sleep(max(0.0, args.idle_gap - idle[-1]))

        # Many properties writing at once.
        many = [make_property(admin, f"P{i}") for i in range(args.properties)]
        stats1 = admin.get("/sandbox").json()["data"]["stats"]
        clients = [httpx.Client(base_url=f"{base}/api/v1/connect-api/v1",
                                headers={"Authorization": f"Bearer {k}"}, timeout=60) for _, _, k in many]
        polls: list[tuple[httpx.Client, str, float]] = []
        for client, (_, r, _) in zip(clients, many):
            started = time.perf_counter()
            answer = client.put("/availability", json={"updates": [
                {"roomTypeId": r, "dateFrom": first.isoformat(), "dateTo": (first + timedelta(days=6)).isoformat(),
                 "available": 3}]})
            polls.append((client, answer.json()["data"]["poll"].removeprefix("/api/v1/connect-api/v1"), started))
        together: list[float] = []
        pending = list(polls)
        deadline = time.perf_counter() + 600
        while pending and time.perf_counter() < deadline:
            still = []
            for client, poll, started in pending:
                if client.get(poll).json()["data"]["status"] == "completed":
                    together.append(time.perf_counter() - started)
                else:
                    still.append((client, poll, started))
            pending = still
            time.sleep(0.05)
        stats2 = admin.get("/sandbox").json()["data"]["stats"]

        # The grid equals the record for what was written (all properties, the written week).
        equal = True
        for (prop_id, r, _), client in zip([(pid, room, key), *many], [api, *clients]):
            ours = client.get(f"/availability?from={first}&to={first + timedelta(days=9)}").json()["data"]
            held = admin.get(f"/properties/{prop_id}/channel-grid?from={first}&to={first + timedelta(days=9)}")
            if held.status_code != 200:
                break  # the grid reads share the channel manager's 10-a-minute read budget: sample a few
            held_nights = {(a["date"], a["available"]) for a in held.json()["data"]["availability"]}
            our_nights = {(n["date"], n["available"]) for n in ours["roomTypes"][0]["nights"]}
            equal = equal and our_nights == held_nights
            if prop_id != pid and len(together) > 3:
                break

    calls = (stats2["availabilityCalls"] - stats1["availabilityCalls"])
    cells = 7 * len(together)
    result: dict[str, Any] = {
        "idle_p50_s": statistics.median(idle), "idle_p99_s": percentile(idle, 99),
        "together_properties": args.properties, "together_completed": len(together),
        "together_p50_s": statistics.median(together) if together else None,
        "together_p99_s": percentile(together, 99) if together else None,
        "calls_per_1000_cells": 1000 * calls / cells if cells else None,
        "throttled": stats2["throttled"] - stats0["throttled"],
        "grid_equals_record": equal,
    }
    print(f"one property at idle: 202 -> channel manager p50 {result['idle_p50_s']:.2f} s, "
          f"p99 {result['idle_p99_s']:.2f} s ({len(idle)} writes; target p50 < 2 s)")
    print(f"{args.properties} properties at once: {len(together)} completed, p50 {result['together_p50_s']:.2f} s, "
          f"p99 {result['together_p99_s']:.2f} s")
    print(f"channel-manager calls per 1000 accepted cells: {result['calls_per_1000_cells']:.0f}; "
          f"429s drawn: {result['throttled']}; sandbox grid equals the record (sampled): {equal}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "pipeline.json").write_text(json.dumps(result, indent=2))
    return 0 if equal and result["throttled"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
