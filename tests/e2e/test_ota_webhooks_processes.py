"""An OTA booking through real processes: the sandbox channel manager notifies the service over
HTTP, the service pulls the feed and tries the webhook on a receiver that is down; kill -9;
the restarted service retries it from the record, signed, and the receiver, now up, has it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from standardwebhooks.webhooks import Webhook

from .test_crash_durability import _answers, mapped_property, wait_until
from .test_serve_process import Served, free_port

CM_KEY = "ota-e2e-sandbox-key-0001"
NOTIFY_SECRET = "ota-e2e-notify-secret"


class Receiver(ThreadingHTTPServer):
    """Answers 503 while `down`, 204 after; keeps what it was sent."""

    def __init__(self) -> None:
        self.down = True
        self.received: list[tuple[dict[str, str], str]] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hooks"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        self.server.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(503 if self.server.down else 204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_an_ota_booking_reaches_the_receiver_across_a_sigkill(tmp_path: Path) -> None:
    cm_port, port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}
    sandbox = subprocess.Popen(
        [sys.executable, "-m", "connectapi", "sandbox-cm", "--port", str(cm_port),
         "--notify-url", f"http://127.0.0.1:{port}/api/v1/channel-manager/notify"],
        env={**env, "CONNECTAPI_CM_KEY": CM_KEY, "CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET},
        stderr=subprocess.DEVNULL)
    cm = httpx.Client(base_url=f"http://127.0.0.1:{cm_port}", headers={"user-api-key": CM_KEY}, timeout=10)
    service_env = {"CONNECTAPI_CM_URL": f"http://127.0.0.1:{cm_port}", "CONNECTAPI_CM_KEY": CM_KEY,
                   "CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET, "CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"}
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    first = second = None
    try:
        wait_until(lambda: _answers(cm))
        first = Served(tmp_path / "var", port, service_env)
        first.wait_for("listening on")
        token = (tmp_path / "var" / "admin-token").read_text().strip()
        admin = httpx.Client(base_url=f"{first.url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"},
                             timeout=10)
        prop, (cm_prop, cm_room, cm_plan) = mapped_property(admin, cm)
        room = prop["roomTypes"][0]["id"]
        receiver.down = False
        endpoint = admin.post(f"/properties/{prop['id']}/webhooks", json={"url": receiver.url}).json()["data"]
        wait_until(lambda: len(receiver.received) == 1)  # the ping
        receiver.down = True

        arrival = date.today() + timedelta(days=30)
        made = cm.post("/_sandbox/ota-bookings", json={
            "property_id": cm_prop, "room_type_id": cm_room, "rate_plan_id": cm_plan,
            "arrival_date": arrival.isoformat(), "departure_date": (arrival + timedelta(days=2)).isoformat(),
            "customer": {"name": "Ana", "surname": "Lima"}, "amount": "250.00"})
        assert made.status_code == 201, made.text
        # The notification brought the service to the feed (its timer alone would take up to a
        # minute): the revision is applied and acknowledged, and its event tried once.
        wait_until(lambda: cm.get("/api/v1/booking_revisions/feed").json()["data"] == [], 20)
        wait_until(lambda: len(receiver.received) == 2, 20)
        first.proc.send_signal(signal.SIGKILL)  # the event is owed to a receiver that is down
        first.proc.wait(10)

        receiver.down = False
        second = Served(tmp_path / "var", port, service_env)
        second.wait_for("listening on")

        def created() -> list[tuple[dict[str, str], str]]:
            return [(h, b) for h, b in receiver.received if json.loads(b)["type"] == "channel.booking.created"]

        wait_until(lambda: len(created()) == 2, 90)  # the retry, 5 s after the first attempt
        headers, body = created()[-1]
        at = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
        assert Webhook(endpoint["secret"]).sign(headers["webhook-id"], at, body) in \
            headers["webhook-signature"].split(" ")
        booking = json.loads(body)["data"]["booking"]
        assert booking["rooms"][0]["roomTypeId"] == room and booking["amounts"]["total"] == "250.00"
        assert cm_prop not in body and cm_room not in body
        # Both attempts carried the same id: a receiver counts it once.
        assert len({h["webhook-id"] for h, _ in created()}) == 1 and len(receiver.received) == 3
    finally:
        for served in (first, second):
            if served is not None and served.proc.poll() is None:
                served.proc.send_signal(signal.SIGTERM)
                served.proc.wait(30)
        sandbox.send_signal(signal.SIGTERM)
        sandbox.wait(10)
        receiver.shutdown()
