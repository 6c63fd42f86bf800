"""Round trips to PostgreSQL per keyed PUT /rates (issue 43): the service's statements
counted on the wire.

The served process reaches the record through a proxy that reads what the service sends
(PostgreSQL's frontend protocol: each message a type byte and a length) and counts the
messages the service then waits on: Sync (the end of a statement in the extended
protocol), Flush (asyncpg's prepare of a statement new to its connection, answered
before the statement is bound) and Query (a simple statement). Counted on every
connection, the budget counter's held one too; the background's own statements over as
long an idle spell are taken off.
"""

from __future__ import annotations

import json
import tempfile
import urllib.parse
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import trio

from .process import free_port

WAITED_ON = {ord("S"), ord("H"), ord("Q")}  # Sync, Flush, Query
STARTUP_CODES = {80877103, 196608, 80877104}  # SSLRequest, protocol 3.0, GSSENCRequest


class WireCounter:
    """A proxy from a TCP port to the record's socket, counting the service's waits."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.round_trips = 0

    async def serve(self, port: int, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
        task_status.started()
        await trio.serve_listeners(self._relay, listeners)

    async def _relay(self, client: trio.SocketStream) -> None:
        server = await trio.open_unix_socket(self.socket_path)
        async with client, server, trio.open_nursery() as nursery:
            nursery.start_soon(self._copy_counted, client, server, nursery.cancel_scope)
            nursery.start_soon(_copy, server, client, nursery.cancel_scope)

    async def _copy_counted(self, source: trio.SocketStream, sink: trio.abc.Stream, done: trio.CancelScope) -> None:
        messages = FrontendMessages()
        try:
            while data := await source.receive_some(65536):
                await sink.send_all(data)
                self.round_trips += messages.feed(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        done.cancel()


class FrontendMessages:
    """What one connection's client sends, read message by message: how many of them the
    client waits on."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._typed = False  # untyped messages (SSLRequest, startup) until the startup one passed

    def feed(self, data: bytes) -> int:
        buffer = self._buffer
        buffer += data
        waited = 0
        while True:
            if not self._typed:
                if len(buffer) < 8:
                    return waited
                length = int.from_bytes(buffer[:4], "big")
                if len(buffer) < length:
                    return waited
                code = int.from_bytes(buffer[4:8], "big")
                del buffer[:length]
                self._typed = code not in STARTUP_CODES or code == 196608
                continue
            if len(buffer) < 5:
                return waited
            length = int.from_bytes(buffer[1:5], "big")
            if len(buffer) < 1 + length:
                return waited
            if buffer[0] in WAITED_ON:
                waited += 1
            del buffer[:1 + length]


async def _copy(source: trio.abc.Stream, sink: trio.abc.Stream, done: trio.CancelScope) -> None:
    try:
        while data := await source.receive_some(65536):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    done.cancel()


def socket_of(dsn: str) -> tuple[str, str]:
    """The record's Unix socket and database from the embedded server's DSN."""
    parts = urllib.parse.urlsplit(dsn)
    query = urllib.parse.parse_qs(parts.query)
    host = query.get("host", [parts.hostname or ""])[0]
    port = query.get("port", [str(parts.port or 5432)])[0]
    return f"{host}/.s.PGSQL.{port}", parts.path.lstrip("/")


def keyed_write_round_trips(requests: int = 100) -> dict[str, Any]:
    """`requests` keyed one-cell PUT /rates, one after another, against `serve --workers 1`
    whose record is behind the counting proxy."""
    from .scale import LIFTED, TOKEN, _ready, _record, _serve, _stop

    with tempfile.TemporaryDirectory(prefix="connectapi-trips-") as scratch, ExitStack() as stack:
        dsn, _ = _record(Path(scratch), stack)
        socket_path, database = socket_of(dsn)
        counter = WireCounter(socket_path)
        proxy_port, port = free_port(), free_port()
        user = urllib.parse.urlsplit(dsn).username or "postgres"
        env = {"DATABASE_URL": f"postgresql://{user}@127.0.0.1:{proxy_port}/{database}?sslmode=disable",
               "CONNECTAPI_ADMIN_TOKEN": TOKEN, "CONNECTAPI_PUSH_PAUSED": "1",
               "CONNECTAPI_BUDGETS": ",".join(f"{k}={v}" for k, v in LIFTED.items())}

        async def measure() -> dict[str, Any]:
            async with trio.open_nursery() as nursery:
                await nursery.start(counter.serve, proxy_port)
                proc = await trio.to_thread.run_sync(
                    lambda: _serve(Path(scratch) / "w1", port, env, "--workers", "1"))
                try:
                    url = f"http://127.0.0.1:{port}"
                    await _ready(url)
                    found = await _drive(url, counter, requests)
                finally:
                    await trio.to_thread.run_sync(_stop, proc)
                nursery.cancel_scope.cancel()
            return found

        return trio.run(measure)


async def _drive(url: str, counter: WireCounter, requests: int) -> dict[str, Any]:
    from .scale import ROOT, TOKEN, _stay

    admin = {"Authorization": f"Bearer {TOKEN}"}
    example = json.loads((ROOT / "docs/examples/property.json").read_text())
    async with httpx.AsyncClient(timeout=30) as http:
        prop = (await http.post(f"{url}/api/v1/admin/properties", json=example, headers=admin)).json()["data"]
        made = (await http.post(f"{url}/api/v1/admin/properties/{prop['id']}/keys", headers=admin,
                                json={"label": "trips", "scopes": ["ari:write"]})).json()["data"]
        key, plan = made["key"], prop["ratePlans"][0]["id"]

        async def put(n: int) -> int:
            night = _stay(n)
            body = {"updates": [{"ratePlanId": plan, "dateFrom": night, "dateTo": night, "rate": 90 + n % 40,
                                 "currency": "EUR"}]}
            answer = await http.put(f"{url}/api/v1/connect-api/v1/rates", json=body,
                                    headers={"Authorization": f"Bearer {key}", "x-idempotency-key": f"trip-{n:06d}"})
            return answer.status_code

        for n in range(20):  # warm: connections made, statements prepared, the catalog read
            await put(10_000 + n)
        started, before = trio.current_time(), counter.round_trips
        statuses = [await put(n) for n in range(requests)]
        spent = trio.current_time() - started
        during = counter.round_trips - before
        await trio.sleep(spent)  # as long idle: what the background sends meanwhile
        idle = counter.round_trips - before - during
    return {"requests": requests, "round_trips": during, "idle_round_trips": idle,
            "per_request": max(0, during - idle) / requests, "statuses": sorted(set(statuses))}


if __name__ == "__main__":
    print(json.dumps(keyed_write_round_trips(), indent=2))
