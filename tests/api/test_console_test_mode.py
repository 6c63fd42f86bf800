"""The console's mode switch (issue 29): with `?mode=test` every page of a property shows its
test record under a banner, and keys and endpoints made there are test ones; the live
pages show none of it."""

from __future__ import annotations

import re

from .console_visitor import owner_of
from .harness import API, Harness
from .test_console_keys import key_form, send

BANNER = 'class="test-banner"'
TEST_SECRET = re.compile(r'<code id="key-secret">(cak_test_[A-Za-z0-9_-]{43})</code>')


async def test_the_switch_shows_the_test_record_and_makes_test_keys_and_endpoints(api: Harness) -> None:
    prop = await api.create_property()
    base = f"/console/properties/{prop['id']}"
    visitor = await owner_of(api, prop)
    live_page = await visitor.get(f"{base}/keys")
    assert live_page.status == 200 and BANNER not in live_page.text and f'{base}/keys?mode=test"' in live_page.text
    test_page = await visitor.get(f"{base}/keys?mode=test")
    assert test_page.status == 200 and BANNER in test_page.text and "Back to live data" in test_page.text
    assert f'href="{base}/grid?mode=test"' in test_page.text  # the tabs stay in test mode
    made = await send(visitor, f"{base}/keys?mode=test", key_form(test_page.csrf(), "sandbox PMS", ["ari:read",
                                                                                                   "ari:write"]))
    assert made.status == 201, made.text[:2000]
    found = TEST_SECRET.search(made.text)
    assert found is not None
    key = found.group(1)
    answer = await api.call("GET", f"{API}/property", key=key)
    assert (answer.status, answer.data["mode"], answer.data["id"]) == (200, "test", prop["id"])
    # The test key is listed in test mode only.
    assert "sandbox PMS" in (await visitor.get(f"{base}/keys?mode=test")).text
    assert "sandbox PMS" not in (await visitor.get(f"{base}/keys")).text

    # A test write shows in the test grid, not in the live one.
    room = prop["roomTypes"][0]["id"]
    written = await api.call("PUT", f"{API}/availability", key=key, body={"updates": [
        {"roomTypeId": room, "dateFrom": "2026-11-24", "dateTo": "2026-11-24", "available": 1}]})
    assert written.status == 202, written.body
    grid = "/grid?from=2026-11-24&to=2026-11-24"
    test_grid = await visitor.get(f"{base}{grid}&mode=test")
    live_grid = await visitor.get(f"{base}{grid}")
    assert test_grid.status == live_grid.status == 200
    assert BANNER in test_grid.text and BANNER not in live_grid.text
    assert 'name="mode" value="test"' in test_grid.text  # the range form stays in test mode
    assert test_grid.text != live_grid.text

    # An endpoint registered in test mode is a test endpoint.
    hooks = await visitor.get(f"{base}/webhooks?mode=test")
    registered = await visitor.post(f"{base}/webhooks?mode=test", {"csrf": hooks.csrf(),
                                                                   "url": "https://hooks.example.com/test"})
    assert registered.status == 200, registered.text[:2000]
    listed = await api.admin("GET", f"/properties/{prop['id']}/webhooks")
    assert [(e["url"], e["mode"]) for e in listed.data] == [("https://hooks.example.com/test", "test")]
    assert "hooks.example.com/test" not in (await visitor.get(f"{base}/webhooks")).text


async def test_test_bookings_are_listed_in_test_mode_only(api: Harness) -> None:
    prop = await api.create_property()
    base = f"/console/properties/{prop['id']}"
    visitor = await owner_of(api, prop)
    test = await api.create_key(prop["id"], ["bookings:read", "bookings:write"], mode="test")
    made = await api.call("POST", f"{API}/bookings", key=str(test["key"]), body={
        "externalReference": "TEST-77", "checkIn": "2026-12-01", "checkOut": "2026-12-02", "currency": "EUR",
        "guest": {"name": "Ana Silva", "phone": "+351 912 345 678"},
        "rooms": [{"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"],
                   "adults": 2, "nightlyRate": "120.50"}]})
    assert made.status == 201, made.body
    reference = made.data["reference"]
    assert reference in (await visitor.get(f"{base}/bookings?mode=test")).text
    assert reference not in (await visitor.get(f"{base}/bookings")).text
    detail = f"{base}/bookings/{made.data['bookingId']}"
    assert (await visitor.get(detail)).status == 404  # not a live booking
    shown = await visitor.get(f"{detail}?mode=test")
    assert shown.status == 200 and reference in shown.text
    checked = await visitor.post(f"{detail}/check-in?mode=test", {"csrf": shown.csrf()})
    assert checked.status == 303 and "mode=test" in (checked.location or "")
    answer = await api.call("GET", f"{API}/bookings/{made.data['bookingId']}", key=str(test["key"]))
    assert answer.data["status"] == "CHECKED_IN"


async def test_what_both_records_share_is_never_shown_under_the_banner_nor_a_live_key_in_test_mode(
        api: Harness) -> None:
    prop = await api.create_property()
    base = f"/console/properties/{prop['id']}"
    visitor = await owner_of(api, prop)
    live = await api.create_key(prop["id"])
    for shared in ("/settings", "/notifications"):
        page = await visitor.get(f"{base}{shared}?mode=test")
        assert page.status == 200 and BANNER not in page.text and "Shared by live and test data" in page.text
    # A live key is not acted on under the test banner (nor a test key without it).
    assert (await visitor.get(f"{base}/keys/{live['id']}?mode=test")).status == 404
    test = await api.create_key(prop["id"], mode="test")
    assert (await visitor.get(f"{base}/keys/{test['id']}")).status == 404
    assert (await visitor.get(f"{base}/keys/{test['id']}?mode=test")).status == 200


async def test_live_pages_say_where_the_data_is_while_only_test_keys_have_written(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    notice = "Only test keys have written here yet"
    assert notice not in (await visitor.get(f"/console/properties/{prop['id']}")).text  # nothing written at all
    test_key = (await api.create_key(prop["id"], mode="test"))["key"]
    room = prop["roomTypes"][0]["id"]
    body = {"updates": [{"roomTypeId": room, "dateFrom": "2026-12-01", "dateTo": "2026-12-01", "available": 3}]}
    assert (await api.call("PUT", f"{API}/availability", key=test_key, body=body)).status == 202
    page = await visitor.get(f"/console/properties/{prop['id']}/grid")
    assert notice in page.text and f'href="/console/properties/{prop["id"]}/grid?mode=test">Test data</a>' in page.text
    assert notice not in (await visitor.get(f"/console/properties/{prop['id']}/grid?mode=test")).text
    live_key = (await api.create_key(prop["id"]))["key"]
    assert (await api.call("PUT", f"{API}/availability", key=live_key, body=body)).status == 202
    assert notice not in (await visitor.get(f"/console/properties/{prop['id']}/grid")).text
