"""The hosts a DATABASE_URL names: `postgresql://user@a:5432,b:5432/db?...` (or the
libpq form `?host=a,b&port=5432,5433`), each as a URL of its own, so that the service can
ask every host which one is the primary now (storage.primary)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

DEFAULT_PORT = "5432"


def hosts_of(dsn: str) -> list[str]:
    """One URL per host of `dsn`, in its order, with everything else kept but the
    `target_session_attrs` (each URL names one host: the choice is made by asking them).
    A DSN of one host, or one that is not a URL, gives itself alone."""
    parts = urlsplit(dsn)
    if parts.scheme not in ("postgres", "postgresql"):
        return [dsn]
    query = parse_qsl(parts.query, keep_blank_values=True)
    user, _, hostlist = parts.netloc.rpartition("@")
    hosts = [h for h in hostlist.split(",") if h]
    from_query = [v for k, v in query if k == "host"]
    ports = [v for k, v in query if k == "port"]
    if from_query:  # the libpq form: each URL names its host and port the same way
        hosts = [h for value in from_query for h in value.split(",") if h]
        port_list = [p for value in ports for p in value.split(",")] or [DEFAULT_PORT]
        if len(port_list) == 1:
            port_list *= len(hosts)
        if len(hosts) < 2 or len(port_list) != len(hosts):
            return [dsn]
        rest = [(k, v) for k, v in query if k not in ("host", "port", "target_session_attrs")]
        return [_url(parts.scheme, parts.netloc, parts.path, [("host", h), ("port", p), *rest])
                for h, p in zip(hosts, port_list, strict=True)]
    if len(hosts) < 2:
        return [dsn]
    rest = [(k, v) for k, v in query if k not in ("target_session_attrs",)]
    return [_url(parts.scheme, f"{user}@{host}" if user else host, parts.path, rest) for host in hosts]


def _url(scheme: str, netloc: str, path: str, query: list[tuple[str, str]]) -> str:
    # By hand: urlunsplit drops the // of an empty netloc (postgresql:///db?host=...).
    return f"{scheme}://{netloc}{path}" + (f"?{urlencode(query)}" if query else "")
