"""Serving the app with hypercorn: stop accepting on a signal, finish what is in flight
within a bound, and close keep-alive connections instead of leaving them hanging."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import trio
from hypercorn.trio import serve
from hypercorn.utils import repr_socket_addr

from ...config import ConfigError
from .connections import MAX_CONNECTIONS, REQUEST_READ_LIMIT, ServingConfig, serve_guarded
from .sends import SEND_LIMIT, SendBounds

# Requests in flight when the service is told to stop get this long to be answered.
HTTP_GRACE = 5.0

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ShieldedSends:
    """quart-trio cancels a request's nursery as soon as hypercorn says the stream is
    closed, and hypercorn says so from inside the last `send` of the answer. The rest of
    that send (restarting the keep-alive idle timer, closing the connection when stopping)
    then ran cancelled and never happened: idle connections were never timed out, and
    after a stop a request on one hung until the grace ran out and was dropped. Each send
    is shielded, with a bound (sends.py: SEND_LIMIT, a second once stopping)."""

    def __init__(self, app: ASGIApp, sends: SendBounds) -> None:
        self._app = app
        self._sends = sends

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # We serve no WebSocket: refused (hypercorn answers 403) before the app, whose
            # error handlers expect an HTTP request (an upgrade was a 500 and a traceback).
            await receive()
            await send({"type": "websocket.close", "code": 1008})
            return
        async def shielded(message: Message) -> None:
            with self._sends.bounded(SEND_LIMIT):
                await send(message)

        await self._app(scope, receive, shielded if scope["type"] == "http" else send)


def hypercorn_config(bind: str | socket.socket, *, max_connections: int = MAX_CONNECTIONS,
                     request_read_limit: float = REQUEST_READ_LIMIT, send_limit: float = SEND_LIMIT,
                     is_proxy: Callable[[str], bool] | None = None, idle_drain: float = 0.0) -> ServingConfig:
    """`bind` is `host:port`, `fd://N` for a socket a worker inherited, or a socket this
    process bound (`bound_socket`), served as it is: hypercorn closes it once it stops
    serving, so that from then on new connections are refused."""
    config = ServingConfig()
    if isinstance(bind, socket.socket):
        config.bound = bind
        bind = socket_url(bind)
    config.bind = [bind]
    config.accesslog = None
    config.graceful_timeout = HTTP_GRACE
    config.max_connections = max_connections
    config.request_read_limit = request_read_limit
    config.send_limit = send_limit
    config.idle_drain = idle_drain
    if is_proxy is not None:
        config.is_proxy = is_proxy
    return config


def bound_socket(bind: str) -> socket.socket:
    """`host:port` bound once, as hypercorn itself would bind it (same options), before
    anything else starts: an address in use (another service, or this one started twice)
    is a one-line refusal, not a traceback after the record has started. Not listening yet:
    whoever serves it listens (hypercorn, here or in each worker), so until then a
    connection is refused, not queued unanswered while the record starts and migrates."""
    config = hypercorn_config(bind)
    try:
        return config.create_sockets().insecure_sockets[0]
    except OSError as exc:
        raise ConfigError(f"cannot listen on {bind}: {exc.strerror or exc}") from None


def socket_url(sock: socket.socket) -> str:
    """The address a listening socket serves, written as hypercorn announces its binds."""
    return f"http://{repr_socket_addr(sock.family, sock.getsockname())}"


async def serve_http(app: Any, config: ServingConfig, stop: trio.Event,
                     task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve until `stop` is set, then for at most HTTP_GRACE more; hands back the binds."""
    serve_guarded()
    shielded = ShieldedSends(app, config.sends)

    async def stopped() -> None:
        await stop.wait()
        config.stop()  # every send, the ASGI layer's and the socket's, has a second left

    async with trio.open_nursery() as nursery:
        nursery.start_soon(stopped)
        await serve(shielded, config, shutdown_trigger=stop.wait,  # type: ignore[arg-type]
                    task_status=task_status, mode="asgi")
        nursery.cancel_scope.cancel()
