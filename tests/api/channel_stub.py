"""The channel manager's booking feed and acknowledgement, as Channex documents them, on a
real loopback port: a stand-in for the outside service only (our client, actors and record
are the real ones), for what the sandbox cannot be told to do, such as answering one
acknowledgement 500 and the next 200."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import trio

from .webhook_receiver import read_request

NOT_FOUND = {"errors": {"code": "not_found", "title": "Resouce Not Found"}}  # sic, as documented
UNAUTHORIZED = {"errors": {"code": "unauthorized", "title": "Unauthorized"}}


@dataclass
class ChannelStub:
    key: str = "stub-channel-key"
    port: int = 0
    # Revisions not yet acknowledged, in the order they came (the feed's, oldest first).
    feed: dict[str, dict[str, Any]] = field(default_factory=dict)
    # How the next acknowledgements are answered (a status each), then 200.
    ack_answers: list[int] = field(default_factory=list)
    acks: list[tuple[str, int]] = field(default_factory=list)  # (revision id, status answered)
    feed_reads: int = 0
    # When given, an acknowledgement that would be answered 200 waits for it: a test looks at
    # the state between a refusal and the next try without racing a round already woken.
    acks_released: trio.Event | None = None
    # The feed keeps offering a revision after answering its acknowledgement 200 (a feed
    # lagging its acknowledgements, or a hostile one).
    acks_forgotten: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def offer(self, revision: dict[str, Any]) -> None:
        self.feed[str(revision["id"])] = revision

    async def handle(self, stream: trio.SocketStream) -> None:
        request = await read_request(stream)
        if request is None:
            return
        line, headers, _ = request
        method, target, _ = line.split(" ", 2)
        if self.acks_released is not None and method == "POST" and target.endswith("/ack") and not self.ack_answers:
            await self.acks_released.wait()
        status, answer = self._answer(method, target, headers)
        text = json.dumps(answer).encode()
        await stream.send_all(
            f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(text)}\r\n"
            f"x-request-id: stub-{len(self.acks)}-{self.feed_reads}\r\nconnection: close\r\n\r\n".encode() + text)
        await stream.aclose()

    def _answer(self, method: str, target: str, headers: dict[str, str]) -> tuple[int, Any]:
        if headers.get("user-api-key") != self.key:
            return 401, UNAUTHORIZED
        url = urlsplit(target)
        path = unquote(url.path)
        if method == "GET" and path == "/api/v1/booking_revisions/feed":
            self.feed_reads += 1
            query = parse_qs(url.query)
            page = int(query.get("pagination[page]", ["1"])[0])
            limit = int(query.get("pagination[limit]", ["10"])[0])
            wanted = query.get("filter[property_id]", [None])[0]
            found = [r for r in self.feed.values() if wanted is None or r["property_id"] == wanted]
            shown = found[(page - 1) * limit:page * limit]
            return 200, {"data": [{"type": "booking_revision", "id": r["id"], "attributes": r} for r in shown],
                         "meta": {"page": page, "limit": limit, "total": len(found)}}
        parts = path.split("/")
        if method == "POST" and len(parts) == 6 and parts[1:4] == ["api", "v1", "booking_revisions"] \
                and parts[5] == "ack":
            revision_id = parts[4]
            if revision_id not in self.feed:
                self.acks.append((revision_id, 404))
                return 404, NOT_FOUND
            status = self.ack_answers.pop(0) if self.ack_answers else 200
            self.acks.append((revision_id, status))
            if status == 200:
                if not self.acks_forgotten:
                    del self.feed[revision_id]
                return 200, {"meta": {"message": "Success"}}
            if status == 404:
                del self.feed[revision_id]  # gone at the channel manager
                return 404, NOT_FOUND
            return status, UNAUTHORIZED if status == 401 else {"errors": {"code": "error", "title": "Error"}}
        return 404, NOT_FOUND


@asynccontextmanager
async def serving(stub: ChannelStub) -> AsyncIterator[ChannelStub]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, stub.handle, 0, host="127.0.0.1"))
        stub.port = listeners[0].socket.getsockname()[1]
        yield stub
        nursery.cancel_scope.cancel()
