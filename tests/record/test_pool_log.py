"""asyncpg's pool, once a pool is open, says its tries to reconnect in a line, not a traceback each."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from connectapi import logs
from connectapi.storage.database import connect_failures_in_a_line, open_database


async def test_the_pools_reconnect_tries_are_one_line_each(monkeypatch: pytest.MonkeyPatch, fresh_dsn: str) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    root = logging.getLogger()
    kept_handlers, kept_level = root.handlers[:], root.level
    pool = logging.getLogger("asyncpg.pool")
    try:
        logs.configure(json_lines=True)
        async with open_database(fresh_dsn, min_size=1, max_size=1):
            pass  # opening a pool puts the filter on asyncpg's pool logger
        try:
            raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)")
        except ConnectionRefusedError:
            pool.warning("Failed to restore the pool connection floor; retrying", exc_info=True)
            logging.getLogger("connectapi.other").warning("ours keeps its traceback", exc_info=True)
        try:
            raise KeyError("a bug in a connection's set-up")
        except KeyError:
            pool.warning("Failed to restore the pool connection floor; retrying", exc_info=True)
    finally:
        pool.removeFilter(connect_failures_in_a_line)
        root.handlers[:], root.level = kept_handlers, kept_level
    lines = [json.loads(line) for line in err.getvalue().splitlines()]
    assert len(lines) == 3, lines
    assert lines[0]["message"] == ("Failed to restore the pool connection floor; retrying: ConnectionRefusedError: "
                                   "[Errno 111] Connect call failed ('127.0.0.1', 5432)")
    assert "exc_info" not in lines[0]
    assert "Traceback" in lines[1]["exc_info"]
    assert "KeyError" in lines[2]["exc_info"]  # not a connection that failed: kept whole
