"""`python -m bench.scale`: the service scaled out on one record (issue 17).

- GET /property with the budgets counted in the record (shared by every process) against
  the same process counting them in memory (as before issue 17): target >= 60 %.
- Throughput of GET /property, PUT /rates and POST /bookings against `serve --workers N`
  for N = 1, 2, 4, and the CPU time a request costs (workers, parent and the record's
  server together), which is what carries to a bigger machine.
- Pacing with three processes and one channel manager: 429s and overlapping calls.
- Exactness across three `connectapi serve` processes on one record: one key driven at
  three times its `requests` budget through all three; the most and the fewest requests
  admitted in any window, against the budget.

The record is an embedded PostgreSQL of its own; every server runs in its own process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import psutil
import trio
import trio_asyncio

from connectapi.service import EMBEDDED_DATABASE
from connectapi.storage.embedded import EmbeddedPostgres, ensure_database

from .load import Run, load
from .process import bench_server, free_port
from .results_dir import results_dir
from .round_trips import keyed_write_round_trips

ROOT = Path(__file__).parents[1]
CONNECT = "/api/v1/connect-api/v1"
API_PATH = f"{CONNECT}/property"
TARGET_RATIO = 0.60
TOKEN = "bench-scale-operator-token-of-32-plus-chars"


def _summary(runs: list[Run]) -> dict[str, float]:
    seconds = sum(r.seconds for r in runs)
    requests = sum(r.requests for r in runs)
    latencies = sorted(x for r in runs for x in r.latencies)
    return {"rps": requests / seconds if seconds else 0.0, "requests": requests,
            "errors": sum(r.errors for r in runs),
            "p50_ms": latencies[len(latencies) // 2] * 1000 if latencies else float("nan")}


def _cpu_seconds(pids: list[int]) -> float:
    """CPU time of these processes, their children and the record's server processes."""
    total = 0.0
    seen: set[int] = set()
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                if proc.pid not in seen:
                    seen.add(proc.pid)
                    times = proc.cpu_times()
                    total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def shared_against_memory(seconds: float, rounds: int, connections: int) -> dict[str, Any]:
    """One server counting in the record, one in memory, loaded in turn."""
    results: dict[str, list[Run]] = {"record": [], "memory": []}
    cpu: dict[str, float] = {"record": 0.0, "memory": 0.0}
    with bench_server() as record, bench_server({"BENCH_MEMORY_BUDGETS": "1"}) as memory:
        servers = {"record": record, "memory": memory}

        async def measure() -> None:
            for name, ready in servers.items():  # warm-up
                await load(ready["port"], API_PATH, {"Authorization": f"Bearer {ready['key']}"}, connections, 1.0)
            for _ in range(rounds):
                for name, ready in servers.items():
                    before = _cpu_seconds([ready["pid"]])
                    results[name].append(await load(ready["port"], API_PATH,
                                                    {"Authorization": f"Bearer {ready['key']}"}, connections,
                                                    seconds))
                    cpu[name] += _cpu_seconds([ready["pid"]]) - before

        trio.run(measure)
    shared, local = _summary(results["record"]), _summary(results["memory"])
    for name, row in (("record", shared), ("memory", local)):
        row["server_cpu_ms_per_request"] = cpu[name] * 1000 / row["requests"] if row["requests"] else float("nan")
    return {"record": shared, "memory": local, "ratio": shared["rps"] / local["rps"] if local["rps"] else 0.0}


