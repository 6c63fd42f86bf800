"""Serving the app with hypercorn: stop accepting on a signal, finish what is in flight
within a bound, and close keep-alive connections instead of leaving them hanging."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve

# Requests in flight when the service is told to stop get this long to be answered.
HTTP_GRACE = 5.0
# A send to a client that does not read is given up after this, shielded or not.
SEND_LIMIT = 30.0

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def shielded_sends(app: ASGIApp) -> ASGIApp:
    """quart-trio cancels a request's nursery as soon as hypercorn says the stream is
    closed, and hypercorn says so from inside the last `send` of the answer. The rest of
    that send (restarting the keep-alive idle timer, closing the connection when stopping)
    then ran cancelled and never happened: idle connections were never timed out, and
    after a stop a request on one hung until the grace ran out and was dropped. Each send
    is shielded, with a bound."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        async def shielded(message: Message) -> None:
            with trio.CancelScope(shield=True, deadline=trio.current_time() + SEND_LIMIT):
                await send(message)

        await app(scope, receive, shielded if scope["type"] == "http" else send)

    return asgi


def hypercorn_config(bind: str) -> HypercornConfig:
    config = HypercornConfig()
    config.bind = [bind]
    config.accesslog = None
    config.graceful_timeout = HTTP_GRACE
    return config


async def serve_http(app: Any, config: HypercornConfig, stop: trio.Event,
                     task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve until `stop` is set, then for at most HTTP_GRACE more; hands back the binds."""
    await serve(shielded_sends(app), config, shutdown_trigger=stop.wait,  # type: ignore[arg-type]
                task_status=task_status, mode="asgi")
