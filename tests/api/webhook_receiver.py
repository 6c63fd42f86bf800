"""A real HTTP receiver on loopback for webhook tests, and verifying as a receiver would."""

from __future__ import annotations

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

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    async def handle(self, stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        while len(body) < int(headers.get("content-length", "0")):
            body += await stream.receive_some(65536)
        self.received.append((headers, body.decode()))
        answer = self.answers.pop(0) if self.answers else 204
        status, extra = (answer, "") if isinstance(answer, int) else (answer[0], f"retry-after: {answer[1]}\r\n")
        await stream.send_all(
            f"HTTP/1.1 {status} X\r\n{extra}content-length: 0\r\nconnection: close\r\n\r\n".encode())
        await stream.aclose()


def signed_by(secret: str, headers: dict[str, str], body: str) -> bool:
    """Verify as a receiver would, at the attempt's own timestamp (the test's clock is fake)."""
    at = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
    expected = Webhook(secret).sign(headers["webhook-id"], at, body)
    return expected in headers["webhook-signature"].split(" ")
