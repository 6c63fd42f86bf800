"""Three `connectapi serve` processes on one record count one set of budgets: a budget
driven at three times its size through all three admits, in every window, what it allows
and no more (issue 17).

Real processes have no mock clock: the minute budgets get a 2-second window here
(CONNECTAPI_TEST_BUDGET_WINDOW_SECONDS) and small sizes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from .test_serve_process import Served, free_port

TOKEN = "budget-processes-operator-token-of-32-plus"
API = "/api/v1/connect-api/v1"
WINDOW = 2.0
LIMIT = 10
WINDOWS = 4  # driven this many windows
LARGE = 100_000


@dataclass(frozen=True, slots=True)
class Answered:
    sent: float
    received: float
    status: int
    scope: str | None


def sizes(**small: int) -> str:
    every = {name: LARGE for name in ("ip", "global", "ip-auth", "requests", "writes", "property", "property-writes",
                                      "cells", "bookings", "property-bookings", "property-bookings-day")}
    every.update({name.replace("_", "-"): size for name, size in small.items()})
    return ",".join(f"{name}={size}" for name, size in every.items())


async def three_processes(fresh_dsn: str, tmp_path: Path, budgets: str, window: float = WINDOW) -> list[Served]:
    env = {"DATABASE_URL": fresh_dsn, "CONNECTAPI_ADMIN_TOKEN": TOKEN, "CONNECTAPI_PUSH_PAUSED": "1",
           "CONNECTAPI_BUDGETS": budgets, "CONNECTAPI_TEST_BUDGET_WINDOW_SECONDS": str(window)}
    served = [Served(tmp_path / name, free_port(), env) for name in ("a", "b", "c")]
    for one in served:
        await trio.to_thread.run_sync(one.wait_for, "listening on")
    return served


async def keyed_property(http: httpx.AsyncClient, url: str) -> tuple[dict[str, Any], dict[str, str]]:
    admin = {"Authorization": f"Bearer {TOKEN}"}
    example = json.loads((Path(__file__).parents[2] / "docs/examples/property.json").read_text())
    example["roomTypes"][0]["rooms"] = 500
    made = await http.post(f"{url}/api/v1/admin/properties", json=example, headers=admin)
    prop = made.json()["data"]
    key = await http.post(f"{url}/api/v1/admin/properties/{prop['id']}/keys", headers=admin,
                          json={"label": "load", "scopes": ["bookings:write", "bookings:read", "ari:read"]})
    return prop, {"Authorization": f"Bearer {key.json()['data']['key']}"}


async def drive(served: list[Served], send: Any) -> list[Answered]:
    """Three times the budget, spread evenly over the three processes, for WINDOWS windows."""
    answers: list[Answered] = []
    every = WINDOW / (3 * LIMIT)  # the pace of all three together
    start = trio.current_time()

    async def client(i: int) -> None:
        async with httpx.AsyncClient(timeout=30) as http:
            n = 0
            while True:
                due = start + (3 * n + i) * every
                if due >= start + WINDOWS * WINDOW:
                    return
                await trio.sleep_until(due)
                sent = time.monotonic()
                answer = await send(http, served[i].url, 3 * n + i)
                received = time.monotonic()
                body = answer.json()
                scope = body["data"].get("scope") if answer.status_code == 429 else None
                answers.append(Answered(sent, received, answer.status_code, scope))
                n += 1

    async with trio.open_nursery() as nursery:
        for i in range(3):
            nursery.start_soon(client, i)
    return sorted(answers, key=lambda a: a.sent)


def check_exact(answers: list[Answered], admitted_status: int, scope: str) -> None:
    """Never more than the budget in any window, and the budget reached in each (at most one short).

    The record counts a request at some instant between its send and its answer: a window
    shortened by the slowest round trip holds only requests the record counted in one window.
    Half a window, at most, is taken off that way: driven at three times the budget, what
    is left still holds half again the budget's worth of requests, so a budget counted per
    process (three times it admitted) still shows. (A quarter was asked before; one booking
    answered in 0.61 s on a CI machine running three test files at once failed that.)
    """
    assert {a.status for a in answers} <= {admitted_status, 429}, {a.status for a in answers}
    assert {a.scope for a in answers if a.status == 429} == {scope}
    admitted = [a for a in answers if a.status == admitted_status]
    slowest = max(a.received - a.sent for a in answers)
    assert slowest < WINDOW / 2, slowest
    for first in admitted:
        inside = [a for a in admitted if first.sent <= a.sent < first.sent + WINDOW - slowest]
        assert len(inside) <= LIMIT, (len(inside), LIMIT)
    start = answers[0].sent
    for k in range(WINDOWS):
        begin, end = start + k * WINDOW, start + (k + 1) * WINDOW
        counted = [a for a in admitted if begin <= a.received and a.sent < end]
        assert len(counted) >= LIMIT - 1, (k, len(counted), LIMIT)
    assert len(admitted) <= WINDOWS * LIMIT
    assert sum(a.status == 429 for a in answers) >= len(answers) // 2  # driven at three times the budget


def stop(served: list[Served]) -> None:
    for one in served:
        one.proc.terminate()
    for one in served:
        one.proc.wait(30)


@pytest.mark.parametrize("scope", ["requests", "ip", "global"])
async def test_a_request_budget_is_exact_across_three_processes(fresh_dsn: str, tmp_path: Path, scope: str) -> None:
    served = await three_processes(fresh_dsn, tmp_path, sizes(**{scope: LIMIT}))
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            _, key = await keyed_property(http, served[0].url)
        # Two properties' keys for `ip` and `global`: no single key's budget is what counts.
        async with httpx.AsyncClient(timeout=30) as http:
            _, other = await keyed_property(http, served[1].url)

        async def read(http: httpx.AsyncClient, url: str, n: int) -> httpx.Response:
            which = key if scope == "requests" or n % 2 == 0 else other
            return await http.get(f"{url}{API}/property", headers=which)

        if scope in ("ip", "global"):
            await trio.sleep(WINDOW)  # the setup's own requests have left the window
        check_exact(await drive(served, read), 200, scope)
    finally:
        stop(served)


async def test_the_property_bookings_budget_is_exact_across_three_processes(fresh_dsn: str, tmp_path: Path) -> None:
    served = await three_processes(fresh_dsn, tmp_path, sizes(property_bookings=LIMIT))
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            prop, key = await keyed_property(http, served[0].url)
        room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
        check_in = date.today() + timedelta(days=20)

        async def book(http: httpx.AsyncClient, url: str, n: int) -> httpx.Response:
            stay = check_in + timedelta(days=n % 60)
            return await http.post(f"{url}{API}/bookings", headers=key, json={
                "externalReference": f"EXACT-{n}", "checkIn": stay.isoformat(),
                "checkOut": (stay + timedelta(days=1)).isoformat(), "currency": "EUR",
                "guest": {"name": f"Guest {n}", "phone": f"+35191234{n:04d}"},
                "rooms": [{"roomTypeId": room, "ratePlanId": plan, "adults": 2, "nightlyRate": "80.00"}]})

        answers = await drive(served, book)
        check_exact(answers, 201, "property-bookings")
        async with httpx.AsyncClient(timeout=30) as http:
            listed = await http.get(f"{served[2].url}{API}/bookings?limit=100", headers=key)
        assert listed.status_code == 200, listed.text
        assert len(listed.json()["data"]["bookings"]) == sum(a.status == 201 for a in answers)
    finally:
        stop(served)


SLICED_WINDOW = 4.0
SLICED = 300  # every budget of the request 256 or more: worth slices (decision 0124)


async def test_a_budget_spent_from_slices_is_never_exceeded_across_three_processes(
        fresh_dsn: str, tmp_path: Path) -> None:
    """Budget slices on real processes (decision 0124): one process busy enough on a key to
    admit from slices, two others counting the same key's requests one by one, in bursts
    past the budget with pauses between: no window holds more than the budget, the busy
    process admitted requests from slices, and the others were refused once it was spent."""
    served = await three_processes(fresh_dsn, tmp_path, sizes(requests=SLICED), SLICED_WINDOW)
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            _, key = await keyed_property(http, served[0].url)
        answers: list[Answered] = []
        start = trio.current_time()
        burst, pause, bursts = SLICED_WINDOW, SLICED_WINDOW, 2
        # Two clients on the first process at 30 requests a second each (60: busy), one on
        # each other at 20: 100 a second, a third more than the budget's pace.
        pace = {(0, 0): 30, (0, 1): 30, (1, 0): 20, (2, 0): 20}

        async def client(process: int, per_second: int) -> None:
            async with httpx.AsyncClient(timeout=30) as http:
                for b in range(bursts):
                    begin = start + b * (burst + pause)
                    for n in range(int(burst * per_second)):
                        await trio.sleep_until(begin + n / per_second)
                        sent = time.monotonic()
                        answer = await http.get(f"{served[process].url}{API}/property", headers=key)
                        received = time.monotonic()
                        scope = answer.json()["data"].get("scope") if answer.status_code == 429 else None
                        answers.append(Answered(sent, received, answer.status_code, scope))

        async with trio.open_nursery() as nursery:
            for (process, _), per_second in pace.items():
                nursery.start_soon(client, process, per_second)
        answers.sort(key=lambda a: a.sent)

        assert {a.status for a in answers} <= {200, 429}, {a.status for a in answers}
        assert {a.scope for a in answers if a.status == 429} == {"requests"}
        admitted = [a for a in answers if a.status == 200]
        slowest = max(a.received - a.sent for a in answers)
        assert slowest < SLICED_WINDOW / 4, slowest
        most = max(sum(first.sent <= a.sent < first.sent + SLICED_WINDOW - slowest for a in admitted)
                   for first in admitted)
        assert most <= SLICED, most
        assert sum(a.status == 429 for a in answers) > 0  # each burst ran past the budget
        assert len(admitted) >= bursts * SLICED * 0.8  # and was admitted nearly up to it
        async with httpx.AsyncClient(timeout=30) as http:
            metrics = await http.get(f"{served[0].url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        from_slices = next(float(line.split()[-1]) for line in metrics.text.splitlines()
                           if line.startswith("connectapi_budget_slice_admissions_total "))
        # 124 on a quiet machine; under 50 once on a CI machine running three test files at
        # once (a slice ask that waits on a busy record leaves less of the slice's life to
        # spend it in). A fifth of it still shows slices at work beside exactness.
        assert from_slices > 25, [line for line in metrics.text.splitlines() if "slice" in line]
    finally:
        stop(served)
