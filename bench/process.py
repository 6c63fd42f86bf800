"""Starting and stopping the service under load (bench/server.py) in a process of its own."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A port nothing listens on, chosen below the kernel's ephemeral range.

    `bind(0)` hands out a port from that range, where any outgoing connection (a service's
    own to PostgreSQL, a client's) may take it before the service binds it: the service
    then fails to start, now and then, for no fault of its own (a CI run lost a test so).
    """
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(200):
        port = random.randrange(10_000, ephemeral_low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:  # in use, or lingering after a test that used it
                continue
            return port
    raise RuntimeError(f"no free port in 10000–{ephemeral_low}")


@contextmanager
def bench_server(env: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
    """The server's ready line (port, key, dsn, property, rate plans) and its pid while it runs."""
    with bench_servers(env or {}) as (ready,):
        yield ready


@contextmanager
def bench_servers(*envs: dict[str, str]) -> Iterator[list[dict[str, Any]]]:
    """Servers started side by side (each its own record: their starts overlap), one per
    environment, as `bench_server` gives one."""
    servers: list[subprocess.Popen[str]] = []
    try:
        for env in envs:
            servers.append(subprocess.Popen([sys.executable, "-m", "bench.server", str(free_port())],
                                            stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[1],
                                            env={**os.environ, **env}))
        found = []
        for server in servers:
            assert server.stdout is not None
            found.append({**json.loads(server.stdout.readline()), "pid": server.pid})
        yield found
    finally:
        for server in servers:
            server.send_signal(signal.SIGINT)
        for server in servers:
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
