"""Starting and stopping the service under load (bench/server.py) in a process of its own."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def bench_server(env: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
    """The server's ready line (port, key, dsn, property, rate plans) and its pid while it runs."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "bench.server", str(port)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).parents[1], env={**os.environ, **(env or {})})
    try:
        assert server.stdout is not None
        yield {**json.loads(server.stdout.readline()), "pid": server.pid}
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
