"""`python -m bench.bookings`: POST /bookings on one property, budgets lifted.

Runs of `--seconds` each: one client booking one stay after another (the latency of a
booking: p50/p99), then `--connections` clients with bookings spread over different
nights (no contention) and all for the same night (contention for one room type's count,
with enough rooms that none is refused): bookings per second. Then an oversell check:
more requests than rooms left for one night, all at once; exactly the rooms left may
succeed. Targets: p50 under 40 ms, at least 100 bookings a second, zero overbooking.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import trio

from .results_dir import results_dir
from .pipeline import ADMIN_TOKEN, API
from .stats import percentile, thin
from .process import bench_server

P50_MS = 40.0
PER_SECOND = 100.0


def make_property(base: str, rooms: int) -> tuple[int, int, int, str]:
    admin = httpx.Client(base_url=f"{base}/api/v1/admin", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                         timeout=60)
    body = json.loads((Path(__file__).parents[1] / "docs/examples/property.json").read_text())
    body["roomTypes"][0]["rooms"] = rooms
    body["ownerEmail"] = None
    prop = admin.post("/properties", json=body).json()["data"]
    key = admin.post(f"/properties/{prop['id']}/keys", json={
        "label": "bench", "scopes": ["bookings:read", "bookings:write", "ari:read", "ari:write"]}).json()["data"]["key"]
    return prop["id"], prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"], key


def booking(reference: str, room: int, plan: int, night: date) -> dict[str, Any]:
    return {"externalReference": reference, "checkIn": night.isoformat(),
            "checkOut": (night + timedelta(days=1)).isoformat(), "currency": "EUR",
            "guest": {"name": "Bench Guest", "phone": f"+3519{abs(hash(reference)) % 10**8:08d}"},
            "rooms": [{"roomTypeId": room, "ratePlanId": plan, "adults": 2, "nightlyRate": "99.00"}]}


async def run(base: str, key: str, room: int, plan: int, connections: int, seconds: float,
              night_of: Any, tag: str) -> dict[str, Any]:
    latencies: list[float] = []
    refused: dict[int, int] = {}
    counter = itertools.count()
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=f"{base}{API}", headers={"Authorization": f"Bearer {key}"}, timeout=60,
                                 limits=limits) as api:
        end = time.perf_counter() + seconds
        started = time.perf_counter()

        async def client() -> None:
            while time.perf_counter() < end:
                i = next(counter)
                sent = time.perf_counter()
                answer = await api.post("/bookings", json=booking(f"{tag}-{i}", room, plan, night_of(i)))
                if answer.status_code == 201:
                    latencies.append(time.perf_counter() - sent)
                else:
                    refused[answer.status_code] = refused.get(answer.status_code, 0) + 1

        async with trio.open_nursery() as nursery:
            for _ in range(connections):
                nursery.start_soon(client)
        elapsed = time.perf_counter() - started
    return {"bookings": len(latencies), "per_second": len(latencies) / elapsed, "latencies": thin(latencies),
            "p50_ms": statistics.median(latencies) * 1000 if latencies else None,
            "p99_ms": percentile(latencies, 99) * 1000 if latencies else None, "refused": refused}


async def oversell(base: str, key: str, room: int, plan: int, night: date, requests: int) -> dict[str, Any]:
    """`requests` bookings at once for one night: exactly the rooms left may be sold."""
    async with httpx.AsyncClient(base_url=f"{base}{API}", headers={"Authorization": f"Bearer {key}"},
                                 timeout=60) as api:
        read = (await api.get(f"/availability?from={night}&to={night}")).json()["data"]
        left = read["roomTypes"][0]["nights"][0]["available"]
        statuses: list[int] = []

        async def one(i: int) -> None:
            statuses.append((await api.post("/bookings", json=booking(f"OVER-{i}", room, plan, night))).status_code)

        async with trio.open_nursery() as nursery:
            for i in range(requests):
                nursery.start_soon(one, i)
        after = (await api.get(f"/availability?from={night}&to={night}")).json()["data"]
    sold = statuses.count(201)
    return {"rooms_left": left, "requests": requests, "sold": sold, "refused_409": statuses.count(409),
            "available_after": after["roomTypes"][0]["nights"][0]["available"],
            "overbooked": sold > left or after["roomTypes"][0]["nights"][0]["available"] < 0}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bookings")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()

    with bench_server() as ready:
        base = f"http://127.0.0.1:{ready['port']}"
        _, room, plan, key = make_property(base, 10_000)
        first = date.today() + timedelta(days=1)

        def spread(i: int) -> date:
            return first + timedelta(days=i % 360)

        alone = trio.run(run, base, key, room, plan, 1, args.seconds, spread, "ALONE")
        many = trio.run(run, base, key, room, plan, args.connections, args.seconds, spread, "SPREAD")
        same = trio.run(run, base, key, room, plan, args.connections, args.seconds,
                        lambda i: first + timedelta(days=2), "SAME")
        _, room2, plan2, key2 = make_property(base, 5)
        over = trio.run(oversell, base, key2, room2, plan2, first + timedelta(days=3), 50)

    result = {"one_client": alone, "spread_nights": many, "same_night": same, "oversell": over}
    print(f"one client, one booking after another: p50 {alone['p50_ms']:.1f} ms, p99 {alone['p99_ms']:.1f} ms, "
          f"{alone['per_second']:.0f}/s (target p50 < {P50_MS:.0f} ms: "
          f"{'met' if alone['p50_ms'] is not None and alone['p50_ms'] < P50_MS else 'missed'})")
    for name, figures in ((f"{args.connections} clients, different nights", many),
                          (f"{args.connections} clients, the same night", same)):
        met = figures["per_second"] >= PER_SECOND
        print(f"{name}: {figures['bookings']} made, {figures['per_second']:.0f}/s, p50 {figures['p50_ms']:.1f} ms, "
              f"p99 {figures['p99_ms']:.1f} ms, refused {figures['refused']} "
              f"(target >= {PER_SECOND:.0f}/s: {'met' if met else 'missed'})")
    print(f"oversell check: {over['requests']} requests for {over['rooms_left']} rooms left: {over['sold']} sold, "
          f"{over['refused_409']} refused, {over['available_after']} left after; overbooked: {over['overbooked']}")
    out = results_dir()
    out.mkdir(exist_ok=True)
    (out / "bookings.json").write_text(json.dumps(result, indent=2))
    return 1 if over["overbooked"] else 0


if __name__ == "__main__":
    sys.exit(main())
