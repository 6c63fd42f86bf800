"""Chaos, bounded: a mixed load (ARI writes, bookings and cancellations, OTA bookings through
the channel manager, a webhook receiver) while the service is SIGKILLed and started again
five times at random moments. At the end: every 2xx write is in the record and on the
channel manager's grid, every 201 booking exists once, the inventory is what the bookings
left, every OTA revision was applied once and told to the receiver at least once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import trio

from .mixed_load import (LIFTED, ROOMS, MixedLoad, Property, check_bookings, check_writes, eventually, in_sync,
                         load_client, make_property, nights, record_of)
from .test_serve_process import Served, free_port

CM_KEY = "chaos-sandbox-key-000001"
NOTIFY_SECRET = "chaos-notify-secret"
SEED = 20261123
KILLS = 5
LOAD_SECONDS = 60.0


class Receiver(ThreadingHTTPServer):
    """A webhook receiver that keeps every event it was sent (2xx to all)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hooks"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.events.append(json.loads(body))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


async def test_chaos_five_kills_lose_nothing_answered(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    cm_port, port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}
    # A roomier budget than the real one: after each restart our pacing has forgotten its
    # windows while the channel manager has not; its 429s are honoured, but they are pacing,
    # not what this test is about.
    sandbox = subprocess.Popen(
        [sys.executable, "-m", "connectapi", "sandbox-cm", "--port", str(cm_port), "--per-property", "1000", "--reads", "1000",
         "--notify-url", f"http://127.0.0.1:{port}/api/v1/channel-manager/notify"],
        env={**env, "CONNECTAPI_CM_KEY": CM_KEY, "CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET},
        stderr=subprocess.DEVNULL)
    service_env = {"CONNECTAPI_CM_URL": f"http://127.0.0.1:{cm_port}", "CONNECTAPI_CM_KEY": CM_KEY,
                   "CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET, "CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1",
                   "CONNECTAPI_BUDGETS": LIFTED}
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    data_dir = tmp_path / "var"
    served: list[Served] = []
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{cm_port}", headers={"user-api-key": CM_KEY},
                                     timeout=10) as cm, load_client() as http:
            await eventually(lambda: _answers(cm), "the sandbox to listen", 30)
            served.append(Served(data_dir, port, service_env))
            await trio.to_thread.run_sync(served[-1].wait_for, "listening on")
            token = (data_dir / "admin-token").read_text().strip()
            admin = httpx.AsyncClient(base_url=f"{served[-1].url}/api/v1/admin",
                                      headers={"Authorization": f"Bearer {token}"}, timeout=30)
            prop = await make_property(admin)
            mapping = await map_on_the_sandbox(cm, admin, prop)
            registered = await admin.post(f"/properties/{prop.id}/webhooks", json={"url": receiver.url})
            assert registered.status_code == 201, registered.text

            load = MixedLoad(served[-1].url, prop, SEED)
            ota: dict[str, tuple[date, date]] = {}  # revision id -> stay

            async def sell_on_the_ota(until: float) -> None:
                while time.monotonic() < until:
                    arrival = rng.choice(nights()[:-2])
                    departure = arrival + timedelta(days=rng.randint(1, 2))
                    made = await cm.post("/_sandbox/ota-bookings", json={
                        "property_id": mapping["property"], "room_type_id": mapping["C"],
                        "rate_plan_id": mapping["plan C"], "arrival_date": arrival.isoformat(),
                        "departure_date": departure.isoformat(), "customer": {"name": "Ota", "surname": "Guest"},
                        "amount": "200.00"})
                    assert made.status_code == 201, made.text
                    ota[made.json()["data"]["id"]] = (arrival, departure)
                    await trio.sleep(rng.uniform(1.5, 3.0))

            async def kill_and_restart() -> None:
                for _ in range(KILLS):
                    await trio.sleep(rng.uniform(4.0, LOAD_SECONDS / KILLS))
                    served[-1].proc.send_signal(signal.SIGKILL)
                    await trio.to_thread.run_sync(served[-1].proc.wait, 10)
                    served.append(Served(data_dir, port, service_env))
                    await trio.to_thread.run_sync(served[-1].wait_for, "listening on")

            until = time.monotonic() + LOAD_SECONDS
            async with trio.open_nursery() as nursery:
                nursery.start_soon(kill_and_restart)
                nursery.start_soon(sell_on_the_ota, until)
                await load.run(LOAD_SECONDS, http)
            assert len(served) == KILLS + 1 and len(ota) >= 10
            ledger = load.ledger
            assert ledger.statuses[None] > 0, "the load never met a dead process"
            assert ledger.statuses[202] > 0 and ledger.statuses[201] > 0, ledger.statuses
            assert not {s for s in ledger.statuses if s is not None and s >= 500 and s != 503}, ledger.statuses

            # Everything settles: the feed taken, the cells pushed.
            await eventually(lambda: _feed_empty(cm), "every OTA revision taken from the feed", 120)
            await eventually(lambda: in_sync(http, served[-1].url, prop), "every cell pushed", 180)
            record = await record_of(http, served[-1].url, prop)
            assert check_writes(ledger, record) > 0
            await check_bookings(http, served[-1].url, prop, ledger, record)

            # OTA: each revision applied once (so room type C lost one room per night sold).
            kept = (await admin.get(f"/properties/{prop.id}/ota-revisions")).json()["data"]
            states = Counter(r["revisionId"] for r in kept)
            assert set(states) == set(ota) and set(states.values()) == {1}
            assert {r["state"] for r in kept} == {"applied"}, [r for r in kept if r["state"] != "applied"]
            sold: Counter[date] = Counter()
            for arrival, departure in ota.values():
                for i in range((departure - arrival).days):
                    sold[arrival + timedelta(days=i)] += 1
            for night in nights():
                assert record["availability"]["C"][night] == max(0, ROOMS["C"] - sold[night]), night

            # ... and told to the receiver at least once.
            codes = {r["reservationCode"] for r in kept}

            def told() -> bool:
                created = {e["data"]["booking"]["channel"]["reservationCode"] for e in receiver.events
                           if e["type"] == "channel.booking.created"}
                return codes <= created

            await eventually(lambda: _async(told), "every OTA booking delivered to the receiver", 120)

            # The channel manager's grid holds the record.
            grid = await read_grid(cm, mapping)
            for name in ROOMS:
                for night in nights():
                    assert grid["availability"][mapping[name]][night.isoformat()] == \
                        record["availability"][name][night], (name, night)
            held_rates = grid["restrictions"].get(mapping["plan A"], {})
            for night, minor in record["rates"].items():
                assert held_rates[night.isoformat()]["rate"] == f"{minor / 100:.2f}", night
            await admin.aclose()
    finally:
        if served and served[-1].proc.poll() is None:
            served[-1].proc.send_signal(signal.SIGTERM)
            served[-1].proc.wait(30)
        sandbox.send_signal(signal.SIGTERM)
        sandbox.wait(10)
        receiver.shutdown()


