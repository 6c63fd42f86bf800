"""A proxy between a client library and the live service that answers with the faults a
test arms: a 429 or 503 before the service sees the request, a 429 after the service
committed it, a connection dropped before or after. It keeps every request it saw (method,
path, idempotency key, what it answered), so a test can count the tries.

Armed over HTTP too (`POST /__proxy/faults`, `GET /__proxy/seen`), for the TypeScript
tests that run in node."""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

CONTROL = "/__proxy"


@dataclass
class Fault:
    """`kind`: 429-before, 429-after, 503-before, drop-before, drop-after. `match`: a
    method and a path prefix under the API (`PUT /rates`); `count`: how many requests it hits."""

    kind: str
    match: str
    retry_after: int = 1
    count: int = 1


@dataclass
class Seen:
    method: str
    path: str
    idempotency_key: str | None
    answered: int | str  # a status, or "dropped"
    replay: bool = False


@dataclass
class Script:
    faults: list[Fault] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, *faults: Fault) -> None:
        with self.lock:
            self.faults.extend(faults)

    def clear(self) -> None:
        with self.lock:
            self.faults.clear()
            self.seen.clear()

    def take(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                want_method, _, want_path = fault.match.partition(" ")
                if method == want_method and path.split("?")[0].endswith(want_path):
                    fault.count -= 1
                    if fault.count <= 0:
                        self.faults.remove(fault)
                    return fault
        return None

    def tries(self, method: str, path_end: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.method == method and s.path.split("?")[0].endswith(path_end)]


def _envelope(status: int, code: str, retry_after: int) -> bytes:
    return json.dumps({"statuscode": status, "message": f"fault armed by the test: {code}",
                       "data": {"code": code, "retryAfterSeconds": retry_after,
                                **({"scope": "writes"} if status == 429 else {})}}).encode()


class FaultProxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        self.upstream = httpx.Client(base_url=upstream, timeout=60)
        self.script = Script()
        super().__init__(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.upstream.close()


class _Handler(BaseHTTPRequestHandler):
    server: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _control(self, body: bytes) -> None:
        script = self.server.script
        if self.command == "POST" and self.path == f"{CONTROL}/faults":
            script.arm(*(Fault(**{k.replace("retryAfter", "retry_after"): v for k, v in f.items()})
                         for f in json.loads(body)))
            self._answer(204, b"")
        elif self.command == "POST" and self.path == f"{CONTROL}/clear":
            script.clear()
            self._answer(204, b"")
        elif self.command == "GET" and self.path == f"{CONTROL}/seen":
            with script.lock:
                seen = [asdict(s) for s in script.seen]
            self._answer(200, json.dumps(seen).encode(), {"content-type": "application/json"})
        else:
            self._answer(404, b"")

    def _any(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path.startswith(CONTROL):
            self._control(body)
            return
        script = self.server.script
        key = self.headers.get("x-idempotency-key")
        fault = script.take(self.command, self.path)

        def saw(answered: int | str, replay: bool = False) -> None:
            with script.lock:
                script.seen.append(Seen(self.command, self.path, key, answered, replay))

        if fault is not None and fault.kind.endswith("-before"):
            if fault.kind == "drop-before":
                saw("dropped")
                self._drop()
                return
            status = int(fault.kind[:3])
            saw(status)
            code = "RATE_LIMITED" if status == 429 else "SERVICE_UNAVAILABLE"
            self._answer(status, _envelope(status, code, fault.retry_after),
                         {"content-type": "application/json", "retry-after": str(fault.retry_after)})
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
        got = self.server.upstream.request(self.command, self.path, headers=headers, content=body)
        replay = got.headers.get("x-idempotent-replay") == "true"
        if fault is not None and fault.kind == "drop-after":
            saw("dropped", replay)
            self._drop()
            return
        if fault is not None and fault.kind == "429-after":
            saw(429, replay)
            self._answer(429, _envelope(429, "RATE_LIMITED", fault.retry_after),
                         {"content-type": "application/json", "retry-after": str(fault.retry_after)})
            return
        saw(got.status_code, replay)
        passed = {k: v for k, v in got.headers.items()
                  if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding")}
        self._answer(got.status_code, got.content, passed)

    do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = _any  # noqa: N815 (the http.server API)

