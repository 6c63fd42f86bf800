"""What one client connection may hold: caps on open connections (in all, and per client),
a deadline on what a client owes us once it has started a request, a deadline on each
send of our answer (sends.py's policy), and HTTP/1.1 only.

hypercorn has none of these. Its `read_timeout` is per read (a client trickling a byte
every 9 s never meets a 10 s one) and also runs while the client rightly waits for our
answer (a slow answer would be cut); its sends are shielded without a bound (a client that
never reads held its connection, and the stop, for ever). So the read deadline here starts
with a request's first byte and ends when its body is complete; an idle keep-alive
connection is hypercorn's keep-alive timeout's; a client waiting for its answer owes
nothing; and each send of an answer has SEND_LIMIT, one second once the service stops.

Built on hypercorn's own connection class (its version is pinned in pyproject): the one
place that sees both the socket and the HTTP/1.1 parser's state, and the one module of
ours that overrides or reads hypercorn's private methods and attributes. `check_hypercorn`
refuses, at start, a hypercorn other than the one this was written for.
"""

from __future__ import annotations

import json
import logging
import math
import resource
import select
import socket
from collections import Counter
from importlib import metadata
from collections.abc import Callable

import h11
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.config import Sockets
from hypercorn.events import Closed, Event, RawData
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio import run as hypercorn_run
from hypercorn.trio.tcp_server import MAX_RECV, TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import AppWrapper, LifespanState

from ...budgets.subjects import budget_subject
from ...domain.errors import ApiError
from .idle import IdleTimer
from .sends import SEND_LIMIT, SendBounds

log = logging.getLogger("connectapi.http")

# A client has this long to send a request's head and body, from its first byte.
REQUEST_READ_LIMIT = 10.0
MAX_CONNECTIONS = 1000
# File descriptors kept for everything but client connections: the pool, webhook and SMTP
# sockets, the embedded server's pipes, log files.
RESERVED_FILES = 200
# After our last answer on a connection, what the client still sends is read (and dropped)
# this long, up to LINGER_BYTES, before the socket is closed: closing on unread bytes makes
# the kernel reset the connection, and the client may lose the answer (and its Retry-After).
LINGER_SECONDS = 1.0
LINGER_BYTES = 65536
_FULL = ApiError("SERVICE_UNAVAILABLE", "too many connections; retry later", retry_after_seconds=1)


