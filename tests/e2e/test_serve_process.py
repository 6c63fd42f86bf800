"""`connectapi serve` as a newcomer runs it: embedded record, token, kill -9, restart, stop."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest

from bench.process import free_port as free_port  # the e2e tests take it from here
from connectapi import __version__


class Served:
    def __init__(self, data_dir: Path, port: int, extra_env: dict[str, str] | None = None,
                 args: tuple[str, ...] = (), port_by: str = "flag") -> None:
        """`port_by`: `flag` (`--port`) or `env` (CONNECTAPI_PORT)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}
        env["CONNECTAPI_DATA_DIR"] = str(data_dir)
        env.update(extra_env or {})
        if port_by == "env":
            env["CONNECTAPI_PORT"] = str(port)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "connectapi", "serve", *(("--port", str(port)) if port_by == "flag" else ()), *args],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self._pumping = threading.Thread(target=self._pump, daemon=True)
        self._pumping.start()
        self.url = f"http://127.0.0.1:{port}"

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)

    def wait_for(self, text: str, timeout: float = 90) -> list[str]:
        """The lines up to the first holding `text`; a process that dies first, or stays
        silent for `timeout` seconds, fails the test with what it printed."""
        seen: list[str] = []
        silent = 0.0
        while True:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                silent += 1
                # Every line is queued once the pump has read to the end of a dead process's output.
                exited = not self._pumping.is_alive() and self.lines.empty()
                if exited or silent >= timeout:
                    state = f"output closed, exit {self.proc.poll()}" if exited else f"silent {silent:.0f} s"
                    raise AssertionError(f"no {text!r} ({state}); it printed:\n{''.join(seen[-40:])}") from None
                continue
            silent = 0.0
            seen.append(line)
            if text in line:
                return seen

    def read_until_blocked(self) -> list[str]:
        seen = []
        try:
            while True:
                seen.append(self.lines.get(timeout=1))
        except queue.Empty:
            return seen


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's exit is reaped by PID 1, which a sandbox may not do)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def postmaster_pid(data_dir: Path) -> int | None:
    pid_file = data_dir / "pgdata" / "postmaster.pid"
    if not pid_file.exists():
        return None
    return int(pid_file.read_text().splitlines()[0])


def test_serve_survives_sigkill_and_stops_cleanly(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    port = free_port()
    first = Served(data_dir, port)
    try:
        lines = first.wait_for("listening on")
        lines += first.read_until_blocked()
        assert f"connectapi {__version__}: serve" in lines[0], "the first log line says the version"
        token_lines = [line for line in lines if "operator token (generated, shown once)" in line]
        assert len(token_lines) == 1
        token = (data_dir / "admin-token").read_text().strip()
        assert token in token_lines[0]
        assert oct((data_dir / "admin-token").stat().st_mode & 0o777) == "0o600"
        assert httpx.get(f"{first.url}/readyz").status_code == 200
        auth = {"Authorization": f"Bearer {token}"}
        example = Path(__file__).parents[2] / "docs" / "examples" / "property.json"
        made = httpx.post(f"{first.url}/api/v1/admin/properties", content=example.read_bytes(), headers=auth)
        assert made.status_code == 201
    finally:
        first.proc.kill()
        first.proc.wait(10)

    pg = postmaster_pid(data_dir)
    assert pg is not None and running(pg), "the embedded server outlives a SIGKILLed service"

    second = Served(data_dir, port)
    try:
        lines = second.wait_for("listening on") + second.read_until_blocked()
        assert not any(token in line for line in lines), "the token is shown only when generated"
        assert postmaster_pid(data_dir) == pg  # found and reused, not a second server
        got = httpx.get(f"{second.url}/api/v1/admin/properties/{made.json()['data']['id']}", headers=auth)
        assert got.status_code == 200 and got.json()["data"]["name"] == "Casa Azul"
    finally:
        second.proc.send_signal(signal.SIGTERM)
        assert second.proc.wait(30) == 0
    assert not running(pg), "a clean stop stops the embedded server"


def test_a_single_process_outlives_sighup(tmp_path: Path) -> None:
    """SIGHUP is the reload of `serve --workers N`; a single process logs that it cannot
    reload and serves on (by default SIGHUP would kill it with no drain)."""
    served = Served(tmp_path / "var", free_port())
    try:
        served.wait_for("listening on")
        served.proc.send_signal(signal.SIGHUP)
        served.wait_for("a single process does not reload")
        assert served.proc.poll() is None
        assert httpx.get(f"{served.url}/readyz").status_code == 200
    finally:
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(30) == 0


def test_the_port_may_come_from_connectapi_port(tmp_path: Path) -> None:
    served = Served(tmp_path / "var", free_port(), port_by="env")
    try:
        assert f"listening on {served.url}" in "".join(served.wait_for("listening on"))
        assert httpx.get(f"{served.url}/readyz").status_code == 200
    finally:
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(30) == 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_address_in_use_is_refused_in_a_line_before_the_record_starts(tmp_path: Path, workers: str) -> None:
    data_dir = tmp_path / "var"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        port = taken.getsockname()[1]
        served = Served(data_dir, port, args=("--workers", workers))
        assert served.proc.wait(60) == 2
        printed = served.read_until_blocked()
    assert f"connectapi: cannot listen on 127.0.0.1:{port}: Address already in use\n" in printed
    assert not any("Traceback" in line for line in printed), printed
    assert postmaster_pid(data_dir) is None and not (data_dir / "pgdata").exists(), "the record was never started"


@pytest.mark.parametrize("args", [(), ("--workers", "2")], ids=["one-process", "workers"])
def test_a_second_stop_signal_neither_cuts_the_stop_short_nor_leaves_the_record_running(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    """`make run` passes its own SIGTERM on beside the terminal's SIGINT, and a closing
    terminal sends SIGHUP: a signal a few milliseconds after the first used to end the
    process by its default action mid-stop, with the embedded PostgreSQL still running."""
    data_dir = tmp_path / "var"
    served = Served(data_dir, free_port(), args=args)
    pg = None
    try:
        served.wait_for("listening on")
        pg = postmaster_pid(data_dir)
        assert pg is not None and running(pg)
        served.proc.send_signal(signal.SIGTERM)
        time.sleep(0.005)
        served.proc.send_signal(signal.SIGTERM)
        served.proc.send_signal(signal.SIGHUP)
        served.proc.send_signal(signal.SIGINT)
        assert served.proc.wait(60) == 0, "".join(served.read_until_blocked()[-20:])
        assert not running(pg), "the embedded server is stopped"
        assert postmaster_pid(data_dir) is None
    finally:
        if served.proc.poll() is None:
            served.proc.kill()
            served.proc.wait(10)
        if pg is not None and running(pg):  # left by a failure: not left to the machine
            os.kill(pg, signal.SIGTERM)
