"""PUT /rates of ~5000 cells (one year, several plans) beside a raw asyncpg bulk upsert of the same cells."""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import trio

from .load import _read_response
from .stats import percentile

WEEKS = 51


def plan_body(plans: list[int], start: date, rate: int) -> dict[str, Any]:
    """One weekly entry per plan and week (14 plans x 51 weeks x 7 nights = 4998 cells),
    and two nights more on the first plan: 5000 cells."""
    updates = []
    for plan in plans:
        for week in range(WEEKS):
            first = start + timedelta(days=7 * week)
            updates.append({"ratePlanId": plan, "dateFrom": first.isoformat(),
                            "dateTo": (first + timedelta(days=6)).isoformat(),
                            "rate": rate + week % 5, "currency": "EUR"})
    extra = start + timedelta(days=7 * WEEKS)
    updates.append({"ratePlanId": plans[0], "dateFrom": extra.isoformat(),
                    "dateTo": (extra + timedelta(days=1)).isoformat(), "rate": rate, "currency": "EUR"})
    return {"updates": updates}


def cells_of(plans: list[int], start: date) -> tuple[list[int], list[date]]:
    ids, nights = [], []
    for plan in plans:
        for day in range(WEEKS * 7):
            ids.append(plan)
            nights.append(start + timedelta(days=day))
    for day in (WEEKS * 7, WEEKS * 7 + 1):  # the two extra nights of plan_body
        ids.append(plans[0])
        nights.append(start + timedelta(days=day))
    return ids, nights


async def timed_put(port: int, key: str, body: bytes) -> tuple[float, int, dict[str, Any]]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        head = (f"PUT /api/v1/connect-api/v1/rates HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        started = time.perf_counter()
        await stream.send_all(head + body)
        buffer = bytearray()
        status, _ = await _read_response(stream, buffer)
        elapsed = time.perf_counter() - started
    return elapsed, status, {}


async def route_runs(port: int, key: str, plans: list[int], start: date, rounds: int) -> list[float]:
    timings = []
    for i in range(rounds):
        body = json.dumps(plan_body(plans, start, 100 + (i % 2) * 50)).encode()  # every cell changes
        elapsed, status, _ = await timed_put(port, key, body)
        if status != 202:
            raise RuntimeError(f"PUT /rates answered {status}")
        timings.append(elapsed)
    return timings


async def raw_runs(dsn: str, property_id: int, plans: list[int], start: date, rounds: int) -> list[float]:
    """The same cells by hand: one bulk upsert in a transaction, the floor for the route."""
    ids, nights = cells_of(plans, start)
    conn = await asyncpg.connect(dsn)
    timings = []
    try:
        for i in range(rounds):
            values = [(1000 + (i % 2) * 50 + (n.toordinal() // 7) % 5) * 100 for n in nights]
            started = time.perf_counter()
            async with conn.transaction():
                await conn.execute(
                    """INSERT INTO rate_cells AS c (property_id, rate_plan_id, night, rate_minor, version)
                       SELECT $1, w.id, w.night, w.rate, nextval('ari_versions')
                       FROM unnest($2::bigint[], $3::date[], $4::bigint[]) AS w (id, night, rate)
                       ON CONFLICT (property_id, rate_plan_id, night, occupancy) DO UPDATE
                       SET rate_minor = EXCLUDED.rate_minor, version = EXCLUDED.version""",
                    property_id, ids, nights, values,
                )
            timings.append(time.perf_counter() - started)
    finally:
        await conn.close()
    return timings



def measure(ready: dict[str, Any], rounds: int) -> dict[str, Any]:
    plans = ready["ratePlans"]
    start = datetime.now(ZoneInfo(ready["timezone"])).date() + timedelta(days=2)
    cells = len(plans) * WEEKS * 7 + 2
    trio.run(route_runs, ready["port"], ready["key"], plans, start, 2)  # warm-up
    route = trio.run(route_runs, ready["port"], ready["key"], plans, start, rounds)
    raw = asyncio.run(raw_runs(ready["dsn"], ready["property"], plans, start, rounds))
    return {
        "cells": cells,
        "route_p50_ms": statistics.median(route) * 1000, "route_p99_ms": percentile(route, 99) * 1000,
        "raw_p50_ms": statistics.median(raw) * 1000, "raw_p99_ms": percentile(raw, 99) * 1000,
        "route_cells_per_s": cells / statistics.median(route), "raw_cells_per_s": cells / statistics.median(raw),
        "ratio": statistics.median(route) / statistics.median(raw), "rounds": rounds,
    }
