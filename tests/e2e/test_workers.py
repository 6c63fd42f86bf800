"""`connectapi serve --workers 2`: two worker processes on one port under a parent that
restarts a dead one, replaces them one at a time on SIGHUP without dropping a request,
owns the embedded record, and stops everything on SIGTERM; no worker outlives it."""

from __future__ import annotations

import json
import os
import queue
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import trio

from .mixed_load import API, LIFTED, eventually, make_property
from .test_serve_process import Served, free_port, postmaster_pid, running

TOKEN = "workers-operator-token-of-32-characters-plus"
WORKERS = ("--workers", "2")
PAUSE = 0.005


class Log:
    """What the service writes on stderr (the parent's lines and its workers'), all of it
    kept; JSON lines read as records."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.lines: list[str] = []

    async def wait_for(self, text: str, within: float = 90) -> dict[str, Any]:
        """The first line from now on that holds `text`, as a record (or {"line": …})."""

        def wait() -> str:
            give_up = time.monotonic() + within
            while True:
                line = self.served.lines.get(timeout=max(0.01, give_up - time.monotonic()))
                self.lines.append(line)
                if text in line:
                    return line

        try:
            found = await trio.to_thread.run_sync(wait)
        except queue.Empty:
            raise AssertionError(f"no {text!r} within {within}s; the log:\n" + "".join(self.lines[-60:])) from None
        return _record(found) or {"line": found}

    def records(self) -> list[dict[str, Any]]:
        self.lines += self.served.read_until_blocked()
        return [r for r in map(_record, self.lines) if r]


def _record(line: str) -> dict[str, Any]:
    try:
        found = json.loads(line)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


@dataclass
class Tally:
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    told_to_close: int = 0  # answers on a kept-alive connection that carried `Connection: close`


async def steady(url: str, path: str, headers: dict[str, str], stop: trio.Event, tally: Tally,
                 fresh_connections: bool = False) -> None:
    """GET `path` again and again until `stop`, on one kept-alive connection (reopened when
    the service closes it), or on a new connection each time."""
    if fresh_connections:
        headers = {**headers, "Connection": "close"}
    async with httpx.AsyncClient(base_url=url, timeout=10, limits=httpx.Limits(max_connections=1)) as http:
        last_answer, closed = time.monotonic(), True
        while not stop.is_set():
            try:
                answer = await http.get(path, headers=headers)
            except httpx.HTTPError as exc:
                how = "on a new connection" if closed else \
                    f"on a kept-alive connection idle {time.monotonic() - last_answer:.3f} s"
                tally.failures.append(f"GET {path} {how}: {exc!r}")
                last_answer, closed = time.monotonic(), True
                continue
            last_answer = time.monotonic()
            closed = fresh_connections or answer.headers.get("connection", "").lower() == "close"
            tally.statuses[answer.status_code] += 1
            if answer.status_code != 200:
                tally.failures.append(f"GET {path}: {answer.status_code} {answer.text[:200]}")
            if not fresh_connections and closed:
                tally.told_to_close += 1
            # A pause, so a kept-alive connection is idle for part of each cycle (as a real
            # client's is), and the load leaves the workers' starts some of the cores.
            await trio.sleep(PAUSE)


async def test_sighup_twice_under_steady_load_drops_no_request(fresh_dsn: str, tmp_path: Path) -> None:
    served = Served(tmp_path / "var", free_port(), {"DATABASE_URL": fresh_dsn, "CONNECTAPI_ADMIN_TOKEN": TOKEN,
                                                   "CONNECTAPI_PUSH_PAUSED": "1", "CONNECTAPI_BUDGETS": LIFTED},
                    args=WORKERS)
    log = Log(served)
    began = time.monotonic()
    try:
        generations = [(await log.wait_for("serving with 2 workers"))["workers"]]
        async with httpx.AsyncClient(base_url=f"{served.url}/api/v1/admin", timeout=30,
                                     headers={"Authorization": f"Bearer {TOKEN}"}) as admin:
            prop = await make_property(admin)
        key = {"Authorization": f"Bearer {prop.key}"}
        tally = Tally()
        stop = trio.Event()
        reloads: list[float] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(steady, served.url, "/healthz", {}, stop, tally)
            nursery.start_soon(steady, served.url, "/healthz", {}, stop, tally)
            nursery.start_soon(steady, served.url, f"{API}/property", key, stop, tally)
            # New connections spread over the workers: every worker gets some of the load.
            nursery.start_soon(steady, served.url, "/healthz", {}, stop, tally, True)
            for _ in range(2):
                await trio.sleep(1.0)
                before = sum(tally.statuses.values())
                served.proc.send_signal(signal.SIGHUP)
                done = await log.wait_for("reload finished")
                generations.append(done["workers"])
                reloads.append(done["durationSeconds"])
                assert sum(tally.statuses.values()) > before, "the load went on during the reload"
            await trio.sleep(1.0)
            stop.set()
        assert tally.failures == [], (tally.failures[:20], tally.statuses)
        assert tally.statuses[200] > 100, tally.statuses
        # The drained workers told their keep-alive clients to go elsewhere, and they did.
        assert tally.told_to_close >= 2, tally
    finally:
        served.proc.send_signal(signal.SIGTERM)
        code = served.proc.wait(30)
    assert code == 0
    # Every worker of the three generations was a new process, and each of them served.
    pids = [pid for generation in generations for pid in generation]
    assert len(set(pids)) == 6, generations
    served_by = Counter(r["pid"] for r in log.records() if r.get("logger") == "connectapi.access")
    assert all(served_by[pid] > 0 for pid in pids), (generations, served_by)
    print(f"reloads took {reloads} s; {sum(tally.statuses.values())} requests; the test {time.monotonic() - began:.1f} s")


async def test_a_worker_killed_is_started_again_and_none_outlives_the_parent(fresh_dsn: str,
                                                                             tmp_path: Path) -> None:
    served = Served(tmp_path / "var", free_port(), {"DATABASE_URL": fresh_dsn, "CONNECTAPI_ADMIN_TOKEN": TOKEN,
                                                   "CONNECTAPI_PUSH_PAUSED": "1"}, args=WORKERS)
    log = Log(served)
    try:
        victim, other = (await log.wait_for("serving with 2 workers"))["workers"]
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        async with httpx.AsyncClient(base_url=served.url, timeout=10) as http:
            # Meanwhile the other worker takes every new connection.
            for _ in range(20):
                answer = await http.get("/healthz", headers={"Connection": "close"})
                assert answer.status_code == 200
            ended = await log.wait_for("killed by SIGKILL")
            assert ended["worker"] == victim and ended["level"] == "ERROR", ended
            again = await log.wait_for("restarted in slot", within=30)
            took = time.monotonic() - killed_at
            new = again["worker"]
            assert new not in (victim, other) and running(new) and running(other) and not running(victim)
            assert served.proc.poll() is None
            assert (await http.get("/readyz")).status_code == 200
        # The parent itself killed: its workers see their end of the pair close, and stop.
        served.proc.kill()
        served.proc.wait(10)
        orphaned_at = time.monotonic()
        while (left := [pid for pid in (new, other) if running(pid)]) and time.monotonic() - orphaned_at < 20:
            await trio.sleep(0.1)
        gone = time.monotonic() - orphaned_at
    finally:
        if served.proc.poll() is None:
            served.proc.kill()
    assert took < 15, took  # 0.5 s of backoff, then a start (2 to 4 s on a busy 2-core machine)
    assert left == [], f"workers {left} outlived their parent by {gone:.1f} s"
    print(f"a worker was back {took:.1f} s after its SIGKILL; orphans gone {gone:.1f} s after their parent")


async def test_the_parent_owns_the_embedded_record_and_sigterm_stops_everything(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    served = Served(data_dir, free_port(), args=WORKERS)
    log = Log(served)
    try:
        workers = (await log.wait_for("serving with 2 workers", within=90))["workers"]
        # Announced once, by the parent: the address, and the token it generated.
        assert sum("connectapi listening on" in line for line in log.lines) == 1, log.lines
        shown = [line for line in log.lines if "operator token (generated, shown once)" in line]
        assert len(shown) == 1
        token = (data_dir / "admin-token").read_text().strip()
        assert token in shown[0]
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            made = await http.post("/api/v1/admin/properties", headers={"Authorization": f"Bearer {token}"},
                                   content=(Path(__file__).parents[2] / "docs/examples/property.json").read_bytes())
            assert made.status_code == 201, made.text
            # The embedded server dies: the parent, and only the parent, starts it again.
            dead = postmaster_pid(data_dir)
            assert dead is not None
            os.kill(dead, signal.SIGKILL)
            back = await log.wait_for("the embedded PostgreSQL runs again", within=30)
            assert back["pid"] == served.proc.pid, back

            async def ready() -> bool:
                return (await http.get("/readyz")).status_code == 200

            await eventually(ready, "/readyz 200 again", 30)
        pg = postmaster_pid(data_dir)
        assert pg is not None and pg != dead and running(pg)
        started = time.monotonic()
        served.proc.send_signal(signal.SIGTERM)
        code = await trio.to_thread.run_sync(served.proc.wait, 30)
        took = time.monotonic() - started
    finally:
        if served.proc.poll() is None:
            served.proc.kill()
    assert code == 0 and took < 15, (code, took)  # as a single process (test_graceful_stop): 1 to 3 s here, 9 s once at load 8
    assert not any(running(pid) for pid in workers)
    assert not running(pg), "a clean stop stops the embedded server"
    restarts = [r for r in log.records() if "starting it again" in r.get("message", "")]
    assert [r["pid"] for r in restarts] == [served.proc.pid], restarts
    print(f"stopped in {took:.1f} s")
