"""The one-file executable (`make dist`): built from this checkout, copied alone into an
empty directory and run there with a bare environment (`env -i` with only PATH and HOME),
no virtualenv, no repository. It must print its version, serve on its embedded
PostgreSQL, take the sample property and a rate that reaches the sandbox channel
manager, report its status, back itself up and stop cleanly on SIGTERM; then restore the
copy elsewhere, and start again on the data dir it left."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import httpx
import psutil
import pytest

from connectapi import __version__

from .test_serve_process import free_port, postmaster_pid

ROOT = Path(__file__).parents[2]
BUILD_TIMEOUT = 600
READY_TIMEOUT = 90.0


@pytest.fixture(scope="module")
def executable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dist/connectapi as `make dist` builds it (the same spec), into a scratch directory."""
    if importlib.util.find_spec("PyInstaller") is None:
        pytest.skip("PyInstaller is not installed (make test installs it with the `dist` extra): "
                    "the one-file executable cannot be built here")
    work = tmp_path_factory.mktemp("pyinstaller")
    built = subprocess.run(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN", "--distpath", str(work / "dist"),
         "--workpath", str(work / "build"), str(ROOT / "packaging" / "connectapi.spec")],
        cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert built.returncode == 0, built.stderr[-4000:]
    return work / "dist" / "connectapi"


@pytest.fixture
def alone(executable: Path, tmp_path: Path) -> Path:
    """The executable copied alone into an empty directory."""
    home = tmp_path / "opt"
    home.mkdir()
    shutil.copy2(executable, home / "connectapi")
    return home


def bare_env(home: Path, **extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), **extra}


def run(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["./connectapi", *args], cwd=home, env=bare_env(home, **extra), capture_output=True,
                          text=True, timeout=120)


class Serving:
    def __init__(self, home: Path, port: int, *serve_args: str) -> None:
        self.home = home
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(home / f"serve-{port}-{time.monotonic_ns()}.log", "w+")  # noqa: SIM115 (closed in close)
        self.proc = subprocess.Popen(["./connectapi", "serve", "--port", str(port), *serve_args], cwd=home, env=bare_env(home),
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self) -> float:
        """Seconds from start to /readyz 200."""
        started = time.monotonic()
        while time.monotonic() - started < READY_TIMEOUT:
            assert self.proc.poll() is None, self.output()
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"not ready in {READY_TIMEOUT} s:\n{self.output()}")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)

    def close(self) -> None:
        """After a failure: the service killed, and the embedded server it leaves behind."""
        if self.proc.poll() is None:
            # The whole group: the file's loader killed alone would leave its Python child serving.
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            left = postmaster_pid(self.home / "var")
            if left is not None:
                os.kill(left, signal.SIGTERM)
        self.log.close()


@pytest.fixture
def serving(alone: Path) -> Iterator[Serving]:
    served = Serving(alone, free_port())
    yield served
    served.close()


