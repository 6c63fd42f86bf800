"""Kill -9 in the middle of a push; after a restart every change reaches the channel manager."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from .test_serve_process import Served, free_port

CM_KEY = "durability-sandbox-key-01"
API = "/api/v1/connect-api/v1"


def wait_until(check: object, seconds: float = 60.0) -> None:
    """Poll a process we started, not a window of ours: real time is what it takes."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_nothing_is_lost_across_a_sigkill(tmp_path: Path) -> None:
    cm_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}
    # A roomier budget than the real one: after a restart our pacer has forgotten its
    # windows while the channel manager has not, and the 429 pause that follows is a
    # pacing matter, not what this test is about.
    sandbox = subprocess.Popen([sys.executable, "-m", "connectapi", "sandbox-cm", "--port", str(cm_port),
                                "--per-property", "100"],
                               env={**env, "CONNECTAPI_CM_KEY": CM_KEY}, stderr=subprocess.DEVNULL)
    cm = httpx.Client(base_url=f"http://127.0.0.1:{cm_port}", headers={"user-api-key": CM_KEY}, timeout=10)
    service_env = {"CONNECTAPI_CM_URL": f"http://127.0.0.1:{cm_port}", "CONNECTAPI_CM_KEY": CM_KEY,
                   "CONNECTAPI_BUDGETS": "writes=1000,property-writes=1000,requests=100000,property=100000,ip=100000"}
    port = free_port()
    first = second = None
    try:
        wait_until(lambda: _answers(cm))
        first = Served(tmp_path / "var", port, service_env)
        first.wait_for("listening on")
        token = (tmp_path / "var" / "admin-token").read_text().strip()
        admin = httpx.Client(base_url=f"{first.url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"},
                             timeout=10)
        prop, (cm_prop_id, cm_room, cm_plan) = mapped_property(admin, cm)
        room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
        key = admin.post(f"/properties/{prop['id']}/keys", json={"label": "k", "scopes": ["ari:read", "ari:write"]}
                         ).json()["data"]["key"]
        api = httpx.Client(base_url=f"{first.url}{API}", headers={"Authorization": f"Bearer {key}"}, timeout=10)
        # the first push to the channel manager will hang: the kill lands in the middle of it
        assert cm.post("/_sandbox/faults", json={"mode": "timeout", "count": 1}).status_code == 200
        for night in range(1, 21):
            day = time.strftime("%Y-%m-%d", time.gmtime(time.time() + night * 86400))
            assert api.put("/availability", json={"updates": [{"roomTypeId": room, "dateFrom": day, "dateTo": day,
                                                                "available": night % 6}]}).status_code == 202
            assert api.put("/rates", json={"updates": [{"ratePlanId": plan, "dateFrom": day, "dateTo": day,
                                                        "rate": 100 + night, "currency": "EUR"}]}).status_code == 202
        wait_until(lambda: cm.get("/_sandbox/stats").json()["stats"]["failed"] == 1)
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)
        before = cm.get("/_sandbox/stats").json()["stats"]

        second = Served(tmp_path / "var", port, service_env)
        second.wait_for("listening on")
        api = httpx.Client(base_url=f"{second.url}{API}", headers={"Authorization": f"Bearer {key}"}, timeout=10)

        def in_sync() -> bool:
            sync = api.get("/sync").json()["data"]
            return bool(sync["inventory"]["dirtyCells"] == 0 and sync["rates"]["dirtyCells"] == 0)

        wait_until(in_sync)
        first_day = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 86400))
        last_day = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 20 * 86400))
        ours = api.get(f"/availability?from={first_day}&to={last_day}").json()["data"]["roomTypes"][0]["nights"]
        rates = api.get(f"/rates?from={first_day}&to={last_day}").json()["data"]["ratePlans"][0]["nights"]
        filters = {"filter[property_id]": cm_prop_id, "filter[date][gte]": first_day, "filter[date][lte]": last_day}
        held_availability = cm.get("/api/v1/availability", params=filters).json()["data"][cm_room]
        # Channex answers only the restriction fields asked for, and requires the list.
        held_restrictions = cm.get("/api/v1/restrictions", params={**filters, "filter[restrictions]": "rate"}
                                   ).json()["data"][cm_plan]
        assert before["availabilityCalls"] == 0  # the one availability push was in flight at the kill
        assert {n["date"]: n["available"] for n in ours} == held_availability
        assert {n["date"]: f"{n['rateMinor'] / 100:.2f}" for n in rates} == {
            d: f["rate"] for d, f in held_restrictions.items()}
        assert len(rates) == 20
        # with a real channel manager the admin grid reads it through its API
        admin = httpx.Client(base_url=f"{second.url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"},
                             timeout=90)
        reads = cm.get("/_sandbox/stats").json()["stats"]["readCalls"]
        grid = admin.get(f"/properties/{prop['id']}/channel-grid?from={first_day}&to={last_day}").json()["data"]
        assert {a["date"]: a["available"] for a in grid["availability"]} == held_availability
        assert cm.get("/_sandbox/stats").json()["stats"]["readCalls"] == reads + 2
        assert admin.get("/sandbox").json()["data"]["code"] == "SANDBOX_DISABLED"
    finally:
        for served in (first, second):
            if served is not None and served.proc.poll() is None:
                served.proc.send_signal(signal.SIGTERM)
                served.proc.wait(30)
        sandbox.send_signal(signal.SIGTERM)
        sandbox.wait(10)


def mapped_property(admin: httpx.Client, cm: httpx.Client) -> tuple[dict[str, Any], tuple[str, str, str]]:
    """The example property, made in the service, and made by hand in a real channel manager
    (a standalone sandbox) and mapped: answers it and the channel manager's ids (property,
    its first room type, its first rate plan)."""
    example = json.loads((Path(__file__).parents[2] / "docs" / "examples" / "property.json").read_text())
    prop = admin.post("/properties", json=example).json()["data"]
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    cm_prop = cm.post("/api/v1/properties", json={"property": {"title": "Casa Azul", "currency": "EUR"}}
                      ).json()["data"]["id"]
    cm_room = cm.post("/api/v1/room_types", json={"room_type": {"property_id": cm_prop, "title": "Double",
                                                                "count_of_rooms": 8}}).json()["data"]["id"]
    cm_plan = cm.post("/api/v1/rate_plans", json={"rate_plan": {"property_id": cm_prop, "room_type_id": cm_room,
                                                                "title": "Flexible"}}).json()["data"]["id"]
    mapped = admin.put(f"/properties/{prop['id']}/channel-mapping", json={
        "cmPropertyId": cm_prop, "roomTypes": {str(room): cm_room}, "ratePlans": {str(plan): cm_plan}})
    assert mapped.status_code == 200, mapped.text
    return prop, (cm_prop, cm_room, cm_plan)


def _answers(cm: httpx.Client) -> bool:
    try:
        return cm.get("/_sandbox/stats").status_code == 200
    except httpx.HTTPError:
        return False
