"""`python -m bench.webhooks`: OTA booking to signed webhook, through the whole service.

- Latency: one OTA booking at a time is made in the sandbox channel manager (which
  notifies the service, as a real one does); measured from the revision's making to the
  receiver holding the `channel.booking.created` event (p50, p99). Target: p50 under 1 s.
- Throughput: one property with `--endpoints` endpoints (100), `--bookings` OTA bookings
  made at once; deliveries per second until every endpoint has every event.

Receivers are plain HTTP on loopback in this process, so the server runs with
CONNECTAPI_WEBHOOK_ALLOW_PRIVATE=1 (bench/server.py), as tests do.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import trio

from .results_dir import results_dir
from .pipeline import ADMIN_TOKEN
from .stats import percentile
from .process import bench_server

P50_SECONDS = 1.0


@dataclass
class Receiver:
    """Answers 204 at once; keeps when each event reached each path."""

    port: int = 0
    arrivals: dict[tuple[str, str], float] = field(default_factory=dict)  # (path, event type+id) -> time
    by_type: dict[str, list[tuple[str, float, dict[str, Any]]]] = field(default_factory=dict)
    changed: trio.Event = field(default_factory=trio.Event)

    async def handle(self, stream: trio.SocketStream) -> None:
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            path = lines[0].split(" ")[1]
            headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
            while len(body) < int(headers.get("content-length", "0")):
                body += await stream.receive_some(65536)
            await stream.send_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return
        finally:
            await stream.aclose()
        now = time.perf_counter()
        event = json.loads(body)
        self.arrivals[(path, event["id"])] = now
        self.by_type.setdefault(event["type"], []).append((path, now, event))
        self.changed.set()
        self.changed = trio.Event()

    async def wait_for(self, check: Any, timeout: float) -> bool:
        with trio.move_on_after(timeout):
            while not check():
                await self.changed.wait()
            return True
        return False


def admin_client(base: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"{base}/api/v1/admin", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                             timeout=60)


async def hooked_property(admin: httpx.AsyncClient, receiver: Receiver, endpoints: int,
                          name: str) -> dict[str, Any]:
    body = json.loads((Path(__file__).parents[1] / "docs/examples/property.json").read_text())
    body["name"], body["ownerEmail"] = name, None
    body["roomTypes"][0]["rooms"] = 10_000
    prop = (await admin.post("/properties", json=body)).json()["data"]
    for n in range(endpoints):
        made = await admin.post(f"/properties/{prop['id']}/webhooks",
                                json={"url": f"http://127.0.0.1:{receiver.port}/{name}/{n}"})
        assert made.status_code == 201, made.text
    def pings() -> int:
        return sum(1 for p, _, _ in receiver.by_type.get("connectapi.ping", []) if p.startswith(f"/{name}/"))

    assert await receiver.wait_for(lambda: pings() == endpoints, 120), "the registration pings never all arrived"
    return dict(prop)


async def make_ota_booking(admin: httpx.AsyncClient, prop: dict[str, Any], night: date) -> str:
    made = await admin.post(f"/properties/{prop['id']}/sandbox/ota-bookings", json={
        "roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"],
        "checkIn": night.isoformat(), "checkOut": (night + timedelta(days=1)).isoformat(), "adults": 2,
        "guest": {"name": "Bench Guest"}, "amount": "120.00"})
    assert made.status_code == 201, made.text
    return str(made.json()["data"]["reservationCode"])  # the channel's code, as the events carry it


def created_for(receiver: Receiver, code: str) -> float | None:
    for _, at, event in receiver.by_type.get("channel.booking.created", []):
        if event["data"]["booking"]["channel"]["reservationCode"] == code:
            return at
    return None


async def measure(base: str, rounds: int, endpoints: int, bookings: int) -> dict[str, Any]:
    receiver = Receiver()
    async with trio.open_nursery() as nursery, admin_client(base) as admin:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, receiver.handle, 0, host="127.0.0.1"))
        receiver.port = listeners[0].socket.getsockname()[1]
        first = date.today() + timedelta(days=1)

        # Latency, at idle: one booking at a time.
        single = await hooked_property(admin, receiver, 1, "latency")
        latencies = []
        for i in range(rounds):
            made_at = time.perf_counter()
            code = await make_ota_booking(admin, single, first + timedelta(days=i % 300))
            assert await receiver.wait_for(lambda: created_for(receiver, code) is not None, 60), "no event"
            arrived = created_for(receiver, code)
            assert arrived is not None
            latencies.append(arrived - made_at)
            await trio.sleep(0.05)

        # Throughput: every booking's event to every endpoint of one property.
        fan = await hooked_property(admin, receiver, endpoints, "fan")
        before = len([a for a in receiver.arrivals if a[0].startswith("/fan/")])
        started = time.perf_counter()
        async with trio.open_nursery() as makers:
            for i in range(bookings):
                makers.start_soon(make_ota_booking, admin, fan, first + timedelta(days=i % 300))
        expected = before + bookings * endpoints
        def fan_count() -> int:
            return len([a for a in receiver.arrivals if a[0].startswith("/fan/")])

        complete = await receiver.wait_for(lambda: fan_count() >= expected, 600)
        elapsed = time.perf_counter() - started
        delivered = fan_count() - before
        nursery.cancel_scope.cancel()
    return {
        "latency": {"rounds": rounds, "p50_s": statistics.median(latencies), "p99_s": percentile(latencies, 99),
                    "max_s": max(latencies), "latencies": latencies},
        "throughput": {"endpoints": endpoints, "bookings": bookings, "deliveries": delivered,
                       "seconds": elapsed, "per_second": delivered / elapsed, "complete": complete},
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.webhooks")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--endpoints", type=int, default=100)
    parser.add_argument("--bookings", type=int, default=20)
    args = parser.parse_args()
    with bench_server() as ready:
        result = trio.run(measure, f"http://127.0.0.1:{ready['port']}", args.rounds, args.endpoints, args.bookings)
    latency, throughput = result["latency"], result["throughput"]
    met = latency["p50_s"] < P50_SECONDS
    print(f"OTA booking to receiver, at idle ({latency['rounds']} bookings): p50 {latency['p50_s'] * 1000:.0f} ms, "
          f"p99 {latency['p99_s'] * 1000:.0f} ms (target p50 < {P50_SECONDS:.0f} s: {'met' if met else 'missed'})")
    print(f"{throughput['bookings']} bookings to {throughput['endpoints']} endpoints: {throughput['deliveries']} "
          f"deliveries in {throughput['seconds']:.1f} s, {throughput['per_second']:.0f}/s"
          f"{'' if throughput['complete'] else ' (INCOMPLETE)'}")
    out = results_dir()
    out.mkdir(exist_ok=True)
    (out / "webhooks.json").write_text(json.dumps(result, indent=2))
    return 0 if met and throughput["complete"] else 1


if __name__ == "__main__":
    sys.exit(main())