def test_the_file_runs_alone_with_a_bare_environment(alone: Path, serving: Serving) -> None:
    version = run(alone, "--version")
    assert (version.returncode, version.stdout.strip()) == (0, f"connectapi {__version__}")

    serving.wait_ready()
    assert httpx.get(f"{serving.url}/healthz").json()["data"]["version"] == __version__
    assert (alone / "var" / "pgdata" / "PG_VERSION").exists(), "the record is in ./var"

    seeded = run(alone, "seed", "--url", serving.url)
    assert seeded.returncode == 0, seeded.stderr
    seed = json.loads(seeded.stdout)
    # The console's templates, styles and password hashing come with the file.
    setup = seed["owner"]["setupUrl"]
    with httpx.Client() as browser:
        form = browser.get(setup)
        assert form.status_code == 200 and "Choose your password" in form.text
        token = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        chosen = browser.post(setup, data={"csrf": token, "password": "a long enough password",
                                           "confirm": "a long enough password"})
        assert chosen.status_code == 200 and "Your password is set" in chosen.text, chosen.text[:500]
    assert httpx.get(f"{serving.url}/console/static/console.css").status_code == 200
    api = f"{serving.url}/api/v1/connect-api/v1"
    auth = {"Authorization": f"Bearer {seed['key']}"}
    night, after = date.today() + timedelta(days=7), date.today() + timedelta(days=8)
    plan = seed["ratePlans"][0]["id"]
    wrote = httpx.put(f"{api}/rates", headers=auth, json={"updates": [
        {"ratePlanId": plan, "dateFrom": night.isoformat(), "dateTo": after.isoformat(), "rate": "135.00",
         "currency": "EUR"}]})
    assert wrote.status_code == 202, wrote.text

    # The sandbox channel manager inside the file holds the rate, as the admin grid shows.
    deadline = time.monotonic() + 60
    held: list[int] = []
    while time.monotonic() < deadline:
        grid = run(alone, "admin", "--url", serving.url, "property", "grid", str(seed["propertyId"]),
                   "--from", night.isoformat(), "--to", after.isoformat())
        assert grid.returncode == 0, grid.stderr
        held = [r["rateMinor"] for r in json.loads(grid.stdout)["rates"] if r["ratePlanId"] == plan]
        if held == [13500, 13500]:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"the sandbox never held the rate: {held}")

    status = run(alone, "status", "--json", "--url", serving.url)
    report = json.loads(status.stdout)
    assert (status.returncode, report["ok"], report["problems"]) == (0, True, []), status.stdout + status.stderr
    assert report["service"]["ready"] and report["properties"]["total"] == 1
    assert report["version"] == __version__

    # The file's own pg_dump, from the copy its PostgreSQL runs from, under the running service.
    backup = run(alone, "backup", "record.dump")
    assert backup.returncode == 0, backup.stderr

    assert serving.stop() == 0
    assert "stopped" in serving.output()

    restored = run(alone, "restore", "record.dump", CONNECTAPI_DATA_DIR="restored")
    assert restored.returncode == 0, restored.stderr
    assert (alone / "restored" / "pgdata" / "PG_VERSION").exists()

    # Again on the data dir it left: the same record, the rate still there.
    again = Serving(alone, free_port())
    try:
        again.wait_ready()
        read = httpx.get(f"{again.url}/api/v1/connect-api/v1/property", headers=auth)
        assert read.status_code == 200 and read.json()["data"]["id"] == seed["propertyId"]
        assert again.stop() == 0
    finally:
        again.close()


def unpacked_at(pid: int) -> set[str]:
    """The directories the one-file executable unpacked itself into that a process runs from."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {line.split()[-1].split("/")[2] for line in maps.splitlines() if "/_MEI" in line}


def test_workers_of_the_file_each_run_the_file_anew(alone: Path) -> None:
    """With --workers N the file starts itself again; each worker unpacks the file afresh
    rather than running from its supervisor's copy, so that a reload (SIGHUP) after the
    file was replaced by an upgrade runs the new version."""
    port = free_port()
    served = Serving(alone, port, "--workers", "2")
    try:
        served.wait_ready()
        supervisor = psutil.Process(served.proc.pid).children()[0]  # the bootloader's Python child
        workers = [p for p in supervisor.children(recursive=True) if "--parent-fd" in p.cmdline()
                   and not p.children()]  # each worker's Python, under its own bootloader
        assert len(workers) == 2, [p.cmdline() for p in supervisor.children(recursive=True)]
        seen = [unpacked_at(supervisor.pid)] + [unpacked_at(w.pid) for w in workers]
        assert all(len(s) == 1 for s in seen) and len(set.union(*seen)) == 3, seen
        answered = {httpx.get(f"{served.url}/healthz").json()["data"]["version"] for _ in range(6)}
        assert answered == {__version__}
        token = (alone / "var" / "admin-token").read_text().strip()
        actors = httpx.get(f"{served.url}/api/v1/admin/actors", headers={"Authorization": f"Bearer {token}"})
        assert sorted(actors.json()["data"]["workers"]["pids"]) == sorted(w.pid for w in workers)
        assert served.stop() == 0
    finally:
        served.close()


def test_migrate_and_the_standalone_sandbox_run_from_the_file(alone: Path) -> None:
    migrated = run(alone, "migrate")
    assert migrated.returncode == 0 and "applied migrations: [1," in migrated.stdout, migrated.stderr
    assert "none (up to date)" in run(alone, "migrate").stdout

    port = free_port()
    sandbox = subprocess.Popen(["./connectapi", "sandbox-cm", "--port", str(port)], cwd=alone,
                               env=bare_env(alone, CONNECTAPI_CM_KEY="sandbox-key-0001"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                stats = httpx.get(f"http://127.0.0.1:{port}/_sandbox/stats",
                                  headers={"user-api-key": "sandbox-key-0001"}, timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and sandbox.poll() is None, "the sandbox did not start"
                time.sleep(0.1)
        assert stats.status_code == 200
        sandbox.send_signal(signal.SIGTERM)
        assert sandbox.wait(30) == 0
    finally:
        if sandbox.poll() is None:
            os.killpg(sandbox.pid, signal.SIGKILL)
            sandbox.wait(10)
