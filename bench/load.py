"""A small HTTP/1.1 keep-alive load generator on raw sockets, fast enough not to be the bottleneck."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import trio


@dataclass
class Run:
    path: str
    seconds: float
    requests: int
    errors: int
    latencies: list[float]

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def _read_response(stream: trio.SocketStream, buffer: bytearray) -> tuple[int, bool]:
    """The next answer's status, and whether the server closes the connection after it
    (hypercorn does after 1000 requests on one connection: the client opens another)."""
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        if not data:
            raise ConnectionError("closed")
        buffer += data
    head_end = buffer.index(b"\r\n\r\n") + 4
    head = bytes(buffer[:head_end]).lower()
    status = int(head[9:12])
    start = head.index(b"content-length:") + 15
    length = int(head[start:head.index(b"\r\n", start)])
    while len(buffer) < head_end + length:
        data = await stream.receive_some(65536)
        if not data:
            raise ConnectionError("closed")
        buffer += data
    del buffer[: head_end + length]
    return status, b"\r\nconnection: close\r\n" in head


async def load(port: int, path: str, headers: dict[str, str], connections: int, seconds: float,
               method: str = "GET", body_for: Callable[[int], bytes] | None = None,
               good: tuple[int, ...] = (200,)) -> Run:
    """`connections` keep-alive connections asking as fast as answered for `seconds`.
    `body_for(n)` gives the n-th request's body (a JSON document), for PUT and POST."""
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in headers.items()))
    plain = (head + "\r\n").encode()
    sent = 0

    def request() -> bytes:
        nonlocal sent
        if body_for is None:
            return plain
        sent += 1
        body = body_for(sent)
        return (head + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body

    latencies: list[float] = []
    counts = {"ok": 0, "errors": 0}
    deadline = time.perf_counter() + seconds

    async def one_connection() -> None:
        while time.perf_counter() < deadline:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            buffer = bytearray()
            async with stream:
                closing = False
                while not closing and time.perf_counter() < deadline:
                    started = time.perf_counter()
                    await stream.send_all(request())
                    status, closing = await _read_response(stream, buffer)
                    latencies.append(time.perf_counter() - started)
                    counts["ok" if status in good else "errors"] += 1

    began = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(connections):
            nursery.start_soon(one_connection)
    return Run(path, time.perf_counter() - began, counts["ok"], counts["errors"], latencies)
