"""What one client connection may hold: a cap on open connections, and a deadline on what
a client owes us once it has started a request.

hypercorn has neither. Its `read_timeout` is per read (a client trickling a byte every 9 s
never meets a 10 s one) and also runs while the client rightly waits for our answer (a slow
answer would be cut). So the deadline here starts with a request's first byte and ends when
its body is complete; an idle keep-alive connection is hypercorn's keep-alive timeout's, and
a client waiting for its answer owes nothing.

Built on hypercorn's own connection class (its version is pinned in pyproject): the one
place that sees both the socket and the HTTP/1.1 parser's state.
"""

from __future__ import annotations

import json
import math

import h11
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.events import Closed, RawData
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio import run as hypercorn_run
from hypercorn.trio.tcp_server import MAX_RECV, TCPServer

from ..domain.errors import ApiError

# A client has this long to send a request's head and body, from its first byte.
REQUEST_READ_LIMIT = 10.0
MAX_CONNECTIONS = 1000
# The answer to a connection past the cap, before it is closed: the contract's envelope.
_FULL = ApiError("SERVICE_UNAVAILABLE", "too many connections; retry later", retry_after_seconds=1)


class ServingConfig(HypercornConfig):
    max_connections: int = MAX_CONNECTIONS
    request_read_limit: float = REQUEST_READ_LIMIT

    def __init__(self) -> None:
        super().__init__()
        self.open_connections = 0


class GuardedConnection(TCPServer):
    """hypercorn's connection, guarded when served with a ServingConfig (the patch is
    process-wide; other servers in the process, such as the sandbox, are left as they were)."""

    async def run(self) -> None:
        config = self.config
        if not isinstance(config, ServingConfig):
            await super().run()
            return
        if config.open_connections >= config.max_connections:
            await self._refuse_full()
            return
        config.open_connections += 1
        try:
            await super().run()
        finally:
            config.open_connections -= 1

    async def _refuse_full(self) -> None:
        body = json.dumps({"statuscode": _FULL.status, "message": _FULL.message, "data": _FULL.data()}).encode()
        head = (f"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
                f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n").encode()
        # Answer, stop sending, then read what the client had sent for up to a second before
        # closing: closing on unread bytes makes the kernel reset the connection, and the
        # client would see a reset instead of the 503.
        with trio.move_on_after(1):
            try:
                await self.stream.send_all(head + body)
                await self.stream.send_eof()
                while await self.stream.receive_some(MAX_RECV):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        await self.stream.aclose()

    async def _read_data(self) -> None:
        if not isinstance(self.config, ServingConfig):
            await super()._read_data()
            return
        deadline = math.inf
        while True:
            if self._client_owes_bytes():
                if deadline == math.inf:
                    deadline = trio.current_time() + self.config.request_read_limit
            else:
                deadline = math.inf
            try:
                with trio.fail_at(deadline):
                    data = await self.stream.receive_some(MAX_RECV)
            except trio.TooSlowError:
                await self._close()
                break
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                break
            await self.protocol.handle(RawData(bytes(data)))
            if data == b"":
                break
        await self.protocol.handle(Closed())
        # The connection is over: its slot comes back now, not when hypercorn's keep-alive
        # timer next looks (up to 5 s later).
        await self.idle_task.stop()

    def _client_owes_bytes(self) -> bool:
        """Whether a request has begun and not yet fully arrived (HTTP/1.1; other protocols,
        which we do not offer, are given the limit on every read)."""
        protocol = getattr(getattr(self, "protocol", None), "protocol", None)
        if not isinstance(protocol, H11Protocol):
            return True
        connection = protocol.connection
        state = connection.their_state
        if state is h11.IDLE:
            return bool(connection.trailing_data[0])
        return state is h11.SEND_BODY


def serve_guarded() -> None:
    """Make hypercorn's trio worker open each connection as a GuardedConnection."""
    hypercorn_run.TCPServer = GuardedConnection  # type: ignore[attr-defined]
