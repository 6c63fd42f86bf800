"""Upgrade: a data directory written by the previous released layout of the record is served
by the current code, which migrates it and answers its data (issue 18).

The previous release is the record as of issue 18's start: migrations 0001 to 0019. Its
data is written here in SQL shaped like that layout (not through today's storage code,
which may expect a newer one), and `connectapi serve` is started on it.
"""

from __future__ import annotations

import signal
from datetime import date, timedelta
from pathlib import Path

import httpx
import trio
import trio_asyncio

from connectapi.domain.api_keys import digest, display_prefix
from connectapi.service import EMBEDDED_DATABASE
from connectapi.storage.database import open_database
from connectapi.storage.embedded import EmbeddedPostgres, ensure_database
from connectapi.storage.migrations import bundled_migrations, migrate

from .test_backup_restore import opened
from .test_serve_process import Served, free_port

PREVIOUS_RELEASE = 19  # the last migration of the released layout
TOKEN = "upgrade-operator-token-of-32-characters"
KEY = "cak_live_" + ("old-release-key-" * 3)[:43]
API = "/api/v1/connect-api/v1"
FIRST = date.today() + timedelta(days=5)

# The 0019 layout: a property with its catalog, 30 nights of availability, three nights of
# rates (dirty: written, not yet pushed), a key, a booking with its room, a webhook endpoint.
OLD_RECORD = """
INSERT INTO properties (name, timezone, currency, channel_manager, pms, pms_entitled, owner_email)
    VALUES ('Old Inn', 'Europe/Lisbon', 'EUR', true, true, true, 'owner@old-inn.example');
INSERT INTO room_types (property_id, name, max_adults, max_occupancy, rooms) VALUES (1, 'Double', 2, 3, 6);
INSERT INTO rate_plans (property_id, room_type_id, name, meal_plan, min_rate, max_rate)
    VALUES (1, 1, 'Flexible', 'RO', 40, 600);
INSERT INTO availability_cells (property_id, room_type_id, night, available, version, pushed_version)
    SELECT 1, 1, d::date, 5, 1, 1 FROM generate_series(current_date, current_date + 29, interval '1 day') d;
INSERT INTO rate_cells (property_id, rate_plan_id, night, rate_minor, version, pushed_version)
    SELECT 1, 1, d::date, 12300, nextval('ari_versions'), 0
    FROM generate_series('{first}'::date, '{first}'::date + 2, interval '1 day') d;
INSERT INTO api_keys (property_id, label, digest, prefix, scopes)
    VALUES (1, 'old pms', decode('{digest}', 'hex'), '{prefix}',
            ARRAY['ari:read', 'ari:write', 'bookings:read', 'bookings:write']);
INSERT INTO guests (property_id, phone, name, created_at) VALUES (1, '+351912345678', 'Ana Silva', now());
INSERT INTO bookings (id, property_id, source, key_id, reference, external_reference, status, check_in, check_out,
                      currency, guest_id, guest_name, guest_phone, total_minor, created_at)
    VALUES (nextval('booking_ids'), 1, 'api', 1, 'PMS-1-000001', 'OLD-1', 'UPCOMING', '{first}', '{first}'::date + 2,
            'EUR', 1, 'Ana Silva', '+351912345678', 24100, now());
INSERT INTO booking_rooms (booking_id, position, room_type_id, rate_plan_id, meal_plan, adults, children,
                           nightly_minor, status)
    VALUES (1, 0, 1, 1, 'RO', 2, 0, 12050, 'UPCOMING');
INSERT INTO webhook_endpoints (property_id, url, status, secret, created_at)
    VALUES (1, 'https://hooks.old-inn.example/connect', 'active', 'whsec_b2xkLXJlbGVhc2Utc2VjcmV0LTAwMDE=', now());
"""


