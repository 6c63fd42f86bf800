"""The TypeScript client (clients/typescript, `@connectapi/client`) against the live service:
its node tests (node's own test runner, after `tsc`) get keys of fresh properties, the
fault proxy's address and real webhook deliveries in a JSON file this driver writes; then
the README's five-minute example runs as written.

npm ci runs once per package-lock.json (a stamp in node_modules); tsc builds dist/ (the
package as published) and build-test/ (the tests, which import the package by its name)."""

from __future__ import annotations

import base64
import datetime
import json
import time
from pathlib import Path
from typing import Any

import httpx

from .conftest import PACKAGE, Delivery, Keyed, Live, run_in_package
from .fault_proxy import FaultProxy

API = "/api/v1/connect-api/v1"
HOOK = "/ts-hook"



def _key(keyed: Keyed) -> dict[str, Any]:
    return {"key": keyed.key, "mode": keyed.mode, "propertyId": keyed.property["id"],
            "roomTypeId": keyed.room_type_id, "ratePlanId": keyed.rate_plan_id}


def _per_person(live: Live) -> dict[str, Any]:
    """A key of a fresh property with a rate plan sold per person (two adults) as its plan."""
    keyed = live.keyed("test")
    plan = live.per_person(keyed)
    return {**_key(keyed), "ratePlanId": plan["id"], "occupancies": plan["occupancies"]}


def _delivery(delivery: Delivery) -> dict[str, Any]:
    return {"raw": base64.b64encode(delivery.raw).decode(), "headers": delivery.headers}


def _webhooks(live: Live) -> dict[str, Any]:
    """Real deliveries of one endpoint: its ping (one secret), a test ping after a rotation
    (signed with the old secret and the new), and an OTA booking's event."""
    keyed = live.keyed("test")
    endpoint = live.webhook_endpoint(keyed, HOOK)
    ping = live.receiver.wait_for(HOOK, 1)[0]
    rotated = live.admin.post(f"/webhooks/{endpoint['id']}/rotate-secret")
    assert rotated.status_code == 201, rotated.text
    tested = live.admin.post(f"/webhooks/{endpoint['id']}/test")
    assert tested.status_code == 202, tested.text
    test_ping = live.receiver.wait_for(HOOK, 2)[1]
    night = datetime.date.today() + datetime.timedelta(days=40)
    made = httpx.post(f"{live.url}{API}/test-helpers/ota-bookings", headers={"Authorization": f"Bearer {keyed.key}"},
                      json={"roomTypeId": keyed.room_type_id, "ratePlanId": keyed.rate_plan_id,
                            "checkIn": night.isoformat(), "checkOut": (night + datetime.timedelta(days=2)).isoformat(),
                            "guest": {"name": "Rui", "surname": "Costa", "email": "rui@example.com"}}, timeout=30)
    assert made.status_code == 201, made.text
    booked = live.receiver.wait_for(HOOK, 3)[2]
    return {"secret": endpoint["secret"], "newSecret": rotated.json()["data"]["secret"],
            "pingEventId": endpoint["pingEventId"], "otaReference": made.json()["data"]["reservationCode"],
            "otaBookingReference": made.json()["data"]["reference"],
            "ping": _delivery(ping), "rotatedPing": _delivery(test_ping), "otaBooking": _delivery(booked)}


def test_the_typescript_client_against_the_live_service(built: Path, live: Live, proxy: FaultProxy,
                                                       tmp_path: Path) -> None:
    errors = live.keyed("test")
    fixture = {
        "url": live.url,
        "proxyUrl": proxy.url,
        # A property and key of its own for each test file: their budgets never meet.
        "keys": {name: _key(live.keyed("test")) for name in ("routes", "retries", "burst", "batches", "helpers")}
        | {"errors": _key(errors), "live": _key(live.keyed("live"))},
        "narrowKey": live.another_key(errors, ["ari:read", "bookings:read"]),
        "perPerson": _per_person(live),
        "webhooks": _webhooks(live),
    }
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(fixture, indent=1))
    tests = sorted(str(p.relative_to(PACKAGE)) for p in (PACKAGE / "build-test" / "test").glob("*.test.js"))
    assert tests, "no compiled tests in build-test/test"
    started = time.monotonic()
    done = run_in_package(["node", "--test", "--test-concurrency=4", "--test-reporter=spec", *tests], timeout=840,
                env={"CONNECTAPI_TS_FIXTURE": str(path)})
    took = time.monotonic() - started
    print(done.stdout[-30000:])
    print(done.stderr[-10000:])
    assert done.returncode == 0, f"node --test failed (exit {done.returncode}, {took:.0f} s): see the output above"


def test_the_readme_quickstart_runs_as_written(built: Path, live: Live) -> None:
    keyed = live.keyed("test")
    example = (PACKAGE / "examples" / "quickstart.mjs").read_text()
    readme = (PACKAGE / "README.md").read_text()
    assert example.strip() in readme, "examples/quickstart.mjs and the README's example differ"
    done = run_in_package(["node", "examples/quickstart.mjs"], timeout=300,
                env={"CONNECTAPI_URL": live.url, "CONNECTAPI_KEY": keyed.key})
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    print(done.stdout)