def _serve(data_dir: Path, port: int, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}
    return subprocess.Popen([sys.executable, "-m", "connectapi", "serve", "--port", str(port), *extra],
                            env={**clean, "CONNECTAPI_DATA_DIR": str(data_dir), **env}, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(30)


async def _ready(url: str, limit: float = 90.0) -> None:
    give_up = trio.current_time() + limit
    async with httpx.AsyncClient(timeout=2) as http:
        while True:
            try:
                if (await http.get(f"{url}/readyz")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if trio.current_time() > give_up:
                raise RuntimeError(f"{url} never became ready")
            await trio.sleep(0.2)


LIFTED = {name: 1_000_000_000 for name in ("ip", "global", "ip-auth", "requests", "writes", "property",
                                          "property-writes", "cells", "bookings", "property-bookings",
                                          "property-bookings-day")}


def _record(scratch: Path, stack: ExitStack) -> tuple[str, Path]:
    """An embedded PostgreSQL of its own for the run: the DSN of its database, its data dir."""
    embedded = EmbeddedPostgres(scratch / "pg")
    server_dsn = embedded.start()
    stack.callback(embedded.stop)

    async def database() -> str:
        async with trio_asyncio.open_loop():
            return await ensure_database(server_dsn, EMBEDDED_DATABASE)

    return trio.run(database), scratch / "pg"


def _record_pids(data_dir: Path) -> list[int]:
    """The record's postmaster (its backends are its children)."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if proc.info.get("name") == "postgres" and str(data_dir) in " ".join(cmdline) and "-D" in cmdline:
            found.append(proc.pid)
    return found


def _stay(n: int) -> str:
    night = date.today() + timedelta(days=3 + n % 300)
    return night.isoformat()


def workers_throughput(counts: list[int], seconds: float, connections: int) -> list[dict[str, Any]]:
    """GET /property, PUT /rates (one cell) and POST /bookings against `serve --workers N`,
    budgets lifted, pushes paused: requests a second and CPU-ms a request (workers, parent
    and the record's server together)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="connectapi-scale-") as scratch, ExitStack() as stack:
        dsn, pg_dir = _record(Path(scratch), stack)
        env = {"DATABASE_URL": dsn, "CONNECTAPI_ADMIN_TOKEN": TOKEN, "CONNECTAPI_PUSH_PAUSED": "1",
               "CONNECTAPI_BUDGETS": ",".join(f"{k}={v}" for k, v in LIFTED.items())}
        for workers in counts:
            port = free_port()
            proc = _serve(Path(scratch) / f"w{workers}", port, env, "--workers", str(workers))
            url = f"http://127.0.0.1:{port}"
            try:
                rows += trio.run(_measure_routes, url, port, workers, seconds, connections,
                                 [proc.pid, *_record_pids(pg_dir)])
            finally:
                _stop(proc)
    return rows


async def _measure_routes(url: str, port: int, workers: int, seconds: float, connections: int,
                          pids: list[int]) -> list[dict[str, Any]]:
    await _ready(url)
    admin = {"Authorization": f"Bearer {TOKEN}"}
    example = json.loads((ROOT / "docs/examples/property.json").read_text())
    example["roomTypes"][0]["rooms"] = 500
    async with httpx.AsyncClient(timeout=30) as http:
        prop = (await http.post(f"{url}/api/v1/admin/properties", json=example, headers=admin)).json()["data"]
        made = (await http.post(f"{url}/api/v1/admin/properties/{prop['id']}/keys", headers=admin,
                                json={"label": "load", "scopes": ["ari:read", "ari:write", "bookings:write"]}))
    key = {"Authorization": f"Bearer {made.json()['data']['key']}"}
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]

    def rate(n: int) -> bytes:
        night = _stay(n)
        return json.dumps({"updates": [{"ratePlanId": plan, "dateFrom": night, "dateTo": night,
                                        "rate": str(90 + n % 40), "currency": "EUR"}]}).encode()

    def booking(n: int) -> bytes:
        night = date.fromisoformat(_stay(n))
        return json.dumps({"externalReference": f"W{workers}-{n}-{time.monotonic_ns()}",
                           "checkIn": night.isoformat(), "checkOut": (night + timedelta(days=1)).isoformat(),
                           "currency": "EUR", "guest": {"name": "Bench Guest", "phone": f"+35191{n % 10**7:07d}"},
                           "rooms": [{"roomTypeId": room, "ratePlanId": plan, "adults": 2,
                                      "nightlyRate": "99.00"}]}).encode()

    routes: list[tuple[str, str, str, Any, tuple[int, ...]]] = [
        ("GET /property", "GET", f"{API_PATH}", None, (200,)),
        ("PUT /rates (1 cell)", "PUT", "/api/v1/connect-api/v1/rates", rate, (202,)),
        ("POST /bookings", "POST", "/api/v1/connect-api/v1/bookings", booking, (201,)),
    ]
    rows = []
    for name, method, path, body_for, good in routes:
        await load(port, path, key, connections, 1.0, method, body_for, good)  # warm-up
        before = _cpu_seconds(pids)
        run = await load(port, path, key, connections, seconds, method, body_for, good)
        cpu = _cpu_seconds(pids) - before
        rows.append({"workers": workers, "route": name, "rps": run.rps, "p50_ms": run.percentile(50) * 1000,
                     "errors": run.errors, "requests": run.requests,
                     "cpu_ms_per_request": cpu * 1000 / run.requests if run.requests else float("nan")})
    return rows


def exactness(limit: int, window: float, windows: int) -> dict[str, Any]:
    """Three processes, one key at three times its `requests` budget: admitted per window."""
    with tempfile.TemporaryDirectory(prefix="connectapi-scale-") as scratch, ExitStack() as stack:
        dsn, _ = _record(Path(scratch), stack)
        env = {"DATABASE_URL": dsn, "CONNECTAPI_ADMIN_TOKEN": TOKEN, "CONNECTAPI_PUSH_PAUSED": "1",
               "CONNECTAPI_BUDGETS": ",".join(f"{k}={v}" for k, v in {**LIFTED, "requests": limit}.items()),
               "CONNECTAPI_TEST_BUDGET_WINDOW_SECONDS": str(window)}
        urls = []
        for name in ("a", "b", "c"):
            port = free_port()
            proc = _serve(Path(scratch) / name, port, env)
            stack.callback(_stop, proc)
            urls.append(f"http://127.0.0.1:{port}")
            time.sleep(1.0)  # the first applies the migrations; the others find them done

        async def drive() -> list[tuple[float, float, int]]:
            for url in urls:
                await _ready(url)
            admin = {"Authorization": f"Bearer {TOKEN}"}
            example = json.loads((ROOT / "docs/examples/property.json").read_text())
            async with httpx.AsyncClient(timeout=30) as http:
                prop = (await http.post(f"{urls[0]}/api/v1/admin/properties", json=example,
                                        headers=admin)).json()["data"]
                made = (await http.post(f"{urls[0]}/api/v1/admin/properties/{prop['id']}/keys", headers=admin,
                                        json={"label": "load", "scopes": ["ari:read"]})).json()["data"]
            key = {"Authorization": f"Bearer {made['key']}"}
            answers: list[tuple[float, float, int]] = []
            every = window / (3 * limit)
            start = trio.current_time()

            async def client(i: int) -> None:
                async with httpx.AsyncClient(timeout=30) as http:
                    n = 0
                    while (due := start + (3 * n + i) * every) < start + windows * window:
                        await trio.sleep_until(due)
                        sent = time.monotonic()
                        status = (await http.get(f"{urls[i]}{API_PATH}", headers=key)).status_code
                        answers.append((sent, time.monotonic(), status))
                        n += 1

            async with trio.open_nursery() as nursery:
                for i in range(3):
                    nursery.start_soon(client, i)
            return sorted(answers)

        answers = trio.run(drive)
    admitted = [a for a in answers if a[2] == 200]
    slowest = max(received - sent for sent, received, _ in answers)
    most = max(sum(1 for b in admitted if a[0] <= b[0] < a[0] + window - slowest) for a in admitted)
    start = answers[0][0]
    per_window = [sum(1 for b in admitted if start + k * window <= b[1] and b[0] < start + (k + 1) * window)
                  for k in range(windows)]
    return {"processes": 3, "budget": limit, "window_s": window, "windows": windows, "requests": len(answers),
            "admitted": len(admitted), "refused": sum(1 for a in answers if a[2] == 429),
            "other": sum(1 for a in answers if a[2] not in (200, 429)),
            "most_in_a_window": most, "fewest_in_a_window": min(per_window),
            "most_ratio": most / limit, "fewest_ratio": min(per_window) / limit, "slowest_s": slowest}


CM_KEY = "bench-scale-sandbox-key-0001"


def pacing(properties: int, seconds: float, every: float) -> dict[str, Any]:
    """Three processes on one record and one channel manager (a standalone sandbox whose
    pushes take 150 ms), `properties` properties writing availability and a rate every
    `every` seconds through the three in turn: what the channel manager answered 429 and
    how many calls for one property overlapped, then whether its grid holds every value."""
    with tempfile.TemporaryDirectory(prefix="connectapi-scale-") as scratch, ExitStack() as stack:
        dsn, _ = _record(Path(scratch), stack)
        cm_port = free_port()
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}
        sandbox = subprocess.Popen([sys.executable, "-m", "connectapi", "sandbox-cm", "--port", str(cm_port),
                                    "--call-ms", "150"], env={**clean, "CONNECTAPI_CM_KEY": CM_KEY}, cwd=ROOT,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
        stack.callback(_stop, sandbox)
        cm_url = f"http://127.0.0.1:{cm_port}"
        env = {"DATABASE_URL": dsn, "CONNECTAPI_ADMIN_TOKEN": TOKEN, "CONNECTAPI_CM_URL": cm_url,
               "CONNECTAPI_CM_KEY": CM_KEY,
               "CONNECTAPI_BUDGETS": ",".join(f"{k}={v}" for k, v in LIFTED.items())}
        urls = []
        for name in ("a", "b", "c"):
            port = free_port()
            stack.callback(_stop, _serve(Path(scratch) / name, port, env))
            urls.append(f"http://127.0.0.1:{port}")
            time.sleep(1.0)
        return trio.run(_paced, urls, cm_url, properties, seconds, every)


async def _paced(urls: list[str], cm_url: str, properties: int, seconds: float, every: float) -> dict[str, Any]:
    for url in urls:
        await _ready(url)
    admin = {"Authorization": f"Bearer {TOKEN}"}
    first = date.today() + timedelta(days=3)
    nights = 14
    async with httpx.AsyncClient(timeout=60) as http, \
            httpx.AsyncClient(base_url=cm_url, headers={"user-api-key": CM_KEY}, timeout=30) as cm:
        made = []
        for n in range(properties):
            example = json.loads((ROOT / "docs/examples/property.json").read_text())
            example["name"] = f"Casa {n}"
            prop = (await http.post(f"{urls[n % 3]}/api/v1/admin/properties", json=example,
                                    headers=admin)).json()["data"]
            room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
            cm_prop = (await cm.post("/api/v1/properties", json={"property": {"title": f"Casa {n}",
                                                                              "currency": "EUR"}})).json()["data"]["id"]
            cm_room = (await cm.post("/api/v1/room_types", json={"room_type": {
                "property_id": cm_prop, "title": "Double", "count_of_rooms": 8}})).json()["data"]["id"]
            cm_plan = (await cm.post("/api/v1/rate_plans", json={"rate_plan": {
                "property_id": cm_prop, "room_type_id": cm_room, "title": "Flexible"}})).json()["data"]["id"]
            await http.put(f"{urls[0]}/api/v1/admin/properties/{prop['id']}/channel-mapping", headers=admin, json={
                "cmPropertyId": cm_prop, "roomTypes": {str(room): cm_room}, "ratePlans": {str(plan): cm_plan}})
            key = (await http.post(f"{urls[0]}/api/v1/admin/properties/{prop['id']}/keys", headers=admin,
                                   json={"label": "pms", "scopes": ["ari:read", "ari:write"]})).json()["data"]["key"]
            made.append((prop["id"], room, plan, {"Authorization": f"Bearer {key}"}, cm_prop, cm_room))
        writes, statuses = 0, Counter[int]()
        last: dict[tuple[int, str], int] = {}
        started = trio.current_time()

        async def writer(n: int) -> None:
            nonlocal writes
            pid, room, plan, key, _, _ = made[n]
            await trio.sleep(every * n / properties)
            turn = 0
            while trio.current_time() - started < seconds:
                night = (first + timedelta(days=turn % nights)).isoformat()
                value = 1 + (turn * 7 + n) % 7
                body = {"updates": [{"roomTypeId": room, "dateFrom": night, "dateTo": night, "available": value}]}
                answer = await http.put(f"{urls[(n + turn) % 3]}{CONNECT}/availability",
                                        json=body, headers=key)
                statuses[answer.status_code] += 1
                writes += 1
                if answer.status_code == 202:
                    last[(pid, night)] = value
                turn += 1
                await trio.sleep(every)

        async with trio.open_nursery() as nursery:
            for n in range(properties):
                nursery.start_soon(writer, n)
        # Until the channel manager holds every last value (its budget's window, and a margin).
        give_up = trio.current_time() + 120
        while True:
            behind = 0
            for pid, room, _, _, cm_prop, cm_room in made:
                held = (await cm.get("/_sandbox/grid", params={
                    "filter[property_id]": cm_prop, "filter[date][gte]": first.isoformat(),
                    "filter[date][lte]": (first + timedelta(days=nights - 1)).isoformat()})).json()["data"]
                grid = held["availability"].get(cm_room, {})
                behind += sum(1 for (p, night), value in last.items() if p == pid and grid.get(night) != value)
            if not behind or trio.current_time() > give_up:
                break
            await trio.sleep(2)
        drained = trio.current_time() - started - seconds
        stats = (await cm.get("/_sandbox/stats")).json()["stats"]
    return {"processes": 3, "properties": properties, "seconds": seconds, "writes": writes,
            "statuses": {str(k): v for k, v in statuses.items()}, "throttled": stats["throttled"],
            "overlapping_calls": stats["overlappingCalls"], "availability_calls": stats["availabilityCalls"],
            "cells_behind": behind, "grid_equals_record": behind == 0, "drained_after_s": drained}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--window", type=float, default=2.0)
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--properties", type=int, default=50, help="properties writing in the pacing run")
    parser.add_argument("--pacing-seconds", type=float, default=60.0)
    args = parser.parse_args()

    front = shared_against_memory(args.seconds, args.rounds, args.connections)
    print(f"{'GET /property, one process':<34}{'req/s':>10}{'p50 ms':>10}{'CPU ms/req':>12}{'errors':>8}")
    for name, row in (("budgets in the record (shared)", front["record"]), ("budgets in memory", front["memory"])):
        print(f"{name:<34}{row['rps']:>10.0f}{row['p50_ms']:>10.2f}{row['server_cpu_ms_per_request']:>12.2f}"
              f"{row['errors']:>8.0f}")
    verdict = "meets" if front["ratio"] >= TARGET_RATIO else "MISSES"
    print(f"shared / in memory = {front['ratio']:.2f} ({verdict} the {TARGET_RATIO:.0%} target)")

    workers = workers_throughput(args.workers, args.seconds, args.connections)
    print(f"{'serve --workers N':<28}{'N':>3}{'req/s':>10}{'p50 ms':>10}{'CPU ms/req':>12}{'errors':>8}")
    for row in workers:
        print(f"{row['route']:<28}{row['workers']:>3}{row['rps']:>10.0f}{row['p50_ms']:>10.2f}"
              f"{row['cpu_ms_per_request']:>12.2f}{row['errors']:>8.0f}")

    trips = keyed_write_round_trips()
    print(f"round trips to PostgreSQL per keyed PUT /rates: {trips['per_request']:.2f} "
          f"({trips['round_trips']} for {trips['requests']} requests, {trips['idle_round_trips']} idle)")

    paced = pacing(args.properties, args.pacing_seconds, 3.0)
    print(f"pacing, 3 processes, {paced['properties']} properties writing every 3 s for {paced['seconds']:.0f} s: "
          f"{paced['writes']} writes {paced['statuses']}, {paced['availability_calls']} availability calls, "
          f"429s {paced['throttled']}, overlapping calls {paced['overlapping_calls']}, "
          f"grid equals the record: {paced['grid_equals_record']}")

    exact = exactness(args.budget, args.window, args.windows)
    print(f"exactness, 3 processes, `requests` {exact['budget']} per {exact['window_s']:.0f} s driven at 3x: "
          f"most in a window {exact['most_in_a_window']}, fewest {exact['fewest_in_a_window']} "
          f"({exact['admitted']} admitted, {exact['refused']} refused, {exact['other']} other)")

    (results_dir() / "scale.json").write_text(json.dumps({"front": front, "workers": workers, "round_trips": trips, "pacing": paced, "exactness": exact, "cores": os.cpu_count(),
                                  "connections": args.connections}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
