"""A real HTTP receiver on loopback for webhook tests, and verifying as a receiver would."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import trio
from standardwebhooks.webhooks import Webhook


@dataclass
class Receiver:
    """A minimal HTTP/1.1 server: answers each request with the next of `answers` (a status,
    or a status and a Retry-After), then 204; keeps what it was sent."""

    port: int = 0
    answers: list[int | tuple[int, int]] = field(default_factory=list)
    received: list[tuple[dict[str, str], str]] = field(default_factory=list)
    # Instead of answering: a hostile receiver's way of doing it (see trickle, endless).
    misbehave: Callable[[Receiver, trio.SocketStream], Awaitable[None]] | None = None
    sent: int = 0  # bytes a misbehaving receiver got out
    cut_off: bool = False  # the sender hung up on it

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    async def handle(self, stream: trio.SocketStream) -> None:
        request = await read_request(stream)
        if request is None:
            return
        _, headers, body = request
        self.received.append((headers, body.decode()))
        if self.misbehave is not None:
            try:
                await self.misbehave(self, stream)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.cut_off = True
            return
        answer = self.answers.pop(0) if self.answers else 204
        status, extra = (answer, "") if isinstance(answer, int) else (answer[0], f"retry-after: {answer[1]}\r\n")
        await stream.send_all(
            f"HTTP/1.1 {status} X\r\n{extra}content-length: 0\r\nconnection: close\r\n\r\n".encode())
        await stream.aclose()


async def read_request(stream: trio.SocketStream) -> tuple[str, dict[str, str], bytes] | None:
    """One HTTP/1.1 request off the stream: its request line, headers (names lowercased)
    and body (by content-length); None when the peer closed before its head was whole."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers.get("content-length", "0")):
        body += await stream.receive_some(65536)
    return lines[0], headers, body


@asynccontextmanager
async def serving(receiver: Receiver) -> AsyncIterator[Receiver]:
    """`receiver` listening on a port of loopback for the block."""
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, receiver.handle, 0, host="127.0.0.1"))
        receiver.port = listeners[0].socket.getsockname()[1]
        yield receiver
        nursery.cancel_scope.cancel()


TRICKLED = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"


async def trickle(receiver: Receiver, stream: trio.SocketStream) -> None:
    """A 200, one byte every 9 s (on the test's clock): never 10 s without a byte."""
    for byte in TRICKLED:
        await stream.send_all(bytes([byte]))
        receiver.sent += 1
        await trio.sleep(9)


ENDLESS_CAP = 64 * 1024 * 1024  # "for ever", as far as a sender that reads it all could bear


async def endless(receiver: Receiver, stream: trio.SocketStream) -> None:
    """A 200 whose body never ends (until 64 MiB: a sender that reads it all shows it here
    by taking all of it, not by filling the test machine's memory)."""
    await stream.send_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n")
    chunk = b"x" * 65536
    while receiver.sent < ENDLESS_CAP:
        await stream.send_all(chunk)
        receiver.sent += len(chunk)
    await stream.aclose()


def signed_by(secret: str, headers: dict[str, str], body: str) -> bool:
    """Verify as a receiver would, at the attempt's own timestamp (the test's clock is fake)."""
    at = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
    expected = Webhook(secret).sign(headers["webhook-id"], at, body)
    return expected in headers["webhook-signature"].split(" ")
