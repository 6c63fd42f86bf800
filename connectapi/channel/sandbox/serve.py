"""Serving the sandbox channel manager with hypercorn, in-process or alone (`connectapi sandbox-cm`)."""

from __future__ import annotations

import signal
import sys

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve

from ...engine import Clock, SystemClock
from .server import create_sandbox_app
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
        await serve(create_sandbox_app(state, api_key, clock), config,
                    shutdown_trigger=shutdown.wait, task_status=task_status)

    async with trio.open_nursery() as nursery:
        binds = await nursery.start(started)
        task_status.started(binds[0])


def run_standalone(host: str, port: int, api_key: str, limits: Limits) -> None:
    async def main() -> None:
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            url = await nursery.start(serve_sandbox, SandboxState(limits), api_key, SystemClock(), host, port, stop)
            print(f"sandbox channel manager listening on {url}", file=sys.stderr, flush=True)
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    break
            stop.set()

    trio.run(main)
