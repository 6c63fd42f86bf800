"""Three `connectapi serve` processes on one record take OTA bookings from one channel
manager: 100 bookings (some modified, some cancelled) arrive while they run, the channel
manager's notifications spread over the three as a load balancer would; every event
reaches each endpoint once, in the order it was recorded, and in order per booking; each
booking is in the record once; each revision is acknowledged once."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import trio

from connectapi.storage.database import open_database

from .test_crash_durability import _answers, mapped_property, wait_until
from .test_serve_process import Served, free_port

TOKEN = "ota-intake-processes-operator-token-01"
CM_KEY = "ota-intake-processes-sandbox-key-0001"
NOTIFY_SECRET = "ota-intake-processes-notify-secret"
BOOKINGS = 100
ENDPOINTS = 2


class Receiver(ThreadingHTTPServer):
    """Answers 204; keeps (path, webhook-id, type, reservation code) in arrival order."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str, str, str | None]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Receive)


class _Receive(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        event = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        booking = (event.get("data") or {}).get("booking")
        code = booking["channel"]["reservationCode"] if booking else None
        with self.server.lock:
            self.server.received.append((self.path, self.headers["webhook-id"], event["type"], code))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


class Balancer(ThreadingHTTPServer):
    """The channel manager's booking notifications, handed to the processes in turn."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self.turn = itertools.count()
        self.forwarded = 0
        super().__init__(("127.0.0.1", 0), _Forward)


class _Forward(BaseHTTPRequestHandler):
    server: Balancer

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        target = self.server.targets[next(self.server.turn) % len(self.server.targets)]
        try:
            status = httpx.post(f"{target}/api/v1/channel-manager/notify", content=body, timeout=30, headers={
                "Content-Type": "application/json", "X-Notify-Secret": self.headers["X-Notify-Secret"]}).status_code
            self.server.forwarded += 1
        except httpx.HTTPError:
            status = 502
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def serving(*servers: ThreadingHTTPServer) -> None:
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()


async def test_three_processes_take_100_ota_bookings_once_each_in_order(fresh_dsn: str, tmp_path: Path) -> None:
    receiver, balancer = Receiver(), Balancer()
    serving(receiver, balancer)
    cm_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}
    sandbox = subprocess.Popen(
        [sys.executable, "-m", "connectapi", "sandbox-cm", "--port", str(cm_port),
         "--notify-url", f"http://127.0.0.1:{balancer.server_address[1]}/notify"],
        env={**env, "CONNECTAPI_CM_KEY": CM_KEY, "CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET},
        stderr=(tmp_path / "sandbox.log").open("w"))  # kept for a look after a failure
    service_env = {"DATABASE_URL": fresh_dsn, "CONNECTAPI_ADMIN_TOKEN": TOKEN,
                   "CONNECTAPI_CM_URL": f"http://127.0.0.1:{cm_port}", "CONNECTAPI_CM_KEY": CM_KEY,
                   "CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET, "CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1",
                   # Pushes and grid reads are not what this is about: the bookings' inventory
                   # stays dirty in the record.
                   "CONNECTAPI_PUSH_PAUSED": "1", "CONNECTAPI_RECONCILE": "off",
                   "CONNECTAPI_BUDGETS": "ip=100000,global=1000000"}
    served = [Served(tmp_path / name, free_port(), service_env) for name in ("a", "b", "c")]
    # A connection each call: on a kept-alive one the standalone sandbox (hypercorn, trio)
    # now and then read a request and never answered it, under this test's load (3 of 9
    # runs), while a new connection was answered at once.
    cm = httpx.Client(base_url=f"http://127.0.0.1:{cm_port}", headers={"user-api-key": CM_KEY}, timeout=30,
                      limits=httpx.Limits(max_keepalive_connections=0))
    try:
        wait_until(lambda: _answers(cm), 30)
        for one in served:
            await trio.to_thread.run_sync(one.wait_for, "listening on", 60)
        balancer.targets = [one.url for one in served]
        started = time.monotonic()
        admin = httpx.Client(base_url=f"{served[0].url}/api/v1/admin", headers={"Authorization": f"Bearer {TOKEN}"},
                             timeout=30)
        prop, (cm_prop, cm_room, cm_plan) = mapped_property(admin, cm)
        pings: dict[str, str] = {}
        for n in range(ENDPOINTS):
            path = f"/hooks/{n}"
            made = httpx.post(f"{served[n + 1].url}/api/v1/admin/properties/{prop['id']}/webhooks",
                              json={"url": f"http://127.0.0.1:{receiver.server_address[1]}{path}"},
                              headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
            assert made.status_code == 201, made.text
            pings[path] = made.json()["data"]["pingEventId"]

        # 100 bookings over some seconds, each on nights of its own; every third one modified
        # a little later, every seventh cancelled later still: rounds run while they come.
        first_night = date.today() + timedelta(days=20)
        kinds: dict[str, list[str]] = {}  # reservation code -> the events it should bring, in order

        def sell(n: int) -> None:
            arrival = first_night + timedelta(days=2 * n)
            made = cm.post("/_sandbox/ota-bookings", json={
                "property_id": cm_prop, "room_type_id": cm_room, "rate_plan_id": cm_plan,
                "arrival_date": arrival.isoformat(), "departure_date": (arrival + timedelta(days=1)).isoformat(),
                "customer": {"name": "Guest", "surname": str(n)}, "amount": "100.00"})
            assert made.status_code == 201, made.text
            kinds[made.json()["data"]["attributes"]["ota_reservation_code"]] = ["created"]

        def change(code: str, how: str) -> None:
            answer = cm.post(f"/_sandbox/ota-bookings/{code}/{how}",
                             json={"amount": "120.00"} if how == "modify" else {})
            assert answer.status_code == 201, answer.text
            kinds[code].append("modified" if how == "modify" else "cancelled")

        def sell_all() -> None:
            for n in range(BOOKINGS):
                sell(n)
                codes = list(kinds)
                if n >= 3 and n % 3 == 0:
                    change(codes[n - 3], "modify")
                if n >= 6 and n % 7 == 0:
                    change(codes[n - 6], "cancel")
                time.sleep(0.03)

        await trio.to_thread.run_sync(sell_all)
        sold = time.monotonic()
        expected = ENDPOINTS * (1 + sum(len(k) for k in kinds.values()))
        give_up = time.monotonic() + 40
        while len({(path, hook) for path, hook, _, _ in receiver.received}) < expected and time.monotonic() < give_up:
            await trio.sleep(0.2)
        delivered = time.monotonic()
        # A round acknowledges what it applied after applying it all: the last
        # acknowledgements may still be on their way.
        while cm.get("/api/v1/booking_revisions/feed").json()["meta"]["total"] and time.monotonic() < give_up:
            await trio.sleep(0.2)
        await trio.sleep(1.5)  # a duplicate would come now
        stats = cm.get("/_sandbox/stats").json()["stats"]
        print(f"set up and sold in {sold - started:.1f} s, all delivered {delivered - sold:.1f} s later; "
              f"notifications forwarded {balancer.forwarded}; sandbox {stats}")

        times = Counter((path, hook) for path, hook, _, _ in receiver.received)
        assert [key for key, count in times.items() if count > 1] == []  # none twice
        assert len(times) == expected, (len(times), expected)
        async with open_database(fresh_dsn, min_size=1, max_size=2) as db:
            recorded = [r["id"] for r in await db.fetch(
                "SELECT id FROM webhook_events WHERE property_id = $1 ORDER BY seq", prop["id"])]
            bookings = await db.fetch("""SELECT o.cm_booking_id, b.status FROM ota_bookings o
                                         JOIN bookings b ON b.id = o.booking_id WHERE o.property_id = $1""",
                                      prop["id"])
            revisions = await db.fetch("SELECT state, acked_at FROM ota_revisions WHERE property_id = $1",
                                       prop["id"])
        for path, ping in pings.items():
            got = [hook for where, hook, _, _ in receiver.received if where == path]
            assert got == [hook for hook in recorded if hook in set(got)] and got[0] == ping  # in order
        for path in pings:
            told: dict[str, list[str]] = defaultdict(list)
            for where, _, kind, code in receiver.received:
                if where == path and code is not None:
                    told[code].append(kind.removeprefix("channel.booking."))
            assert told == kinds  # created before modified before cancelled, each once
        # Each booking once in the record, as its last revision left it; every revision
        # applied and acknowledged, once.
        assert len(bookings) == len({b["cm_booking_id"] for b in bookings}) == BOOKINGS
        assert Counter(b["status"] for b in bookings) == Counter(
            "CANCELLED" if k[-1] == "cancelled" else "UPCOMING" for k in kinds.values())
        assert len(revisions) == sum(len(k) for k in kinds.values())
        assert {r["state"] for r in revisions} == {"applied"} and all(r["acked_at"] for r in revisions)
        assert cm.get("/api/v1/booking_revisions/feed").json()["meta"]["total"] == 0
        assert (stats["acks"], stats["acksRepeated"]) == (len(revisions), 0)
    finally:
        for one in served:
            one.proc.terminate()
        for one in served:
            one.proc.wait(30)
        sandbox.send_signal(signal.SIGTERM)
        sandbox.wait(10)

        receiver.shutdown()
        balancer.shutdown()
