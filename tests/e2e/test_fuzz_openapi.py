"""schemathesis against the live service and its own OpenAPI document, with a real key.

No answer may be a 5xx, every status must be one the document lists for the route, and
every answer must match the document's schema for it (the envelope included). The seed is
fixed so that CI is repeatable; change it to look elsewhere.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from connectapi.http.openapi import OPENAPI_PATH

from .test_serve_process import Served, free_port

LIFTED = ",".join(f"{name}=1000000" for name in (
    "ip", "global", "requests", "property", "writes", "property-writes", "bookings", "property-bookings",
    "property-bookings-day")) + ",cells=100000000"
SEED = "20261122"


def test_schemathesis_finds_no_server_error_and_no_undocumented_answer(tmp_path: Path) -> None:
    port = free_port()
    served = Served(tmp_path / "var", port, {"CONNECTAPI_BUDGETS": LIFTED})
    try:
        served.wait_for("listening on")
        token = (tmp_path / "var" / "admin-token").read_text().strip()
        admin = httpx.Client(base_url=f"{served.url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"},
                             timeout=30)
        example = json.loads((Path(__file__).parents[2] / "docs" / "examples" / "property.json").read_text())
        prop = admin.post("/properties", json=example).json()["data"]
        key = admin.post(f"/properties/{prop['id']}/keys", json={"label": "fuzz", "scopes": [
            "ari:read", "ari:write", "bookings:read", "bookings:write", "bookings:payments"]}).json()["data"]["key"]
        schemathesis = Path(sys.executable).parent / "schemathesis"
        run = subprocess.run(
            [str(schemathesis), "run", f"{served.url}{OPENAPI_PATH}", "-H", f"Authorization: Bearer {key}",
             "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                         "response_schema_conformance",
             "--max-examples", "25", "--workers", "1", "--seed", SEED],
            capture_output=True, text=True, timeout=600, cwd=tmp_path,
            env={**os.environ, "SCHEMATHESIS_TELEMETRY": "false", "NO_COLOR": "1"})
        assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
        assert "14/14" in run.stdout  # every operation was reached
    finally:
        served.proc.send_signal(signal.SIGTERM)
        served.proc.wait(30)
