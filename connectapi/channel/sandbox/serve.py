"""Serving the sandbox channel manager with hypercorn, in-process or alone (`connectapi sandbox-cm`)."""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Callable

import httpx
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve

from ...engine import Clock, SystemClock
from .server import sandbox_asgi_app
from .state import Limits, SandboxState


async def serve_sandbox(state: SandboxState, api_key: str, clock: Clock, host: str, port: int,
                        shutdown: trio.Event,
                        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve until `shutdown` is set; hands back the base URL once listening."""
    config = HypercornConfig()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None

    async def started(task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
        await serve(sandbox_asgi_app(state, api_key, clock), config,
                    shutdown_trigger=shutdown.wait, task_status=task_status)

    async with trio.open_nursery() as nursery:
        binds = await nursery.start(started)
        task_status.started(binds[0])


log = logging.getLogger("connectapi.sandbox")
NOTIFY_SECRET_HEADER = "X-Notify-Secret"


def notifier(url: str, secret: str, client: httpx.AsyncClient) -> Callable[[dict[str, str]], None]:
    """The channel manager's booking webhook: {booking_id, property_id, revision_id}, sent in
    the background, unsigned but carrying a shared secret header (REFERENCE.md)."""
    async def send(payload: dict[str, str]) -> None:
        try:
            answer = await client.post(url, json=payload, headers={NOTIFY_SECRET_HEADER: secret})
            if answer.status_code >= 300:
                log.warning("booking notification answered %d", answer.status_code)
        except httpx.HTTPError as exc:
            log.warning("booking notification failed: %s", type(exc).__name__)

    def notify(payload: dict[str, str]) -> None:
        trio.lowlevel.spawn_system_task(send, payload)

    return notify


def run_standalone(host: str, port: int, api_key: str, limits: Limits, notify_url: str | None = None,
                   notify_secret: str | None = None, call_seconds: float = 0.0) -> None:
    async def main() -> None:
        stop = trio.Event()
        state = SandboxState(limits, call_seconds)
        async with trio.open_nursery() as nursery, httpx.AsyncClient(timeout=10) as client:
            if notify_url and notify_secret:
                state.bookings.listeners.append(notifier(notify_url, notify_secret, client))
            url = await nursery.start(serve_sandbox, state, api_key, SystemClock(), host, port, stop)
            print(f"sandbox channel manager listening on {url}", file=sys.stderr, flush=True)
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    break
            stop.set()

    trio.run(main)
