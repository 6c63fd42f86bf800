"""The client libraries' tests run against a live `connectapi serve` (the embedded record,
the sandbox channel manager), through a proxy that arms faults, with a webhook receiver
that keeps each delivery's raw body and headers.

The service keeps the contract's budgets for keys and properties (a test burst meets real
429s); only the per-address and global ones are lifted, since every test comes from one
address. Each test takes a property of its own, so their budgets never meet."""

from __future__ import annotations

import builtins
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..e2e.test_serve_process import Served, free_port
from .fault_proxy import FaultProxy

EVERY_SCOPE = ["ari:read", "ari:write", "bookings:read", "bookings:write", "bookings:payments"]
EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "property.json"


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    raw: bytes


class Receiver(ThreadingHTTPServer):
    """A webhook receiver on loopback: answers 204, keeps every delivery as it arrived."""

    daemon_threads = True

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Receiving)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def wait_for(self, path: str, count: int, timeout: float = 60) -> list[Delivery]:
        """The first `count` deliveries to `path`, waiting for them as the service sends."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                found = [d for d in self.deliveries if d.path == path]
            if len(found) >= count or time.monotonic() > deadline:
                assert len(found) >= count, f"{len(found)} of {count} deliveries to {path}"
                return found[:count]
            time.sleep(0.05)


class _Receiving(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.deliveries.append(Delivery(self.path, dict(self.headers.items()), raw))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass
class Keyed:
    """A property of its own and a key with every scope."""

    property: dict[str, Any]
    key: str
    mode: str

    @builtins.property
    def room_type_id(self) -> int:
        return int(self.property["roomTypes"][0]["id"])

    @builtins.property
    def rate_plan_id(self) -> int:
        return int(self.property["ratePlans"][0]["id"])


@dataclass
class Live:
    url: str
    admin: httpx.Client
    receiver: Receiver
    made: list[Keyed] = field(default_factory=list)

    def keyed(self, mode: str = "test", scopes: list[str] | None = None) -> Keyed:
        prop = self.admin.post("/properties", json=json.loads(EXAMPLE.read_text())).json()["data"]
        made = self.admin.post(f"/properties/{prop['id']}/keys", json={
            "label": "client tests", "scopes": EVERY_SCOPE if scopes is None else scopes, "mode": mode})
        assert made.status_code == 201, made.text
        return Keyed(prop, made.json()["data"]["key"], mode)

    def per_person(self, keyed: Keyed) -> dict[str, Any]:
        """A rate plan sold per person on the keyed property's room type (two adults)."""
        made = self.admin.post(f"/properties/{keyed.property['id']}/rate-plans", json={
            "roomTypeId": keyed.room_type_id, "name": "Per person", "mealPlan": "BB", "sellMode": "perPerson"})
        assert made.status_code == 201, made.text
        return dict(made.json()["data"])

    def another_key(self, keyed: Keyed, scopes: list[str]) -> str:
        made = self.admin.post(f"/properties/{keyed.property['id']}/keys",
                               json={"label": "narrow", "scopes": scopes, "mode": keyed.mode})
        assert made.status_code == 201, made.text
        return str(made.json()["data"]["key"])

    def webhook_endpoint(self, keyed: Keyed, path: str) -> dict[str, Any]:
        made = self.admin.post(f"/properties/{keyed.property['id']}/webhooks",
                               json={"url": self.receiver.url + path, "mode": keyed.mode})
        assert made.status_code == 201, made.text
        return dict(made.json()["data"])


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    data_dir = tmp_path_factory.mktemp("clients") / "var"
    lifted = "ip=1000000,global=1000000,ip-auth=1000000"
    served = Served(data_dir, free_port(), {"CONNECTAPI_BUDGETS": lifted, "CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"})
    receiver = Receiver()
    try:
        served.wait_for("listening on")
        token = (data_dir / "admin-token").read_text().strip()
        with httpx.Client(base_url=f"{served.url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"},
                          timeout=30) as admin:
            yield Live(served.url, admin, receiver)
    finally:
        receiver.shutdown()
        served.proc.terminate()
        served.proc.wait(30)


@pytest.fixture
def proxy(live: Live) -> Iterator[FaultProxy]:
    made = FaultProxy(live.url)
    try:
        yield made
    finally:
        made.stop()


PACKAGE = Path(__file__).parents[2] / "clients" / "typescript"
STAMP = PACKAGE / "node_modules" / ".connectapi-lock.sha256"


def run_in_package(args: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=PACKAGE, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout, check=False)


def must_in_package(args: list[str], timeout: float = 300) -> None:
    done = run_in_package(args, timeout)
    assert done.returncode == 0, f"{' '.join(args)}: exit {done.returncode}\n{done.stdout[-8000:]}\n{done.stderr[-8000:]}"


def _sources_digest() -> str:
    """What dist/ and build-test/ are compiled from."""
    digest = hashlib.sha256()
    for path in sorted([*PACKAGE.glob("tsconfig*.json"), PACKAGE / "package.json",
                        *(PACKAGE / "src").rglob("*.ts"), *(PACKAGE / "test").rglob("*.ts")]):
        digest.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@pytest.fixture(scope="module")
def built() -> Path:
    """node_modules as the lock says (npm ci, skipped while the lock is unchanged), then
    dist/ and build-test/ compiled from the sources as they are (skipped while unchanged).
    Two test files use it, on two workers at once under `make test`: one builds while the
    other waits (a lock file), and neither removes a build the other is running from."""
    for tool in ("node", "npm", "npx"):
        assert shutil.which(tool), f"{tool} is not on PATH: the TypeScript client's tests need Node.js 18+ and npm"
    with open(Path(tempfile.gettempdir()) / "connectapi-ts-build.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        lock = hashlib.sha256((PACKAGE / "package-lock.json").read_bytes()).hexdigest()
        if not STAMP.exists() or STAMP.read_text().strip() != lock:
            must_in_package(["npm", "ci", "--no-audit", "--no-fund"], timeout=600)
            STAMP.write_text(lock + "\n")
        sources, compiled = _sources_digest(), PACKAGE / "build-test" / ".sources.sha256"
        if not (compiled.exists() and compiled.read_text().strip() == sources and (PACKAGE / "dist").exists()):
            for old in ("dist", "build-test"):
                shutil.rmtree(PACKAGE / old, ignore_errors=True)
            must_in_package(["npx", "--no-install", "tsc", "-p", "tsconfig.json"])
            must_in_package(["npx", "--no-install", "tsc", "-p", "tsconfig.test.json"])
            compiled.write_text(sources + "\n")
    return PACKAGE
