"""The admin routes for properties, catalog and keys (ADMIN-API.md)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from .harness import ADMIN, API, CASA_AZUL, Harness


async def count(api: Harness, table: str) -> int:
    return int(await api.ctx.db.fetchval(f"SELECT count(*) FROM {table}"))


async def test_operator_token_is_required(api: Harness) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "test-operator-token"}):
        answer = await api.call("POST", f"{ADMIN}/properties", body=CASA_AZUL, headers=headers)
        assert (answer.status, answer.code) == (401, "ADMIN_TOKEN_INVALID")
    assert await count(api, "properties") == 0


async def test_create_property_returns_ids_and_seeds_a_year_of_availability(api: Harness) -> None:
    prop = await api.create_property()
    assert [r["name"] for r in prop["roomTypes"]] == ["Double", "Suite"]
    assert prop["ratePlans"][0] == {
        "id": prop["ratePlans"][0]["id"], "roomTypeId": prop["roomTypes"][0]["id"], "name": "Flexible",
        "mealPlan": "CP", "minRate": 40, "maxRate": 900, "sellMode": "perRoom", "occupancies": [2],
    }
    rows = await api.ctx.db.fetch(
        """SELECT room_type_id, min(night) AS first, max(night) AS last, count(*) AS nights,
                  bool_and(version = pushed_version) AS in_sync, min(available) AS lo, max(available) AS hi
           FROM availability_cells GROUP BY room_type_id ORDER BY room_type_id"""
    )
    today = date(2026, 11, 22)  # 10:00 UTC is 10:00 in Lisbon
    assert [(r["first"], r["last"], r["nights"], r["in_sync"], r["lo"], r["hi"]) for r in rows] == [
        (today, today + timedelta(days=365), 366, True, 8, 8),
        (today, today + timedelta(days=365), 366, True, 2, 2),
    ]
    fetched = await api.admin("GET", f"/properties/{prop['id']}")
    assert fetched.data == prop


@pytest.mark.parametrize(("change", "path"), [
    ({"timezone": "Mars/Olympus"}, "timezone"),
    ({"currency": "XYZ"}, "currency"),
    ({"currency": "eur"}, "currency"),
    ({"status": "closed"}, "status"),
    ({"unknown": True}, "unknown"),
    ({"products": {"channelManager": True}}, "products.pms"),
    ({"roomTypes": [{"name": "X", "maxAdults": "2", "rooms": 1}]}, "roomTypes[0].maxAdults"),
    ({"ratePlans": [{"roomType": 5, "name": "P", "mealPlan": "CP"}]}, "$"),
    ({"ratePlans": [{"roomType": 0, "name": "P", "mealPlan": "XX"}]}, "ratePlans[0].mealPlan"),
    ({"ratePlans": [{"roomType": 0, "name": "P", "mealPlan": "CP", "sellMode": "perBed"}]}, "ratePlans[0].sellMode"),
    ({"ratePlans": [{"roomType": 0, "name": "P", "mealPlan": "CP", "minRate": 50, "maxRate": 40}]}, "ratePlans[0]"),
])
async def test_bad_property_bodies_write_nothing(api: Harness, change: dict[str, object], path: str) -> None:
    answer = await api.admin("POST", "/properties", {**CASA_AZUL, **change})
    assert (answer.status, answer.code) == (400, "VALIDATION"), answer.body
    assert path in [d["path"] for d in answer.data["details"]]
    assert await count(api, "properties") == 0 and await count(api, "availability_cells") == 0


async def test_patch_property(api: Harness) -> None:
    prop = await api.create_property()
    answer = await api.admin("PATCH", f"/properties/{prop['id']}", {"name": "Casa Verde", "bookingsPerDay": 900})
    assert answer.status == 200
    assert (answer.data["name"], answer.data["bookingsPerDay"], answer.data["currency"]) == ("Casa Verde", 900, "EUR")
    assert (await api.admin("PATCH", f"/properties/{prop['id']}", {"currency": "USD"})).code == "VALIDATION"
    assert (await api.admin("PATCH", "/properties/999999", {"name": "x"})).code == "PROPERTY_NOT_FOUND"
    assert (await api.admin("GET", "/properties/999999")).status == 404


async def test_add_room_type_and_rate_plan(api: Harness) -> None:
    prop = await api.create_property()
    other = await api.create_property(name="Other")
    room = await api.admin("POST", f"/properties/{prop['id']}/room-types", {"name": "Twin", "maxAdults": 2, "rooms": 3})
    assert room.status == 201 and room.data["maxOccupancy"] == 2
    nights = await api.ctx.db.fetchval("SELECT count(*) FROM availability_cells WHERE room_type_id = $1", room.data["id"])
    assert nights == 366
    plan = await api.admin("POST", f"/properties/{prop['id']}/rate-plans",
                           {"roomTypeId": room.data["id"], "name": "Twin RO", "mealPlan": "RO", "maxRate": 300})
    assert plan.status == 201 and plan.data["roomTypeId"] == room.data["id"]
    foreign = await api.admin("POST", f"/properties/{other['id']}/rate-plans",
                              {"roomTypeId": room.data["id"], "name": "Stolen", "mealPlan": "RO"})
    assert (foreign.status, foreign.code) == (400, "VALIDATION")
    catalog = await api.admin("GET", f"/properties/{prop['id']}")
    assert [r["name"] for r in catalog.data["roomTypes"]] == ["Double", "Suite", "Twin"]


async def test_key_is_shown_once_and_only_its_digest_is_stored(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"], ["ari:read"], allowlist=["2001:db8::/32", "203.0.113.9"])
    secret = made["key"]
    assert made["prefix"] == secret[:13] and made["allowlist"] == ["2001:db8::/32", "203.0.113.9"]
    listed = await api.admin("GET", f"/properties/{prop['id']}/keys")
    assert "key" not in listed.data[0] and secret not in str(listed.body)
    rows = await api.ctx.db.fetch("SELECT * FROM api_keys")
    stored = " ".join(str(v) for r in rows for v in dict(r).values())
    assert secret not in stored and secret[13:] not in stored


async def test_at_most_five_live_keys(api: Harness) -> None:
    prop = await api.create_property()
    keys = [await api.create_key(prop["id"]) for _ in range(5)]
    sixth = await api.admin("POST", f"/properties/{prop['id']}/keys", {"label": "six", "scopes": []})
    assert (sixth.status, sixth.code) == (409, "KEY_LIMIT_REACHED")
    await api.admin("POST", f"/keys/{keys[0]['id']}/revoke")
    assert (await api.admin("POST", f"/properties/{prop['id']}/keys", {"label": "six", "scopes": []})).status == 201
    # rotation keeps the count
    assert (await api.admin("POST", f"/keys/{keys[1]['id']}/rotate")).status == 201
    live = await api.ctx.db.fetchval("SELECT count(*) FROM api_keys WHERE revoked_at IS NULL")
    assert live == 5


@pytest.mark.parametrize(("body", "path"), [
    ({"label": "x", "scopes": ["bookings:payments"]}, "scopes"),
    ({"label": "x", "scopes": ["ari:read", "root"]}, "scopes"),
    ({"label": "x", "scopes": [], "allowlist": [f"10.0.0.{i}" for i in range(21)]}, "allowlist"),
    ({"label": "x", "scopes": [], "allowlist": ["10.0.0.256"]}, "allowlist"),
    ({"label": "x"}, "$"),
    ({"label": "x", "scopes": ["ari:read"], "legacy": True}, "$"),
    ({"label": "", "scopes": []}, "label"),
])
async def test_bad_key_bodies(api: Harness, body: dict[str, object], path: str) -> None:
    prop = await api.create_property()
    answer = await api.admin("POST", f"/properties/{prop['id']}/keys", body)
    assert (answer.status, answer.code) == (400, "VALIDATION"), answer.body
    assert path in [d["path"] for d in answer.data["details"]]
    assert await count(api, "api_keys") == 0


async def test_patch_allowlist_takes_effect_on_the_next_request(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"])
    assert (await api.call("GET", f"{API}/property", key=made["key"])).status == 200
    patched = await api.admin("PATCH", f"/keys/{made['id']}", {"allowlist": ["192.0.2.0/24"], "label": "fenced"})
    assert patched.data["label"] == "fenced"
    assert (await api.call("GET", f"{API}/property", key=made["key"])).code == "IP_NOT_ALLOWED"
    assert (await api.call("GET", f"{API}/property", key=made["key"], address="192.0.2.4")).status == 200


async def test_unknown_keys(api: Harness) -> None:
    assert (await api.admin("POST", "/keys/424242/rotate")).code == "KEY_NOT_FOUND"
    assert (await api.admin("POST", "/keys/424242/revoke")).code == "KEY_NOT_FOUND"
    assert (await api.admin("PATCH", "/keys/424242", {"label": "x"})).code == "KEY_NOT_FOUND"
    assert (await api.admin("POST", "/properties/424242/keys", {"label": "x", "scopes": []})).code == "PROPERTY_NOT_FOUND"


async def test_channel_mapping(api: Harness) -> None:
    prop = await api.create_property()
    other = await api.create_property(name="Other")
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    body = {"cmPropertyId": "cm-prop-1", "roomTypes": {str(room): "cm-rt-1"}, "ratePlans": {str(plan): "cm-rp-1"}}
    answer = await api.admin("PUT", f"/properties/{prop['id']}/channel-mapping", body)
    assert answer.status == 200 and answer.data == body
    row = await api.ctx.db.fetchrow(
        """SELECT p.cm_property_id, r.cm_id AS room_cm, q.cm_id AS plan_cm FROM properties p
           JOIN room_types r ON r.id = $2 JOIN rate_plans q ON q.id = $3 WHERE p.id = $1""",
        prop["id"], room, plan,
    )
    assert row is not None and tuple(row) == ("cm-prop-1", "cm-rt-1", "cm-rp-1")
    # ids of another property: refused, and the mapping is left as it was
    stolen = {"cmPropertyId": "cm-x", "roomTypes": {str(other["roomTypes"][0]["id"]): "cm-rt-9"}}
    refused = await api.admin("PUT", f"/properties/{prop['id']}/channel-mapping", stolen)
    assert (refused.status, refused.code) == (400, "VALIDATION")
    assert refused.data["details"] == [{"path": f"roomTypes.{other['roomTypes'][0]['id']}",
                                        "message": "not a room type of this property"}]
    assert await api.ctx.db.fetchval("SELECT cm_property_id FROM properties WHERE id = $1", prop["id"]) == "cm-prop-1"
    dupes = {"cmPropertyId": "cm-x", "roomTypes": {str(room): "same", str(prop["roomTypes"][1]["id"]): "same"}}
    assert (await api.admin("PUT", f"/properties/{prop['id']}/channel-mapping", dupes)).code == "VALIDATION"
    # channel-manager ids never reach an integrator
    key = (await api.create_key(prop["id"]))["key"]
    for path in ("/property", "/catalog"):
        assert "cm-" not in str((await api.call("GET", f"{API}{path}", key=key)).body)