class ServingConfig(HypercornConfig):
    max_connections: int = MAX_CONNECTIONS
    request_read_limit: float = REQUEST_READ_LIMIT
    send_limit: float = SEND_LIMIT
    # Once stopping, a keep-alive connection waiting for its next request is kept this long
    # more (0: closed at once, hypercorn's way). For a worker sharing its listening socket
    # with others: a client sending its next request just then is answered (with
    # `Connection: close`) instead of meeting a closed connection, and reconnects to one of
    # the others. A connection whose answer was begun before the stop (so it does not say
    # `Connection: close`) is kept the same way instead of closed after it.
    idle_drain: float = 0.0
    # A socket bound before the service started (server.bound_socket), served as it is.
    bound: socket.socket | None = None

    def __init__(self) -> None:
        super().__init__()
        self.open_connections = 0
        self.open_by_client: Counter[str] = Counter()
        # A trusted proxy carries many clients' connections: it is not held to one client's cap.
        self.is_proxy: Callable[[str], bool] = lambda peer: False
        # Every send of an answer served with this configuration: the socket's here, the
        # ASGI layer's in server.py.
        self.sends = SendBounds()

    def create_sockets(self) -> Sockets:
        if self.bound is not None:
            return Sockets(secure_sockets=[], insecure_sockets=[self.bound], quic_sockets=[])
        return super().create_sockets()

    @property
    def max_per_client(self) -> int:
        return max(10, self.max_connections // 10)

    def stop(self) -> None:
        """From now on each send has a second left: a client that does not read cannot hold
        the stop up."""
        self.sends.stop()


def connection_cap(wanted: int) -> int:
    """Raise the soft limit on open files to the hard one, and keep the cap under it with
    room for everything else (a cap near the usual 1024 would leave a flood of connections
    to starve the database pool and the webhook sockets)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    room = soft - RESERVED_FILES if soft != resource.RLIM_INFINITY else wanted
    if wanted > room:
        log.warning("CONNECTAPI_MAX_CONNECTIONS %d is more than the open-file limit allows; using %d",
                    wanted, max(room, 10))
    return min(wanted, max(room, 10))


class _KeptOpenContext(WorkerContext):
    """hypercorn's worker context as a draining worker's HTTP/1.1 protocol sees it: never
    terminated. hypercorn closes a connection after its answer once the server is
    terminated; an answer begun before the stop does not say `Connection: close`, and a
    client that sends its next request before our close reaches it (a few ms when the
    machine is busy) met "Server disconnected without sending a response". Seeing no
    termination, the protocol keeps such a connection, and the idle drain closes it."""

    def __init__(self, context: WorkerContext) -> None:
        super().__init__(context.max_requests)
        self._context = context

    async def mark_request(self) -> None:
        await self._context.mark_request()  # hypercorn's count of requests is the server's


class GuardedConnection(TCPServer):
    """hypercorn's connection, guarded when served with a ServingConfig (the patch is
    process-wide; other servers in the process, such as the sandbox, are left as they were)."""

    def __init__(self, app: AppWrapper, config: HypercornConfig, context: WorkerContext, state: LifespanState,
                 stream: trio.SSLStream[trio.SocketStream]) -> None:
        super().__init__(app, config, context, state, stream)
        self._terminated = context.terminated
        if isinstance(config, ServingConfig):
            self.idle_task = IdleTimer()
            if config.idle_drain:
                self.context = _KeptOpenContext(context)

    async def run(self) -> None:
        config = self.config
        if not isinstance(config, ServingConfig):
            await super().run()
            return
        client = self._client_subject(config)
        if config.open_connections >= config.max_connections or (
                client is not None and config.open_by_client[client] >= config.max_per_client):
            await self._refuse_full()
            return
        config.open_connections += 1
        if client is not None:
            config.open_by_client[client] += 1
        try:
            await super().run()
        finally:
            config.open_connections -= 1
            if client is not None:
                config.open_by_client[client] -= 1
                if not config.open_by_client[client]:
                    del config.open_by_client[client]

    def _client_subject(self, config: ServingConfig) -> str | None:
        """Whose connection this is, for the per-client cap (None: a trusted proxy's)."""
        try:
            peer = str(self.stream.socket.getpeername()[0])
        except (AttributeError, OSError, IndexError):
            return None
        return None if config.is_proxy(peer) else budget_subject(peer)

    async def _refuse_full(self) -> None:
        body = json.dumps({"statuscode": _FULL.status, "message": _FULL.message, "data": _FULL.data()}).encode()
        head = (f"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
                f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n").encode()
        with trio.move_on_after(1):
            try:
                await self.stream.send_all(head + body)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        await self._lingering_close()

    async def protocol_send(self, event: Event) -> None:
        config = self.config
        if not isinstance(config, ServingConfig) or not isinstance(event, RawData):
            await super().protocol_send(event)
            return
        if not event.data:
            # The end of an answer of known length (h11 has nothing to write): a pass of
            # the lock and the socket would be two more turns of the scheduler for nothing.
            return
        # Taken without a turn of the scheduler when free, as it nearly always is (the send
        # itself is one); a sender already cancelled sends nothing, as with `acquire`.
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self.send_lock.acquire_nowait()
        except trio.WouldBlock:
            await self.send_lock.acquire()
        try:
            # Shielded as hypercorn's own send is (the app's cancellation must not cut an
            # answer in half), but bounded.
            with config.sends.bounded(config.send_limit) as sending:
                try:
                    await self.stream.send_all(event.data)
                    return
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
        finally:
            self.send_lock.release()
        # The client went away, or does not read: the connection is over. The read loop may
        # be parked until this answer is out (a pipelined request behind it): ended too.
        if sending.cancelled_caught:
            await self.stream.aclose()
        self._given_up = True
        await self.protocol.handle(Closed())
        reading = getattr(self, "_reading_scope", None)
        if reading is not None:
            reading.cancel()
        await self.idle_task.stop()

    async def _idle_timeout(self) -> None:
        # A connection given up on is not kept for its keep-alive time (the protocol restarts
        # this timer when the aborted answer ends).
        if getattr(self, "_given_up", False):
            return
        config = self.config
        if not isinstance(config, ServingConfig):
            await super()._idle_timeout()
            return
        with trio.move_on_after(config.keep_alive_timeout):
            await self._terminated.wait()
        if self._terminated.is_set():
            # A request arriving meanwhile cancels this task (the connection is no longer
            # idle); it is answered with `Connection: close`, and the connection ends after it.
            await trio.sleep(config.idle_drain)
        elif self._bytes_waiting() or self._request_in_hand():
            # A request came in as the keep-alive time ran out, and the read loop has not got
            # to it yet, or not as far as stopping this timer (a busy loop runs a due timer and
            # a ready read in either order).
            # Closed now, the client would get no answer to a request it sent on a connection
            # it rightly took to be open (a client keeping connections as long as we do, as
            # httpx's default does, meets this under load). The request, once begun, stops
            # this task; bytes that never make one are given a request's read time, or until
            # the service stops.
            with trio.move_on_after(config.request_read_limit):
                await self._terminated.wait()
        with trio.CancelScope(shield=True):
            await self._initiate_server_close()

    def _request_in_hand(self) -> bool:
        """Whether the read loop has read bytes of a next request (parsed or not)."""
        protocol = self.protocol.protocol
        if not isinstance(protocol, H11Protocol):
            return False
        connection = protocol.connection
        return connection.their_state is not h11.IDLE or bool(connection.trailing_data[0])

    def _bytes_waiting(self) -> bool:
        """Whether the client has sent something the read loop has not read yet (or closed
        the connection, or reset it: the read loop hears that and ends the connection)."""
        try:
            waiting = select.poll()
            waiting.register(self.stream.socket.fileno(), select.POLLIN)
            return bool(waiting.poll(0))
        except (OSError, ValueError, AttributeError):
            return False

    async def _read_data(self) -> None:
        config = self.config
        if not isinstance(config, ServingConfig):
            await super()._read_data()
            return
        self._reading = trio.Event()
        try:
            with trio.CancelScope() as self._reading_scope:
                await self._read_until_done(config)
        finally:
            self._reading.set()
            if isinstance(self.idle_task, IdleTimer):
                self.idle_task.end()

    async def _read_until_done(self, config: ServingConfig) -> None:
        deadline = math.inf
        while True:
            if not isinstance(self.protocol.protocol, H11Protocol):
                # An h2c upgrade or an HTTP/2 preface: we serve HTTP/1.1 only (one connection
                # would otherwise carry a hundred streams past the cap, and none of the limits
                # here would hold).
                await self.stream.aclose()
                break
            if self._client_owes_bytes():
                if deadline == math.inf:
                    deadline = trio.current_time() + config.request_read_limit
            else:
                deadline = math.inf
            try:
                with trio.fail_at(deadline):
                    data = await self.stream.receive_some(MAX_RECV)
            except trio.TooSlowError:
                await self.stream.aclose()  # no lingering for a client this slow
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

    async def _close(self) -> None:
        if isinstance(self.config, ServingConfig):
            await self._lingering_close()
        else:
            await super()._close()

    async def _lingering_close(self) -> None:
        reading = getattr(self, "_reading", None)
        with trio.CancelScope(shield=True, deadline=trio.current_time() + LINGER_SECONDS):
            try:
                await self.stream.send_eof()
                if reading is not None and not reading.is_set():
                    # The read loop is still reading (and dropping) what comes: let it.
                    await reading.wait()
                else:
                    read = 0
                    while read < LINGER_BYTES:
                        data = await self.stream.receive_some(MAX_RECV)
                        if not data:
                            break
                        read += len(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, trio.BusyResourceError, AttributeError):
                pass
        await self.stream.aclose()

    def _client_owes_bytes(self) -> bool:
        """Whether a request has begun and not yet fully arrived."""
        protocol = self.protocol.protocol
        assert isinstance(protocol, H11Protocol)
        connection = protocol.connection
        state = connection.their_state
        if state is h11.IDLE:
            return bool(connection.trailing_data[0])
        return state is h11.SEND_BODY


# The hypercorn GuardedConnection was written against, and what of its insides it relies
# on: TCPServer's methods it overrides or calls, and the attributes it reads. Checked before
# serving (`check_hypercorn`), so that another release fails at start, said, and never
# serves with a guard that quietly no longer guards.
WRITTEN_FOR = "0.18"
_TCP_SERVER_METHODS = ("run", "protocol_send", "_idle_timeout", "_read_data", "_close", "_initiate_server_close")
_WORKER_CONTEXT_ATTRIBUTES = ("mark_request", "terminated")


def check_hypercorn(version: str | None = None) -> None:
    """Refuse to serve over a hypercorn other than WRITTEN_FOR, or one lacking what the
    guard overrides (RuntimeError, naming what differs)."""
    if version is None:
        try:
            version = metadata.version("hypercorn")
        except metadata.PackageNotFoundError:  # a build without the metadata: the shape is checked below
            version = WRITTEN_FOR
    if version != WRITTEN_FOR and not version.startswith(WRITTEN_FOR + "."):
        raise RuntimeError(f"hypercorn {version} is installed; connectapi's connection guard was written for "
                           f"hypercorn {WRITTEN_FOR}.x (http/serving/connections.py): install the pinned version")
    context = WorkerContext(None)
    missing = ([f"TCPServer.{name}" for name in _TCP_SERVER_METHODS if not hasattr(TCPServer, name)]
               + [f"WorkerContext.{name}" for name in _WORKER_CONTEXT_ATTRIBUTES if not hasattr(context, name)])
    if not hasattr(hypercorn_run, "TCPServer"):
        missing.append("hypercorn.trio.run.TCPServer")
    if missing:
        raise RuntimeError(f"hypercorn {version} lacks what connectapi's connection guard relies on: "
                           f"{', '.join(missing)} (http/serving/connections.py)")


def serve_guarded() -> None:
    """Make hypercorn's trio worker open each connection as a GuardedConnection, after
    checking it is the hypercorn the guard was written for."""
    check_hypercorn()
    hypercorn_run.TCPServer = GuardedConnection  # type: ignore[attr-defined]
