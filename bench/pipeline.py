"""`python -m bench.pipeline`: from 202 to the channel manager holding the value.

The service runs with its in-process sandbox channel manager (real HTTP, real budgets).
Three phases: one property writing at idle; many properties writing once, all at the
same moment; the same properties writing again and again for a while (steady state,
availability and rates in turn). Each PUT's 202 is timed until its batch is `completed`
(its cells marked pushed, i.e. the channel manager accepted them); the writes at the same
moment are timed from that moment until the channel manager accepted each call. Reported per phase:
p50/p99 of that time, channel-manager calls per 1000 accepted cells and the 429s drawn;
at the end, whether the sandbox's grid equals the record for every property.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import trio

from .results_dir import results_dir
from .process import bench_server
from .stats import percentile, thin

ADMIN_TOKEN = "bench-operator"
API = "/api/v1/connect-api/v1"



def make_property(admin: httpx.Client, name: str) -> tuple[int, int, int, str]:
    body = json.loads((Path(__file__).parents[1] / "docs/examples/property.json").read_text())
    body["name"] = name
    prop = admin.post("/properties", json=body).json()["data"]
    key = admin.post(f"/properties/{prop['id']}/keys", json={"label": "bench", "scopes": ["ari:read", "ari:write"]}
                     ).json()["data"]["key"]
    return prop["id"], prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"], key


def write_and_wait(api: httpx.Client, room: int, night: date, value: int, timeout: float = 180.0) -> float:
    started = time.perf_counter()
    answer = api.put("/availability", json={"updates": [
        {"roomTypeId": room, "dateFrom": night.isoformat(), "dateTo": night.isoformat(), "available": value}]})
    if answer.status_code != 202:
        raise RuntimeError(f"PUT answered {answer.status_code}: {answer.text[:200]}")
    poll = answer.json()["data"]["poll"].removeprefix(API)
    while time.perf_counter() - started < timeout:
        if api.get(poll).json()["data"]["status"] == "completed":
            return time.perf_counter() - started
        time.sleep(0.02)
    raise RuntimeError("a batch did not complete in time")


async def wait_completed(api: httpx.AsyncClient, key: str, poll: str, started: float, timeout: float,
                         into: list[dict[str, Any]] | None = None) -> float:
    """Seconds from `started` until the batch is completed (the batch then put in `into`);
    polls back off to one a second."""
    pause = 0.05
    while time.perf_counter() - started < timeout:
        answer = await api.get(poll, headers={"Authorization": f"Bearer {key}"})
        if answer.json()["data"]["status"] == "completed":
            if into is not None:
                into.append(answer.json()["data"])
            return time.perf_counter() - started
        await trio.sleep(pause)
        pause = min(1.0, pause * 2)
    raise RuntimeError("a batch did not complete in time")


async def all_at_once(base: str, many: list[tuple[int, int, int, str]], first: date
                      ) -> tuple[list[float], list[float]]:
    """Every property writes a week of availability at the same moment; answers, for each
    call the channel manager accepted, the seconds from that moment until it did; and for
    each write, the seconds from its own 202 until the channel manager applied the call
    that carried it (matched by the task id its batch lists).

    Timed by the channel manager itself: each call the sandbox applies carries the instant
    it applied it (`GET /api/v1/admin/sandbox/calls`), read once all have come. Polling for
    arrivals timed the poll's own answer, which waited in line behind the burst it measured
    (up to the last PUT); polling 200 batches would load the machine it measures. Each
    batch is then checked to be completed.
    """
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    limits = httpx.Limits(max_connections=len(many) + 1, max_keepalive_connections=len(many) + 1)
    polls: list[tuple[str, str, datetime]] = []
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:

        async def accepted() -> int:
            return int((await client.get("/api/v1/admin/sandbox", headers=admin)).json()["data"]["stats"][
                "availabilityCalls"])

        before = await accepted()
        started, started_at = time.perf_counter(), datetime.now(UTC)

        async def one(room: int, key: str) -> None:
            answer = await client.put(f"{API}/availability", headers={"Authorization": f"Bearer {key}"}, json={
                "updates": [{"roomTypeId": room, "dateFrom": first.isoformat(),
                             "dateTo": (first + timedelta(days=6)).isoformat(), "available": 3}]})
            if answer.status_code != 202:
                raise RuntimeError(f"PUT answered {answer.status_code}: {answer.text[:200]}")
            polls.append((key, answer.json()["data"]["poll"], datetime.now(UTC)))

        async with trio.open_nursery() as nursery:
            for _, room, _, key in many:
                nursery.start_soon(one, room, key)
            while await accepted() - before < len(many) and time.perf_counter() - started < 600:
                await trio.sleep(0.5)
        calls = (await client.get("/api/v1/admin/sandbox/calls", headers=admin)).json()["data"]
        applied_at = {c["task_id"]: datetime.fromisoformat(c["at"]) for c in calls if c["task_id"]}
        from_202 = []
        for key, poll, answered_at in polls:
            batches: list[dict[str, Any]] = []
            await wait_completed(client, key, poll, time.perf_counter(), 120, batches)
            tasks = [t["taskId"] for t in batches[0]["channelTasks"] if t["taskId"] in applied_at]
            if tasks:
                from_202.append((applied_at[tasks[0]] - answered_at).total_seconds())
    applied = sorted(datetime.fromisoformat(c["at"]) for c in calls if c["kind"] == "availability")
    return [(at - started_at).total_seconds() for at in applied if at >= started_at][:len(many)], from_202


async def steady_state(base: str, many: list[tuple[int, int, int, str]], first: date, seconds: float,
                       gap: float) -> tuple[list[float], int]:
    """Every property writes every `gap` seconds for `seconds`, availability and rates in turn.

    Answers the 202-to-completed times and the accepted cells. Writes are not held back
    while an earlier batch is pending: the service must coalesce and pace them.
    """
    latencies: list[float] = []
    cells = 0
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=f"{base}/api/v1/connect-api/v1", timeout=120, limits=limits) as api:

        async def measure(key: str, poll: str, started: float) -> None:
            latencies.append(await wait_completed(api, key, poll, started, 600))

        async def writer(index: int, room: int, plan: int, key: str, nursery: trio.Nursery) -> None:
            nonlocal cells
            await trio.sleep(gap * index / len(many))  # spread the properties over one gap
            end = time.perf_counter() + seconds
            turn = 0
            while time.perf_counter() < end:
                started = time.perf_counter()
                night = first + timedelta(days=turn % 14)
                update: dict[str, Any]
                if turn % 2 == 0:
                    path, update = "/availability", {"roomTypeId": room, "available": turn % 7}
                else:
                    path, update = "/rates", {"ratePlanId": plan, "rate": str(100 + turn % 50), "currency": "EUR"}
                update |= {"dateFrom": night.isoformat(), "dateTo": (night + timedelta(days=2)).isoformat()}
                answer = await api.put(path, json={"updates": [update]}, headers={"Authorization": f"Bearer {key}"})
                if answer.status_code != 202:
                    raise RuntimeError(f"PUT answered {answer.status_code}: {answer.text[:200]}")
                cells += 3
                nursery.start_soon(measure, key, answer.json()["data"]["poll"].removeprefix(API), started)
                turn += 1
                await trio.sleep(max(0.0, gap - (time.perf_counter() - started)))

        async with trio.open_nursery() as nursery:
            for index, (_, room, plan, key) in enumerate(many):
                nursery.start_soon(writer, index, room, plan, key, nursery)
    return latencies, cells


async def grid_equals_record(base: str, props: list[tuple[int, int, int, str]], first: date,
                             last: date) -> list[int]:
    """The properties whose channel-manager grid differs from the record (availability and rates)."""
    differing = []
    window = f"from={first}&to={last}"
    limiter = trio.CapacityLimiter(8)
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:

        async def check(prop_id: int, key: str) -> None:
            async with limiter:
                auth = {"Authorization": f"Bearer {key}"}
                availability = (await client.get(f"{API}/availability?{window}", headers=auth)
                                ).json()["data"]["roomTypes"]
                rates = (await client.get(f"{API}/rates?{window}", headers=auth)).json()["data"]["ratePlans"]
                held = (await client.get(f"/api/v1/admin/properties/{prop_id}/channel-grid?{window}",
                                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})).json()["data"]
            ours_a = {(r["roomTypeId"], n["date"], n["available"]) for r in availability for n in r["nights"]}
            ours_r = {(r["ratePlanId"], n["date"], n["rateMinor"]) for r in rates for n in r["nights"]
                      if n["rateMinor"] is not None}
            held_a = {(a["roomTypeId"], a["date"], a["available"]) for a in held["availability"]}
            held_r = {(r["ratePlanId"], r["date"], r["rateMinor"]) for r in held["rates"]}
            if ours_a != held_a or ours_r != held_r:
                differing.append(prop_id)

        async with trio.open_nursery() as nursery:
            for prop_id, _, _, key in props:
                nursery.start_soon(check, prop_id, key)
    return sorted(differing)


def calls(before: dict[str, int], after: dict[str, int]) -> int:
    return (after["availabilityCalls"] - before["availabilityCalls"]
            + after["restrictionCalls"] - before["restrictionCalls"])


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline")
    parser.add_argument("--properties", type=int, default=200)
    parser.add_argument("--idle-writes", type=int, default=10)
    # Ten writes in a little more than a minute: with the call that seeds the new property's
    # availability, 6.5 s made the tenth the eleventh call in a minute, paced (p99 3.5 s).
    parser.add_argument("--idle-gap", type=float, default=6.8,
                        help="seconds between idle writes (under 10 calls a minute with the seeding call)")
    parser.add_argument("--steady-seconds", type=float, default=120.0)
    parser.add_argument("--steady-gap", type=float, default=6.0,
                        help="seconds between one property's writes in the steady phase")
    args = parser.parse_args()

    phases: dict[str, float] = {}
    mark = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal mark
        phases[name] = round(time.perf_counter() - mark, 1)
        mark = time.perf_counter()

    with bench_server() as ready:
        phase("start")
        base = f"http://127.0.0.1:{ready['port']}"
        admin = httpx.Client(base_url=f"{base}/api/v1/admin", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                             timeout=60)
        stats0 = admin.get("/sandbox").json()["data"]["stats"]

        # One property at idle: a write every idle-gap seconds, inside the channel manager's budget.
        pid, room, plan, key = make_property(admin, "Idle")
        api = httpx.Client(base_url=f"{base}{API}", headers={"Authorization": f"Bearer {key}"}, timeout=60)
        first = date.today() + timedelta(days=2)
        idle = []
        for i in range(args.idle_writes):
            idle.append(write_and_wait(api, room, first + timedelta(days=i), i % 5))
            time.sleep(max(0.0, args.idle_gap - idle[-1]))
        phase("idle")

        # Many properties writing once, at the same moment.
        # Made eight at a time (each is mapped on the sandbox too): making them is not measured.
        with ThreadPoolExecutor(8) as makers:
            many = list(makers.map(lambda i: make_property(admin, f"P{i}"), range(args.properties)))
        phase("make properties")
        stats1 = admin.get("/sandbox").json()["data"]["stats"]
        together, together_from_202 = trio.run(all_at_once, base, many, first)
        stats2 = admin.get("/sandbox").json()["data"]["stats"]
        phase("at once")

        # The same properties writing again and again.
        print(f"steady state: {args.properties} properties, a write every {args.steady_gap:g} s each, "
              f"for {args.steady_seconds:g} s ...", flush=True)
        steady, steady_cells = trio.run(steady_state, base, many, first, args.steady_seconds, args.steady_gap)
        stats3 = admin.get("/sandbox").json()["data"]["stats"]
        phase("steady")

        differing = trio.run(grid_equals_record, base, [(pid, room, plan, key), *many], first,
                             first + timedelta(days=20))
        phase("grid check")

    together_cells = 7 * len(together)
    result: dict[str, Any] = {
        "idle_p50_s": statistics.median(idle), "idle_p99_s": percentile(idle, 99),
        "together_properties": args.properties, "together_completed": len(together),
        "together_p50_s": statistics.median(together) if together else None,
        "together_p99_s": percentile(together, 99) if together else None,
        # The same calls timed from each write's own 202, as the idle figure is.
        "together_from_202_p50_s": statistics.median(together_from_202) if together_from_202 else None,
        "together_from_202_p99_s": percentile(together_from_202, 99) if together_from_202 else None,
        "together_calls_per_1000_cells": 1000 * calls(stats1, stats2) / together_cells if together_cells else None,
        "together_throttled": stats2["throttled"] - stats1["throttled"],
        "steady_seconds": args.steady_seconds, "steady_gap_s": args.steady_gap,
        "steady_writes": len(steady), "steady_cells": steady_cells,
        "steady_p50_s": statistics.median(steady) if steady else None,
        "steady_p99_s": percentile(steady, 99) if steady else None,
        "steady_calls_per_1000_cells": 1000 * calls(stats2, stats3) / steady_cells if steady_cells else None,
        "steady_throttled": stats3["throttled"] - stats2["throttled"],
        "throttled": stats3["throttled"] - stats0["throttled"],
        "properties_checked": len(many) + 1,
        "grid_differs_for": differing,
        "grid_equals_record": not differing,
        "phase_seconds": phases,
        "latencies": {"one property at idle": idle, "many at once": together, "steady state": thin(steady)},
    }
    print(f"one property at idle: 202 -> channel manager p50 {result['idle_p50_s']:.2f} s, "
          f"p99 {result['idle_p99_s']:.2f} s ({len(idle)} writes; target p50 < 1.5 s)")
    print(f"{args.properties} properties at once: {len(together)} completed, p50 {result['together_p50_s']:.2f} s, "
          f"p99 {result['together_p99_s']:.2f} s, {result['together_calls_per_1000_cells']:.0f} calls per 1000 "
          f"cells, {result['together_throttled']} 429s; from each write's 202: p50 "
          f"{result['together_from_202_p50_s']:.2f} s, p99 {result['together_from_202_p99_s']:.2f} s "
          f"({len(together_from_202)} writes)")
    print(f"steady state ({len(steady)} writes, {steady_cells} cells): p50 {result['steady_p50_s']:.2f} s, "
          f"p99 {result['steady_p99_s']:.2f} s, {result['steady_calls_per_1000_cells']:.0f} calls per 1000 cells, "
          f"{result['steady_throttled']} 429s (target 0)")
    print(f"sandbox grid equals the record for all {result['properties_checked']} properties: "
          f"{result['grid_equals_record']} (differing: {differing[:10]}); phases {phases} s")
    out = results_dir()
    out.mkdir(exist_ok=True)
    (out / "pipeline.json").write_text(json.dumps(result, indent=2))
    return 0 if result["grid_equals_record"] and result["throttled"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