def old_record(data_dir: Path) -> None:
    """A record with the previous release's migrations alone, and data in its layout."""
    embedded = EmbeddedPostgres(data_dir)
    server = embedded.start()

    async def build() -> None:
        async with trio_asyncio.open_loop():
            dsn = await ensure_database(server, EMBEDDED_DATABASE)
            async with open_database(dsn, min_size=1, max_size=1) as db:
                assert await migrate(db, through=PREVIOUS_RELEASE) == list(range(1, PREVIOUS_RELEASE + 1))
                seed = OLD_RECORD.format(first=FIRST, digest=digest(KEY).hex(), prefix=display_prefix(KEY))
                await db.run(lambda conn: conn.execute(seed))

    try:
        trio.run(build)
    finally:
        embedded.stop()


def test_the_previous_release_record_is_served(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    old_record(data_dir)
    served = Served(data_dir, free_port(), {"CONNECTAPI_ADMIN_TOKEN": TOKEN})
    try:
        served.wait_for("listening on")
        api = httpx.Client(base_url=f"{served.url}{API}", headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
        span = {"from": str(FIRST), "to": str(FIRST + timedelta(days=2))}
        rates = api.get("/rates", params=span)
        assert rates.status_code == 200, rates.text
        assert [(n["date"], n["rateMinor"]) for n in rates.json()["data"]["ratePlans"][0]["nights"]] == [
            (str(FIRST + timedelta(days=n)), 12300) for n in range(3)]
        rooms = api.get("/availability", params=span).json()["data"]["roomTypes"][0]["nights"]
        assert [n["available"] for n in rooms] == [5, 5, 5]
        booking = api.get("/bookings/1")
        assert booking.status_code == 200, booking.text
        found = booking.json()["data"]
        assert (found["reference"], found["externalReference"], found["status"], found["totalAmount"]) == \
            ("PMS-1-000001", "OLD-1", "UPCOMING", "241.00")
        assert found["guest"]["name"] == "Ana Silva"
        admin = httpx.Client(base_url=f"{served.url}/api/v1/admin", headers={"Authorization": f"Bearer {TOKEN}"},
                             timeout=30)
        hooks = admin.get("/properties/1/webhooks").json()["data"]
        assert [(h["url"], h["status"]) for h in hooks] == [("https://hooks.old-inn.example/connect", "active")]
        keys = admin.get("/properties/1/keys").json()["data"]
        assert [(k["label"], k["prefix"]) for k in keys] == [("old pms", display_prefix(KEY))]
        # and it writes on the old record too
        wrote = api.put("/rates", json={"updates": [{"ratePlanId": 1, "dateFrom": str(FIRST), "dateTo": str(FIRST),
                                                     "rate": 130, "currency": "EUR"}]})
        assert wrote.status_code == 202, wrote.text
        # and books: its references go on above the old one's number, its id tells nothing
        # (migration 0030), and the old booking's room keeps its id
        booked = api.post("/bookings", json={
            "externalReference": "NEW-1", "checkIn": str(FIRST + timedelta(days=10)),
            "checkOut": str(FIRST + timedelta(days=11)), "currency": "EUR",
            "guest": {"name": "Rui Costa", "phone": "+351 913 000 111"},
            "rooms": [{"roomTypeId": 1, "ratePlanId": 1, "adults": 2, "nightlyRate": "120.00"}]})
        assert booked.status_code == 201, booked.text
        new = booked.json()["data"]
        assert new["reference"] == "PMS-1-000002" and 2**32 <= new["bookingId"] < 2**53
        assert 2**32 <= new["rooms"][0]["bookingRoomId"] < 2**53
        assert api.get("/bookings/1").json()["data"]["rooms"][0]["bookingRoomId"] == 1
    finally:
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(30) == 0
    with opened(data_dir) as record:
        applied = [r["version"] for r in record("SELECT version FROM schema_migrations ORDER BY version")]
    assert applied == [m.version for m in bundled_migrations()]  # the newer migrations applied at the start
