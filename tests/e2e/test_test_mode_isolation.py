"""Test mode against a configured channel manager (issue 29): with the standalone sandbox
standing for Channex, everything a test key does (writes, bookings, simulated OTA
bookings, faults, a reset) reaches the test sandbox inside the service and never the
configured channel manager, whose calls are counted; the live record shows none of it."""

from __future__ import annotations

import time
from datetime import date, timedelta
from typing import Any

import httpx

from .live import LIFTED
from .test_channex_certification import ADMIN, API, CM_KEY, TOKEN, make_hotel
from .test_push_processes import sandbox_cm
from .test_serve_process import Served, free_port


def until(check: Any, what: str, seconds: float = 90) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_nothing_a_test_key_does_reaches_the_configured_channel_manager(tmp_path: Any) -> None:
    with sandbox_cm() as cm:
        served = Served(tmp_path / "var", free_port(), {
            "CONNECTAPI_ADMIN_TOKEN": TOKEN, "CONNECTAPI_BUDGETS": LIFTED,
            "CONNECTAPI_CM_URL": str(cm.base_url).rstrip("/"), "CONNECTAPI_CM_KEY": CM_KEY})
        try:
            served.wait_for("listening on")
            with httpx.Client(base_url=served.url, timeout=30) as http:
                hotel = make_hotel(http, cm, "Casa Isolada")
                live_key = hotel.key
                # The live property's first push (its room counts, at mapping) is the last
                # thing the channel manager hears.
                until(lambda: http.get(f"{API}/sync", headers=live_key).json()["data"]["inventory"]["dirtyCells"] == 0,
                      "the live property in sync")
                before_stats = cm.get("/_sandbox/stats").json()["stats"]
                before_calls = len(cm.get("/_sandbox/calls").json()["calls"])

                made = http.post(f"/api/v1/admin/properties/{hotel.id}/keys", headers=ADMIN, json={
                    "label": "sandbox", "mode": "test",
                    "scopes": ["ari:read", "ari:write", "bookings:read", "bookings:write"]})
                assert made.status_code == 201, made.text
                test = {"Authorization": f"Bearer {made.json()['data']['key']}"}
                today = http.get(f"{API}/availability", headers=test).json()["data"]["roomTypes"][0]["nights"][0]["date"]
                night = (date.fromisoformat(today) + timedelta(days=7)).isoformat()
                after = (date.fromisoformat(today) + timedelta(days=8)).isoformat()
                span = {"dateFrom": night, "dateTo": night}
                for resource, entry in (("availability", {"roomTypeId": hotel.rooms[0], "available": 1}),
                                        ("rates", {"ratePlanId": hotel.plans[0], "rate": 321, "currency": "EUR"}),
                                        ("restrictions", {"ratePlanId": hotel.plans[0], "stopSell": True})):
                    wrote = http.put(f"{API}/{resource}", headers=test, json={"updates": [{**entry, **span}]})
                    assert wrote.status_code == 202, wrote.text
                booked = http.post(f"{API}/bookings", headers=test, json={
                    "externalReference": "TEST-1", "checkIn": night, "checkOut": after, "currency": "EUR",
                    "guest": {"name": "Ana Silva", "phone": "+351 912 345 678"},
                    "rooms": [{"roomTypeId": hotel.rooms[1], "ratePlanId": hotel.plans[2], "adults": 2,
                               "nightlyRate": "120.00"}]})
                assert booked.status_code == 201, booked.text
                ota = http.post(f"{API}/test-helpers/ota-bookings", headers=test, json={
                    "roomTypeId": hotel.rooms[0], "ratePlanId": hotel.plans[0], "checkIn": night, "checkOut": after,
                    "guest": {"name": "Bo Lima"}})
                assert ota.status_code == 201, ota.text
                reference = ota.json()["data"]["reference"]
                assert http.post(f"{API}/test-helpers/ota-bookings/{reference}/cancel",
                                 headers=test).status_code == 200
                assert http.post(f"{API}/bookings/{booked.json()['data']['bookingId']}/cancel", headers=test,
                                 json={}).status_code == 200

                def test_record_settled() -> bool:
                    sync = http.get(f"{API}/sync", headers=test).json()["data"]
                    dirty = sync["inventory"]["dirtyCells"] + sync["rates"]["dirtyCells"]
                    return bool(dirty + sync["restrictions"]["dirtyCells"] == 0
                                and sync["projector"]["lastOutcome"] == "ok")
                until(test_record_settled, "the test record pushed to the test sandbox")
                # The OTA booking came in and was cancelled: its room is back in the test record.
                query = {"from": night, "to": night}
                until(lambda: http.get(f"{API}/availability", params=query, headers=test).json()["data"]["roomTypes"][0][
                    "nights"][0]["available"] == 1, "the test availability after the OTA booking's round trip")
                assert http.post(f"{API}/test-helpers/reset", headers=test).status_code == 200

                # The configured channel manager heard nothing of any of it.
                assert len(cm.get("/_sandbox/calls").json()["calls"]) == before_calls
                after_stats = cm.get("/_sandbox/stats").json()["stats"]
                for counted in ("availabilityCalls", "restrictionCalls", "values", "acks", "failed"):
                    assert after_stats[counted] == before_stats[counted], counted
                # And the live record shows none of it.
                live_rates = http.get(f"{API}/rates", params=query, headers=live_key).json()["data"]
                assert "32100" not in str(live_rates)
        finally:
            served.proc.terminate()
            served.proc.wait(30)
