"""Three `connectapi serve` processes on one record send webhooks: every event reaches its
endpoint once, in order, whichever process recorded it and whichever sends it."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import trio

from .test_serve_process import Served, free_port

TOKEN = "webhook-processes-operator-token-0001"
ENDPOINTS = 4
PINGS = 60


class Receiver(ThreadingHTTPServer):
    """Answers 204 a little late (so that sends overlap); keeps (endpoint, webhook-id) in arrival order."""

    def __init__(self, port: int = 0) -> None:
        self.received: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        time.sleep(0.02)
        with self.server.lock:
            self.server.received.append((self.path, self.headers["webhook-id"]))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


async def test_three_processes_deliver_each_event_once_in_order(fresh_dsn: str, tmp_path: Path) -> None:
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    env = {"DATABASE_URL": fresh_dsn, "CONNECTAPI_ADMIN_TOKEN": TOKEN, "CONNECTAPI_PUSH_PAUSED": "1",
           "CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1", "CONNECTAPI_RECONCILE": "off"}
    served = [Served(tmp_path / name, free_port(), env) for name in ("a", "b", "c")]
    try:
        for one in served:
            await trio.to_thread.run_sync(one.wait_for, "listening on")
        admin = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(timeout=30, headers=admin) as http:
            example = json.loads((Path(__file__).parents[2] / "docs/examples/property.json").read_text())
            prop = (await http.post(f"{served[0].url}/api/v1/admin/properties", json=example)).json()["data"]
            sent: dict[str, list[str]] = defaultdict(list)  # endpoint path -> its events, in the order made
            endpoints: list[tuple[int, str]] = []
            for n in range(ENDPOINTS):
                path = f"/hooks/{n}"
                made = await http.post(f"{served[n % 3].url}/api/v1/admin/properties/{prop['id']}/webhooks",
                                       json={"url": f"http://127.0.0.1:{receiver.server_address[1]}{path}"})
                assert made.status_code == 201, made.text
                endpoints.append((made.json()["data"]["id"], path))
                sent[path].append(made.json()["data"]["pingEventId"])
            for n in range(PINGS):  # each through another process, which wakes its own sender
                endpoint_id, path = endpoints[n % ENDPOINTS]
                answer = await http.post(f"{served[n % 3].url}/api/v1/admin/webhooks/{endpoint_id}/test")
                assert answer.status_code == 202, answer.text
                sent[path].append(answer.json()["data"]["eventId"])
            expected = sum(len(events) for events in sent.values())
            give_up = time.monotonic() + 90
            while len(set(receiver.received)) < expected and time.monotonic() < give_up:
                await trio.sleep(0.2)
            await trio.sleep(1)  # a duplicate would come now
        times = Counter(receiver.received)
        assert len(times) == expected, (len(times), expected)
        assert [key for key, count in times.items() if count > 1] == []  # none twice
        for path, events in sent.items():
            assert [event for where, event in receiver.received if where == path] == events  # in order
    finally:
        receiver.shutdown()
        for one in served:
            one.proc.terminate()
            one.proc.wait(30)
