"""`python -m bench.actors`: many properties touched once; what their actors cost, and that
idle ones are reclaimed.

The service starts with `--properties` properties and a key each in its record; each is
touched once (a GET /property and a one-night availability write: the property's writer
and pushers come up; its budgets are counted in the record, not in an actor). Reports the
server process's resident memory before and after, per property, and the live actors
(from /metrics) right after and once `--idle` seconds of quiet have passed: they must
have stopped and their memory must not keep growing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import date, timedelta
from typing import Any

import httpx
import psutil
import trio

from .results_dir import results_dir
from .pipeline import ADMIN_TOKEN, API
from .process import bench_server

def live_actors(admin_base: str) -> dict[str, int]:
    text = httpx.get(f"{admin_base}/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30).text
    return {kind: int(float(n)) for kind, n in re.findall(r'connectapi_live_actors\{kind="(\w+)"\} (\S+)', text)}


async def touch_all(base: str, many: list[list[Any]], concurrency: int) -> None:
    """Each property once: GET /property and a one-night availability write."""
    night = date.today() + timedelta(days=3)
    limiter = trio.CapacityLimiter(concurrency)
    async with httpx.AsyncClient(base_url=base, timeout=120,
                                 limits=httpx.Limits(max_connections=concurrency)) as client:

        async def touch(room: int, key: str) -> None:
            async with limiter:
                auth = {"Authorization": f"Bearer {key}"}
                assert (await client.get(f"{API}/property", headers=auth)).status_code == 200
                answer = await client.put(f"{API}/availability", headers=auth, json={"updates": [{
                    "roomTypeId": room, "dateFrom": night.isoformat(), "dateTo": night.isoformat(),
                    "available": 4}]})
                assert answer.status_code == 202, answer.text

        async with trio.open_nursery() as nursery:
            for _, key, room in many:
                nursery.start_soon(touch, room, key)


def run(properties: int, idle: float, check_idle: bool = True) -> dict[str, Any]:
    env = {"BENCH_ACTOR_IDLE": str(idle), "CONNECTAPI_PUSH_PAUSED": "1", "BENCH_PROPERTIES": str(properties)}
    with bench_server(env) as ready:
        base = f"http://127.0.0.1:{ready['port']}"
        server = psutil.Process(ready["pid"])
        before = server.memory_info().rss
        actors_before = live_actors(base)
        started = time.perf_counter()
        trio.run(touch_all, base, ready["many"], 16)
        touched_in = time.perf_counter() - started
        after = server.memory_info().rss
        actors_after = live_actors(base)
        actors_idle: dict[str, int] = {}
        if check_idle:
            # Quiet: a writer stops once idle; looked at every few seconds.
            deadline = time.perf_counter() + 60 + idle * 1.5 + 30
            while True:
                actors_idle = live_actors(base)
                if _all_stopped(actors_idle) or time.perf_counter() > deadline:
                    break
                time.sleep(2)
        quiet_for = time.perf_counter() - started - touched_in
        after_idle = server.memory_info().rss
    per_property = (after - before) / properties
    return {
        "properties": properties, "seconds_to_touch": touched_in,
        "rss_before_mib": before / 2**20, "rss_after_mib": after / 2**20, "rss_after_idle_mib": after_idle / 2**20,
        "bytes_per_property": per_property, "live_actors_before": actors_before, "live_actors_after": actors_after,
        "live_actors_after_idle": actors_idle, "idle_seconds": idle,
        "seconds_until_reclaimed": quiet_for if check_idle and _all_stopped(actors_idle) else None,
        "reclaimed": _all_stopped(actors_idle) if check_idle else None,
    }


def _all_stopped(live: dict[str, int]) -> bool:
    return live.get("writer", 1) == 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.actors")
    parser.add_argument("--properties", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=20.0, help="actor idle timeout for this run, seconds")
    parser.add_argument("--no-idle-check", action="store_true", help="skip the minute of quiet")
    args = parser.parse_args()
    result = run(args.properties, args.idle, not args.no_idle_check)
    print(f"{result['properties']} properties touched in {result['seconds_to_touch']:.0f} s: "
          f"server RSS {result['rss_before_mib']:.0f} -> {result['rss_after_mib']:.0f} MiB, "
          f"{result['bytes_per_property'] / 1024:.1f} KiB per property; live actors {result['live_actors_after']} "
          + (f"-> {result['live_actors_after_idle']} {result['seconds_until_reclaimed'] or 0:.0f} s after the last "
             f"touch (idle timeout {result['idle_seconds']:.0f} s) " if result["reclaimed"] is not None
             else "(reclaim not checked) ")
          + f"(RSS {result['rss_after_idle_mib']:.0f} MiB)")
    out = results_dir()
    out.mkdir(exist_ok=True)
    (out / "actors.json").write_text(json.dumps(result, indent=2))
    return 0 if result["reclaimed"] is not False else 1


if __name__ == "__main__":
    sys.exit(main())
