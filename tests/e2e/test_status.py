"""`connectapi status` against a real `connectapi serve --workers 2` on its embedded record:
a property with a dirty cell (pushes held), a paused webhook endpoint with a delivery
waiting; then the same record with the service stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import psutil

from connectapi import __version__
from connectapi.storage.migrations import bundled_migrations

from .test_cli import connectapi
from .test_serve_process import Served, free_port, postmaster_pid, running

API = "/api/v1/connect-api/v1"


def status(data_dir: Path, url: str, *args: str) -> tuple[int, str, str]:
    done = connectapi("status", "--url", url, *args, env={"CONNECTAPI_DATA_DIR": str(data_dir)})
    return done.returncode, done.stdout, done.stderr


def seed(url: str, token: str) -> tuple[int, int]:
    """A property with one dirty availability cell and a paused endpoint; their ids."""
    admin = httpx.Client(base_url=f"{url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    example = json.loads((Path(__file__).parents[2] / "docs" / "examples" / "property.json").read_text())
    prop = admin.post("/properties", json=example).json()["data"]
    key = admin.post(f"/properties/{prop['id']}/keys", json={"label": "pms", "scopes": ["ari:write"]}
                     ).json()["data"]["key"]
    night = "2027-03-01"
    written = httpx.put(f"{url}{API}/availability", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                        json={"updates": [{"roomTypeId": prop["roomTypes"][0]["id"], "dateFrom": night,
                                           "dateTo": night, "available": 3}]})
    assert written.status_code == 202, written.text
    # Nobody listens there: its ping waits in the queue.
    hook = admin.post(f"/properties/{prop['id']}/webhooks", json={"url": f"http://127.0.0.1:{free_port()}/hook"})
    assert hook.status_code == 201, hook.text
    assert admin.post(f"/webhooks/{hook.json()['data']['id']}/pause").status_code == 200
    return prop["id"], hook.json()["data"]["id"]


def test_status_of_a_running_then_stopped_service(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    served = Served(data_dir, free_port(), {"CONNECTAPI_PUSH_PAUSED": "1", "CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"},
                    args=("--workers", "2"))
    try:
        served.wait_for("listening on")
        token = (data_dir / "admin-token").read_text().strip()
        property_id, endpoint_id = seed(served.url, token)

        code, out, err = status(data_dir, served.url, "--json")
        assert token not in out + err
        body: dict[str, Any] = json.loads(out)
        assert code == 1, out  # a paused endpoint needs attention
        assert body["ok"] is False and body["version"] == __version__
        assert body["problems"] == [f"1 webhook endpoint(s) paused: {endpoint_id}"]

        record = body["record"]
        known = [m.version for m in bundled_migrations()]
        assert (record["reachable"], record["embedded"], record["embeddedWasRunning"]) == (True, True, True)
        assert record["server"] == f"embedded in {(data_dir / 'pgdata').resolve()}"
        assert record["migrations"]["applied"] == len(known) and record["migrations"]["missing"] == []
        assert record["migrations"]["latestApplied"] == known[-1]

        service = body["service"]
        assert (service["up"], service["ready"], service["actorsDown"], service["adminError"]) == (True, True, [],
                                                                                                  None)
        children = {c.pid for c in psutil.Process(served.proc.pid).children()}
        assert service["workers"] == 2 and set(service["workerPids"]) <= children

        props = body["properties"]
        assert (props["total"], props["pending"], props["inSync"], props["backingOff"], props["failing"]) == (
            1, 1, 0, 0, 0)
        assert props["dirtyCells"] == 1 and props["oldestDirtyAgeSeconds"] is not None
        assert props["oldestDirtyAgeSeconds"] < 120

        hooks = body["webhooks"]
        assert (hooks["endpoints"], hooks["paused"]) == (1, 1)
        assert hooks["pausedEndpoints"] == [{"id": endpoint_id, "propertyId": property_id}]
        assert hooks["deliveries"]["pending"] == 1 and hooks["deliveries"]["held"] == 1
        assert isinstance(body["outbox"]["unsent"], int)

        tables = {t["table"]: t for t in body["tables"]}
        assert tables["write_batches"]["grows"] and tables["write_batches"]["oldestAt"] is not None
        assert tables["webhook_deliveries"]["oldestAt"] is not None and tables["idempotency_keys"]["grows"]
        assert all(t["bytes"] > 0 for t in tables.values())

        code, text, _ = status(data_dir, served.url)
        assert code == 1
        lines = text.splitlines()
        assert any("PROBLEM" in line and "paused" in line and f"id {endpoint_id}" in line for line in lines), text
        for needle in ("running", "ready", "workers", "pending", "write_batches", "1 problem(s):"):
            assert any(needle in line for line in lines), (needle, text)
    finally:
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(60) == 0

    # The service stopped: the record is still read (its server started for the check, and
    # stopped after), and the report says the service is not running.
    code, out, err = status(data_dir, served.url, "--json")
    body = json.loads(out)
    assert code == 1
    assert body["service"]["up"] is False
    assert any("not running" in p for p in body["problems"])
    assert (body["record"]["reachable"], body["record"]["embeddedWasRunning"]) == (True, False)
    assert body["properties"]["pending"] == 1 and body["webhooks"]["paused"] == 1
    pg = postmaster_pid(data_dir)
    assert pg is None or not running(pg), "status leaves no server behind"
    code, text, _ = status(data_dir, served.url)
    assert any(line.startswith("  PROBLEM") and "not running" in line for line in text.splitlines()), text


def test_a_reader_that_goes_away_ends_status_quietly(tmp_path: Path) -> None:
    """`connectapi status --json | head`: the pipe closed before the report is written is no
    traceback (a service that does not answer is reported, so none is needed here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}
    env["CONNECTAPI_DATA_DIR"] = str(tmp_path / "var")
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before anything is written
    done = subprocess.run([sys.executable, "-m", "connectapi", "status", "--json", "--url", "http://127.0.0.1:9"],
                          stdout=writer, stderr=subprocess.PIPE, env=env, text=True, timeout=60)
    os.close(writer)
    assert done.stderr == "" and done.returncode == 1
