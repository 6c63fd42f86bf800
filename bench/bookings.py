"""`python -m bench.bookings`: POST /bookings and PATCH /bookings/{id} on one property,
budgets lifted.

Runs of `--seconds` each: one client booking one stay after another (the latency of a
booking: p50/p99), then `--connections` clients with bookings spread over different
nights (no contention) and all for the same night (contention for one room type's count,
with enough rooms that none is refused): bookings per second. The same three for
changes: each client lengthens and shortens a booking of its own by a night, one change
after another (every change moves a cell), on nights of its own or all over the same
nights. Then an oversell check: more requests than rooms left for one night, all at
once; exactly the rooms left may succeed. Targets: p50 under 40 ms (a booking, a
change), at least 100 bookings a second, zero overbooking.
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
from collections.abc import Awaitable, Callable
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


# One request of a run: (client, its index, the request's number) -> the answer.
Act = Callable[[httpx.AsyncClient, int, int], Awaitable[httpx.Response]]


async def run(base: str, key: str, room: int, plan: int, connections: int, seconds: float,
              night_of: Any, tag: str) -> dict[str, Any]:
    async def create(api: httpx.AsyncClient, _: int, i: int) -> httpx.Response:
        return await api.post("/bookings", json=booking(f"{tag}-{i}", room, plan, night_of(i)))

    return await timed(base, key, connections, seconds, create, 201)


async def changes(base: str, key: str, room: int, plan: int, connections: int, seconds: float,
                  night_of: Callable[[int], date], tag: str) -> dict[str, Any]:
    """Each client changes a booking of its own (made first, on `night_of(client)`): one
    night longer, then back, one change after another."""
    async with httpx.AsyncClient(base_url=f"{base}{API}", headers={"Authorization": f"Bearer {key}"},
                                 timeout=60) as api:
        made = [(await api.post("/bookings", json=booking(f"{tag}-{c}", room, plan, night_of(c)))).json()["data"]
                for c in range(connections)]
    counts = [0] * connections

    async def change(api: httpx.AsyncClient, c: int, _: int) -> httpx.Response:
        counts[c] += 1
        nights = 2 if counts[c] % 2 else 1
        return await api.patch(f"/bookings/{made[c]['bookingId']}", json={
            "checkOut": (night_of(c) + timedelta(days=nights)).isoformat()})

    return await timed(base, key, connections, seconds, change, 200)


async def timed(base: str, key: str, connections: int, seconds: float, act: Act, expected: int) -> dict[str, Any]:
    latencies: list[float] = []
    refused: dict[int, int] = {}
    counter = itertools.count()
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=f"{base}{API}", headers={"Authorization": f"Bearer {key}"}, timeout=60,
                                 limits=limits) as api:
        end = time.perf_counter() + seconds
        started = time.perf_counter()

        async def client(c: int) -> None:
            while time.perf_counter() < end:
                i = next(counter)
                sent = time.perf_counter()
                answer = await act(api, c, i)
                if answer.status_code == expected:
                    latencies.append(time.perf_counter() - sent)
                else:
                    refused[answer.status_code] = refused.get(answer.status_code, 0) + 1

        async with trio.open_nursery() as nursery:
            for c in range(connections):
                nursery.start_soon(client, c)
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
        _, room3, plan3, key3 = make_property(base, 10_000)
        change_alone = trio.run(changes, base, key3, room3, plan3, 1, args.seconds, lambda c: first, "CHANGE-ALONE")
        change_many = trio.run(changes, base, key3, room3, plan3, args.connections, args.seconds,
                               lambda c: first + timedelta(days=10 + 3 * c), "CHANGE-SPREAD")
        change_same = trio.run(changes, base, key3, room3, plan3, args.connections, args.seconds,
                               lambda c: first + timedelta(days=5), "CHANGE-SAME")
        _, room2, plan2, key2 = make_property(base, 5)
        over = trio.run(oversell, base, key2, room2, plan2, first + timedelta(days=3), 50)

    result = {"one_client": alone, "spread_nights": many, "same_night": same, "change_one_client": change_alone,
              "change_spread_nights": change_many, "change_same_night": change_same, "oversell": over}
    print(f"one client, one booking after another: p50 {alone['p50_ms']:.1f} ms, p99 {alone['p99_ms']:.1f} ms, "
          f"{alone['per_second']:.0f}/s (target p50 < {P50_MS:.0f} ms: "
          f"{'met' if alone['p50_ms'] is not None and alone['p50_ms'] < P50_MS else 'missed'})")
    print(f"one client, one change after another: p50 {change_alone['p50_ms']:.1f} ms, "
          f"p99 {change_alone['p99_ms']:.1f} ms, {change_alone['per_second']:.0f}/s (target p50 < {P50_MS:.0f} ms: "
          f"{'met' if change_alone['p50_ms'] is not None and change_alone['p50_ms'] < P50_MS else 'missed'})")
    for name, figures in ((f"{args.connections} clients, different nights", many),
                          (f"{args.connections} clients, the same night", same),
                          (f"{args.connections} clients changing bookings, different nights", change_many),
                          (f"{args.connections} clients changing bookings, the same nights", change_same)):
        met = figures["per_second"] >= PER_SECOND
        print(f"{name}: {figures['bookings']} done, {figures['per_second']:.0f}/s, p50 {figures['p50_ms']:.1f} ms, "
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