async def map_on_the_sandbox(cm: httpx.AsyncClient, admin: httpx.AsyncClient, prop: Property) -> dict[str, str]:
    """Make the property on the channel manager by hand, map it, and push the starting
    availability the record holds (a real channel manager starts empty)."""
    cm_prop = (await cm.post("/api/v1/properties", json={"property": {"title": "Casa Caos", "currency": "EUR"}})
               ).json()["data"]["id"]
    mapping: dict[str, str] = {"property": cm_prop}
    for name, room in prop.rooms.items():
        made = await cm.post("/api/v1/room_types", json={"room_type": {
            "property_id": cm_prop, "title": name, "count_of_rooms": ROOMS[name]}})
        mapping[name] = made.json()["data"]["id"]
        plan = await cm.post("/api/v1/rate_plans", json={"rate_plan": {
            "property_id": cm_prop, "room_type_id": mapping[name], "title": f"Plan {name}"}})
        mapping[f"plan {name}"] = plan.json()["data"]["id"]
    mapped = await admin.put(f"/properties/{prop.id}/channel-mapping", json={
        "cmPropertyId": cm_prop, "roomTypes": {str(prop.rooms[n]): mapping[n] for n in ROOMS},
        "ratePlans": {str(prop.plans[n]): mapping[f"plan {n}"] for n in ROOMS}})
    assert mapped.status_code == 200, mapped.text
    seeded = await cm.post("/api/v1/availability", json={"values": [
        {"property_id": cm_prop, "room_type_id": mapping[name], "date_from": str(date.today()),
         "date_to": str(date.today() + timedelta(days=365)), "availability": rooms}
        for name, rooms in ROOMS.items()]})
    assert seeded.status_code == 200, seeded.text
    return mapping


async def read_grid(cm: httpx.AsyncClient, mapping: dict[str, str]) -> dict[str, Any]:
    params = {"filter[property_id]": mapping["property"], "filter[date][gte]": str(nights()[0]),
              "filter[date][lte]": str(nights()[-1])}
    availability = (await cm.get("/api/v1/availability", params=params)).json()["data"]
    # Channex answers only the restriction fields asked for, and requires the list.
    restrictions = (await cm.get("/api/v1/restrictions", params={
        **params, "filter[restrictions]": "rate"})).json()["data"]
    return {"availability": availability, "restrictions": restrictions}


async def _answers(cm: httpx.AsyncClient) -> bool:
    return (await cm.get("/_sandbox/stats")).status_code == 200


async def _feed_empty(cm: httpx.AsyncClient) -> bool:
    return bool((await cm.get("/api/v1/booking_revisions/feed")).json()["data"] == [])


async def _async(check: Any) -> bool:
    return bool(check())
