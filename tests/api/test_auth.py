"""Authentication and the gates before the budgets: 401, 403, 409 and their order."""

from __future__ import annotations

from datetime import datetime

import pytest

from .harness import API, Harness, after_janitor_rounds


async def test_no_key_is_401_invalid(api: Harness) -> None:
    answer = await api.call("GET", f"{API}/property")
    assert (answer.status, answer.code) == (401, "API_KEY_INVALID")
    assert answer.body["statuscode"] == 401 and answer.body["message"]


async def test_key_outside_the_bearer_header_is_ignored(api: Harness) -> None:
    _, key = await api.keyed_property()
    for where in ({"x-api-key": key}, {"user-api-key": key}, {"Authorization": f"Basic {key}"}):
        answer = await api.call("GET", f"{API}/property", headers=where)
        assert (answer.status, answer.code) == (401, "API_KEY_INVALID"), where
    answer = await api.call("GET", f"{API}/property?api_key={key}&key={key}")
    assert (answer.status, answer.code) == (401, "API_KEY_INVALID")


@pytest.mark.parametrize("bad", ["nope", "cak_live_short", "cak_live_" + "A" * 43])
async def test_malformed_or_unknown_key_is_401_invalid(api: Harness, bad: str) -> None:
    await api.keyed_property()
    answer = await api.call("GET", f"{API}/property", key=bad)
    assert (answer.status, answer.code) == (401, "API_KEY_INVALID")


