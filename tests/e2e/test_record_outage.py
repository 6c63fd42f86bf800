"""The embedded PostgreSQL SIGKILLed under a mixed load of ARI writes and bookings: 503s with
Retry-After while it is down (never a 500, never a hang), the service starts it again by
itself and recovers without a restart, and everything answered 2xx is in the record and
on the channel manager's grid afterwards."""

from __future__ import annotations

import os
import signal
import time
from datetime import date
from pathlib import Path

import httpx
import pytest
import trio

from .mixed_load import (LIFTED, SLOW_ANSWER, MixedLoad, check_bookings, check_writes, eventually, in_sync, load_client,
                         make_property, nights, record_of)
from .test_serve_process import Served, free_port, postmaster_pid, running

SEED = 15


async def test_the_record_dies_and_comes_back_under_load(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    served = Served(data_dir, free_port(), {"CONNECTAPI_BUDGETS": LIFTED})
    try:
        await trio.to_thread.run_sync(served.wait_for, "listening on")
        token = (data_dir / "admin-token").read_text().strip()
        async with load_client() as http, httpx.AsyncClient(
                base_url=f"{served.url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"},
                timeout=30) as admin:
            prop = await make_property(admin)
            load = MixedLoad(served.url, prop, SEED)
            killed: dict[str, float] = {}

            async def kill_the_record() -> None:
                await trio.sleep(4)
                pid = postmaster_pid(data_dir)
                assert pid is not None and running(pid)
                os.kill(pid, signal.SIGKILL)
                killed["at"] = time.monotonic()
                killed["pid"] = pid

            async with trio.open_nursery() as nursery:
                nursery.start_soon(kill_the_record)
                await load.run(20, http)

            ledger = load.ledger
            # While it was down: 503s with Retry-After (checked as they came), no 5xx other
            # than those, and nothing hung.
            assert ledger.statuses[503] > 0, ledger.statuses
            if {s for s in ledger.statuses if s is not None and s >= 500 and s != 503}:
                # pytest.fail: an assertion's message is cut short, and the log is the point
                pytest.fail(f"{ledger.statuses}\n{_faults(served.read_until_blocked())}")
            assert ledger.statuses[None] == 0, ledger.errors  # the process itself never went away
            assert ledger.slowest < SLOW_ANSWER, ledger.slowest
            # The same process started its record again: ready, on a new postmaster.
            await eventually(lambda: _ready(http, served.url), "/readyz 200 again", 30)
            assert served.proc.poll() is None
            new_pid = postmaster_pid(data_dir)
            assert new_pid is not None and new_pid != killed["pid"] and running(new_pid)
            # ... and the load went on after it: 2xx answers after the outage.
            assert ledger.statuses[202] > 0 and ledger.statuses[201] > 0

            await eventually(lambda: in_sync(http, served.url, prop), "every cell pushed", 120)
            record = await record_of(http, served.url, prop)
            assert check_writes(ledger, record) > 0
            await check_bookings(http, served.url, prop, ledger, record)
            # the channel manager (the in-process sandbox, looked at directly) holds the record
            grid = (await admin.get(f"/properties/{prop.id}/channel-grid",
                                    params={"from": str(nights()[0]), "to": str(nights()[-1])})).json()["data"]
            held = {(a["roomTypeId"], date.fromisoformat(a["date"])): a["available"] for a in grid["availability"]}
            for name, room in prop.rooms.items():
                for night in nights():
                    assert held[(room, night)] == record["availability"][name][night], (name, night)
            rates = {date.fromisoformat(r["date"]): r["rateMinor"] for r in grid["rates"]
                     if r["ratePlanId"] == prop.plans["A"]}
            assert rates == record["rates"]
    finally:
        served.proc.send_signal(signal.SIGTERM)
        served.proc.wait(30)


async def _ready(http: httpx.AsyncClient, base_url: str) -> bool:
    return (await http.get(f"{base_url}/readyz")).status_code == 200


def _faults(lines: list[str]) -> str:
    """The service's log around each answer of ours that was a fault, for the failure message."""
    marks = [i for i, line in enumerate(lines) if "unhandled error" in line or "crashed on request" in line
             or "record refused request" in line or '"status": 500' in line]
    return "".join("".join(lines[i:i + 40]) for i in marks[:3])
