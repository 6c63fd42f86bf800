"""`python -m bench.soak`: the service under steady load at the spec's budgets, for a while.

`--keys` properties, one key each, read and write at 90% of their key's budgets for
`--seconds`: 81 reads and 27 writes a minute, 108 requests within the 120 a minute and
27 writes within the 30 a minute. One more key asks for more than its budget
(`--over-rate` GETs a minute), so the service must refuse some of its requests with 429
and Retry-After while it serves the others. Nothing but a 429 may answer other than 2xx,
no key within its budget may be refused, and the server's resident memory must stay
flat: the last quarter's mean within 10% of the second quarter's (the first is warm-up).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import psutil
import trio

from .results_dir import results_dir
from .pipeline import ADMIN_TOKEN, API
from .process import bench_server

SAMPLE_SECONDS = 5.0
FLAT_WITHIN = 0.10


READS_A_MINUTE = 81
WRITES_A_MINUTE = 27


async def soak(base: str, pid: int, keys: int, seconds: float, over_rate: float) -> dict[str, Any]:
    body = json.loads((Path(__file__).parents[1] / "docs/examples/property.json").read_text())
    statuses: dict[int, int] = {}
    within_refused = 0
    over_statuses: dict[int, int] = {}
    over_without_retry_after = 0
    per_window: list[int] = []
    memory: list[float] = []
    done = 0
    server = psutil.Process(pid)
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        made = []
        for i in range(keys + 1):  # the last one is the key asking for more than its budget
            prop = (await client.post("/api/v1/admin/properties", json={**body, "name": f"Soak {i}",
                                                                         "ownerEmail": None},
                                      headers=admin)).json()["data"]
            key = (await client.post(f"/api/v1/admin/properties/{prop['id']}/keys",
                                     json={"label": "soak", "scopes": ["ari:read", "ari:write"]},
                                     headers=admin)).json()["data"]["key"]
            made.append((prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"], key))
        end = time.perf_counter() + seconds
        first = date.today() + timedelta(days=2)

        async def call(method: str, path: str, key: str, json_body: Any = None) -> httpx.Response:
            nonlocal done
            answer = await client.request(method, API + path, json=json_body, headers={"Authorization": f"Bearer {key}"})
            statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
            done += 1
            return answer

        async def within(method: str, path: str, key: str, json_body: Any = None) -> None:
            nonlocal within_refused
            if (await call(method, path, key, json_body)).status_code == 429:
                within_refused += 1

        async def reader(key: str) -> None:
            turn = 0
            while time.perf_counter() < end:
                path = ("/property", "/availability", "/rates", "/sync")[turn % 4]
                await within("GET", path, key)
                turn += 1
                await trio.sleep(60 / READS_A_MINUTE)

        async def writer(room: int, plan: int, key: str) -> None:
            turn = 0
            while time.perf_counter() < end:
                night = (first + timedelta(days=turn % 60)).isoformat()
                if turn % 2:
                    await within("PUT", "/rates", key, {"updates": [{"ratePlanId": plan, "dateFrom": night, "dateTo": night,
                                                                   "rate": str(90 + turn % 40), "currency": "EUR"}]})
                else:
                    await within("PUT", "/availability", key, {"updates": [{"roomTypeId": room, "dateFrom": night,
                                                                          "dateTo": night, "available": turn % 6}]})
                turn += 1
                await trio.sleep(60 / WRITES_A_MINUTE)

        async def over_budget(key: str) -> None:
            # Paced by the clock, not by the answers: a client that ignores Retry-After.
            nonlocal over_without_retry_after
            while time.perf_counter() < end:
                answer = await call("GET", "/property", key)
                over_statuses[answer.status_code] = over_statuses.get(answer.status_code, 0) + 1
                if answer.status_code == 429 and "retry-after" not in answer.headers:
                    over_without_retry_after += 1
                await trio.sleep(60 / over_rate)

        async def sampler() -> None:
            last = 0
            while time.perf_counter() < end:
                await trio.sleep(SAMPLE_SECONDS)
                memory.append(server.memory_info().rss / 2**20)
                per_window.append(done - last)
                last = done

        async with trio.open_nursery() as nursery:
            nursery.start_soon(sampler)
            for room, plan, key in made[:-1]:
                nursery.start_soon(reader, key)
                nursery.start_soon(writer, room, plan, key)
            nursery.start_soon(over_budget, made[-1][2])
    quarter = max(1, len(memory) // 4)
    second, last = memory[quarter:2 * quarter] or memory, memory[-quarter:]
    growth = (sum(last) / len(last)) / (sum(second) / len(second)) - 1 if memory else 0.0
    unexpected = {s: n for s, n in statuses.items() if not (200 <= s < 300 or s == 429)}
    return {"keys": keys, "seconds": seconds, "requests": done, "statuses": statuses, "unexpected": unexpected,
            "within_budget_refused": within_refused, "over_rate_per_minute": over_rate,
            "over_budget_statuses": over_statuses, "over_budget_429_without_retry_after": over_without_retry_after,
            "requests_per_window": per_window, "window_seconds": SAMPLE_SECONDS, "rss_mib": memory,
            "memory_growth": growth, "memory_flat": growth <= FLAT_WITHIN}


def run(keys: int, seconds: float, over_rate: float) -> dict[str, Any]:
    # The spec's key and property budgets; the address budgets are lifted, since this one client
    # stands for many integrators.
    with bench_server({"BENCH_BUDGETS": "ip=1000000,global=1000000"}) as ready:
        return trio.run(soak, f"http://127.0.0.1:{ready['port']}", ready["pid"], keys, seconds, over_rate)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak")
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--over-rate", type=float, default=180.0,
                        help="GETs a minute from the key asking for more than its 120")
    args = parser.parse_args()
    result = run(args.keys, args.seconds, args.over_rate)
    print(f"soak {result['seconds']:.0f} s, {result['keys']} keys: {result['requests']} requests, statuses "
          f"{result['statuses']}, unexpected {result['unexpected'] or 'none'}; refused within budget "
          f"{result['within_budget_refused']}; over-budget key {result['over_budget_statuses']} "
          f"({result['over_budget_429_without_retry_after']} 429s without Retry-After); server RSS "
          f"{result['rss_mib'][0] if result['rss_mib'] else 0:.0f} -> {result['rss_mib'][-1] if result['rss_mib'] else 0:.0f} "
          f"MiB, growth {result['memory_growth']:+.1%} (flat: {result['memory_flat']})")
    out = results_dir()
    out.mkdir(exist_ok=True)
    (out / "soak.json").write_text(json.dumps(result, indent=2))
    return 0 if soak_passed(result) else 1


def soak_passed(result: dict[str, Any]) -> bool:
    return (not result["unexpected"] and result["memory_flat"] and result["within_budget_refused"] == 0
            and result["over_budget_statuses"].get(429, 0) > 0 and result["over_budget_429_without_retry_after"] == 0)


if __name__ == "__main__":
    sys.exit(main())