async def test_revoked_key_is_401_revoked(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"])
    assert (await api.call("GET", f"{API}/property", key=made["key"])).status == 200
    assert (await api.admin("POST", f"/keys/{made['id']}/revoke")).status == 200
    answer = await api.call("GET", f"{API}/property", key=made["key"])
    assert (answer.status, answer.code) == (401, "API_KEY_REVOKED")


async def test_rotated_key_is_revoked_and_the_new_one_works(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"], ["ari:read", "bookings:read"], allowlist=["198.51.100.0/24"])
    rotated = await api.admin("POST", f"/keys/{made['id']}/rotate")
    assert rotated.status == 201
    assert rotated.data["key"] != made["key"]
    assert rotated.data["scopes"] == ["ari:read", "bookings:read"]
    assert rotated.data["allowlist"] == ["198.51.100.0/24"]
    old = await api.call("GET", f"{API}/property", key=made["key"])
    assert (old.status, old.code) == (401, "API_KEY_REVOKED")
    new = await api.call("GET", f"{API}/property", key=rotated.data["key"])
    assert new.status == 200 and new.data["scopes"] == ["ari:read", "bookings:read"]


async def test_key_of_another_property_sees_only_its_own(api: Harness) -> None:
    first, key_one = await api.keyed_property()
    second, key_two = await api.keyed_property(name="Other")
    assert (await api.call("GET", f"{API}/property", key=key_one)).data["id"] == first["id"]
    assert (await api.call("GET", f"{API}/property", key=key_two)).data["id"] == second["id"]


@pytest.mark.parametrize(("allow", "inside", "outside"), [
    (["203.0.113.0/24"], "203.0.113.200", "203.0.114.1"),
    (["198.51.100.7"], "198.51.100.7", "198.51.100.8"),
    (["2001:db8:aa::/48"], "2001:db8:aa:1::9", "2001:db8:ab::1"),
    (["2001:db8::5"], "2001:db8::5", "2001:db8::6"),
])
async def test_allowlist_families(api: Harness, allow: list[str], inside: str, outside: str) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"], allowlist=allow)
    assert (await api.call("GET", f"{API}/property", key=made["key"], address=inside)).status == 200
    answer = await api.call("GET", f"{API}/property", key=made["key"], address=outside)
    assert (answer.status, answer.code) == (403, "IP_NOT_ALLOWED")
    refusals = await api.admin("GET", f"/properties/{prop['id']}/allowlist-refusals")
    assert [(r["keyId"], r["address"]) for r in refusals.data] == [(made["id"], outside)]


async def test_allowlist_refusals_count_against_ip_auth(api: Harness) -> None:
    prop = await api.create_property()
    fenced = await api.create_key(prop["id"], allowlist=["203.0.113.0/24"])
    open_key = await api.create_key(prop["id"])
    for _ in range(20):
        assert (await api.call("GET", f"{API}/property", key=fenced["key"])).code == "IP_NOT_ALLOWED"
    answer = await api.call("GET", f"{API}/property", key=open_key["key"])
    assert (answer.status, answer.code, answer.data["scope"]) == (429, "RATE_LIMITED", "ip-auth")


@pytest.mark.parametrize("status", ["deleted", "demo"])
async def test_unavailable_property_is_409(api: Harness, status: str) -> None:
    prop, key = await api.keyed_property()
    assert (await api.admin("PATCH", f"/properties/{prop['id']}", {"status": status})).status == 200
    for path in ("/property", "/catalog", "/probe/ari"):
        answer = await api.call("GET", f"{API}{path}", key=key)
        assert (answer.status, answer.code) == (409, "PROPERTY_UNAVAILABLE"), path


async def test_products_gate_their_routes(api: Harness) -> None:
    prop, key = await api.keyed_property(["ari:read", "bookings:read"])
    assert (await api.call("GET", f"{API}/probe/ari", key=key)).status == 200
    assert (await api.call("GET", f"{API}/probe/bookings", key=key)).status == 200
    await api.admin("PATCH", f"/properties/{prop['id']}", {"products": {"channelManager": False, "pms": True}})
    answer = await api.call("GET", f"{API}/probe/ari", key=key)
    assert (answer.status, answer.code) == (409, "CHANNEL_MANAGER_DISABLED")
    await api.admin("PATCH", f"/properties/{prop['id']}", {"products": {"channelManager": True, "pms": False}})
    answer = await api.call("GET", f"{API}/probe/bookings", key=key)
    assert (answer.status, answer.code) == (409, "PMS_NOT_AVAILABLE")
    assert (await api.call("GET", f"{API}/probe/ari", key=key)).status == 200
    # /property needs no product
    assert (await api.call("GET", f"{API}/property", key=key)).data["products"] == {"channelManager": True, "pms": False}


async def test_missing_scope_is_403_with_needed_and_held(api: Harness) -> None:
    _, key = await api.keyed_property(["ari:read"])
    answer = await api.call("GET", f"{API}/probe/bookings", key=key)
    assert (answer.status, answer.code) == (403, "SCOPE_MISSING")
    assert answer.data["details"] == {"needed": "bookings:read", "held": ["ari:read"]}
    answer = await api.call("PUT", f"{API}/probe/ari", key=key, body={"updates": []})
    assert answer.data["details"] == {"needed": "ari:write", "held": ["ari:read"]}


async def test_scope_edit_takes_effect_on_the_next_request(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"], ["ari:read"])
    assert (await api.call("GET", f"{API}/probe/bookings", key=made["key"])).status == 403
    await api.admin("PATCH", f"/keys/{made['id']}", {"scopes": ["ari:read", "bookings:read"]})
    assert (await api.call("GET", f"{API}/probe/bookings", key=made["key"])).status == 200


async def test_legacy_key_holds_the_two_ari_scopes(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"], legacy=True)
    answer = await api.call("GET", f"{API}/property", key=made["key"])
    assert answer.data["scopes"] == ["ari:read", "ari:write"]


async def test_property_body(api: Harness) -> None:
    prop, key = await api.keyed_property(["ari:read", "bookings:write", "bookings:payments"])
    answer = await api.call("GET", f"{API}/property", key=key)
    assert answer.data == {
        "id": prop["id"], "mode": api.key_mode, "name": "Casa Azul", "timezone": "Europe/Lisbon", "currency": "EUR",
        "scopes": ["ari:read", "bookings:write", "bookings:payments"],
        "products": {"channelManager": True, "pms": True}, "bookingsPerMinute": 20,
    }


async def test_catalog_body(api: Harness) -> None:
    prop, key = await api.keyed_property([])
    answer = await api.call("GET", f"{API}/catalog", key=key)
    rooms = prop["roomTypes"]
    plans = prop["ratePlans"]
    assert answer.data == {
        "roomTypes": [
            {"id": rooms[0]["id"], "name": "Double", "maxAdults": 2, "maxOccupancy": 3, "rooms": 8},
            {"id": rooms[1]["id"], "name": "Suite", "maxAdults": 4, "maxOccupancy": 4, "rooms": 2},
        ],
        "ratePlans": [
            {"id": plans[0]["id"], "roomTypeId": rooms[0]["id"], "name": "Flexible", "mealPlan": "CP",
             "sellMode": "perRoom", "occupancies": [2]},
            {"id": plans[1]["id"], "roomTypeId": rooms[1]["id"], "name": "Suite BB", "mealPlan": "BB",
             "sellMode": "perRoom", "occupancies": [4]},
        ],
    }


async def test_last_used_is_recorded(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"])
    assert made["lastUsedAt"] is None
    used_at = api.ctx.clock.now()  # the mock clock stands still: the request's time
    await api.call("GET", f"{API}/property", key=made["key"])
    listed = await api.admin("GET", f"/properties/{prop['id']}/keys")
    assert datetime.fromisoformat(listed.data[0]["lastUsedAt"]) == used_at, listed.data[0]


async def test_allowlist_refusals_are_purged_after_30_days(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"], allowlist=["203.0.113.5"])
    refused = await api.call("GET", f"{API}/property", key=made["key"], address="198.51.100.7")
    assert refused.code == "IP_NOT_ALLOWED"
    api.advance(29 * 24 * 3600)
    await api.call("GET", f"{API}/property", key=made["key"], address="198.51.100.8")
    shown = await api.admin("GET", f"/properties/{prop['id']}/allowlist-refusals")
    assert {r["address"] for r in shown.data} == {"198.51.100.7", "198.51.100.8"}, shown.body
    api.advance(2 * 24 * 3600)  # the first is 31 days old; the janitor's round comes hourly

    async def purged() -> bool:
        shown = await api.admin("GET", f"/properties/{prop['id']}/allowlist-refusals")
        return {r["address"] for r in shown.data} == {"198.51.100.8"}

    await after_janitor_rounds(api, purged)
