"""A live `connectapi serve` process with a property and a key holding every scope, for the
tests that drive the service from outside tools (schemathesis, newman)."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from .test_serve_process import Served, free_port

EVERY_SCOPE = ["ari:read", "ari:write", "bookings:read", "bookings:write", "bookings:payments"]
LIFTED = ",".join(f"{name}=1000000" for name in (
    "ip", "global", "requests", "property", "writes", "property-writes", "bookings", "property-bookings",
    "property-bookings-day")) + ",cells=100000000"


@contextmanager
def service_with_key(data_dir: Path, label: str, mode: str = "live") -> Iterator[tuple[Served, str]]:
    """The service on the embedded defaults with budgets lifted (fuzzers and collections run
    fast), the example property, and a key of `mode` with every scope."""
    served = Served(data_dir, free_port(), {"CONNECTAPI_BUDGETS": LIFTED})
    try:
        served.wait_for("listening on")
        token = (data_dir / "admin-token").read_text().strip()
        admin = httpx.Client(base_url=f"{served.url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"},
                             timeout=30)
        example = json.loads((Path(__file__).parents[2] / "docs" / "examples" / "property.json").read_text())
        prop = admin.post("/properties", json=example).json()["data"]
        key = admin.post(f"/properties/{prop['id']}/keys", json={"label": label, "scopes": EVERY_SCOPE, "mode": mode}
                         ).json()["data"]["key"]
        yield served, key
    finally:
        served.proc.send_signal(signal.SIGTERM)
        served.proc.wait(30)
