"""The console's bookings and notifications screens of a property, and isolation: an owner
of one property gets 404 for every route of the grid, bookings, notifications and settings
screens of another, and for a booking or revision of another under its own property's URL;
a form without its token is refused."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from connectapi.storage import ota

from .console_visitor import OWNER, owner_of
from .harness import API, Harness, eventually
from .test_bookings import EVERY_SCOPE, book, stay
from .test_ota_bookings import NOTIFY_SECRET, map_first_room_type, revisions, sold_on_a_room_type_we_do_not_map


async def booked(api: Harness, reference: str = "WEB-1001") -> tuple[dict[str, Any], str, int]:
    prop, key = await api.keyed_property(EVERY_SCOPE)
    made = await book(api, key, stay(prop, reference))
    assert made.status == 201, made.body
    return prop, key, int(made.data["bookingId"])


async def kept_revision(api: Harness, property_id: int, revision_id: str, state: str = "unmapped") -> None:
    """A revision the intake kept, as it leaves one (not waiting to be applied: it is not taken)."""
    at = api.ctx.clock.now() - timedelta(hours=1)
    await api.ctx.db.execute(
        """INSERT INTO ota_revisions (id, system_id, property_id, cm_booking_id, revised_at, payload, state, note,
                                      received_at, settled_at, acked_at)
           VALUES ($1, $1, $2, 'cm-booking', $3, $5, $4, 'room type x is not mapped', $3, $3, $3)""",
        revision_id, property_id, at, state, json.dumps({"ota_reservation_code": "BDC-1", "status": "new"}))


async def test_an_api_booking_checked_in_on_the_bookings_page_can_no_longer_be_cancelled(api: Harness) -> None:
    prop, key, booking_id = await booked(api)
    visitor = await owner_of(api, prop)
    base = f"/console/properties/{prop['id']}/bookings"
    listed = await visitor.get(base)
    assert listed.status == 200 and 'aria-current="page">Bookings' in listed.text
    api_part = listed.text.split('id="api-bookings"', 1)[1].split('id="ota-bookings"', 1)[0]
    reference = f"PMS-{prop['id']}-000001"
    assert f'href="{base}/{booking_id}">{reference}</a>' in api_part
    assert "WEB-1001" in api_part and "Ana Silva" in api_part and "2026-12-01 to 2026-12-04" in api_part
    assert "upcoming" in api_part and "361.50 EUR" in api_part
    assert "None yet." in listed.text.split('id="ota-bookings"', 1)[1]

    detail = await visitor.get(f"{base}/{booking_id}")
    assert detail.status == 200 and f"Booking {reference}" in detail.text and "Double" in detail.text
    assert "Flexible" in detail.text and "3 nights" in detail.text and "Check in</button>" in detail.text
    moved = await visitor.submit(f"{base}/{booking_id}", f"{base}/{booking_id}/check-in", {})
    assert (moved.status, moved.location) == (303, f"{base}/{booking_id}?done=checked-in")
    after = await visitor.get(f"{base}/{booking_id}?done=checked-in")
    assert "The guest is checked in." in after.text and "checked in" in after.text
    assert "Check in</button>" not in after.text

    refused = await api.call("POST", f"{API}/bookings/{booking_id}/cancel", key=key, body={})
    assert (refused.status, refused.code) == (409, "BOOKING_NOT_CANCELLABLE")
    again = await visitor.submit(f"{base}/{booking_id}", f"{base}/{booking_id}/check-in", {})
    assert again.status == 303  # checked in already: it stays so

    cancelled = await book(api, key, stay(prop, "WEB-1002"))
    other_id = cancelled.data["bookingId"]
    assert (await api.call("POST", f"{API}/bookings/{other_id}/cancel", key=key, body={})).status == 200
    late = await visitor.submit(f"{base}/{other_id}", f"{base}/{other_id}/check-in", {})
    assert late.status == 409 and "cancelled booking cannot be checked in" in late.text


async def test_the_notifications_page_shows_a_booking_s_email(api: Harness) -> None:
    prop, _, booking_id = await booked(api)
    visitor = await owner_of(api, prop)
    path = f"/console/properties/{prop['id']}/notifications"
    page = await visitor.get(path)
    assert page.status == 200 and 'aria-current="page">Notifications' in page.text
    assert "booking.created" in page.text and "owner@casa-azul.example" in page.text
    assert f"New booking PMS-{prop['id']}-000001" in page.text

    async def sent() -> bool:
        return "sent 2026-11-22 10:00 UTC" in (await visitor.get(path)).text

    await eventually(sent, "the e-mail shown as sent")
    assert OWNER not in page.text.split("<main", 1)[1]  # the owner's setup e-mail is not the property's


@pytest.mark.parametrize("env", [{"CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET, "CONNECTAPI_PUSH_PAUSED": "0"}])
async def test_an_unmapped_ota_revision_is_applied_again_from_the_bookings_page(api: Harness) -> None:
    prop = await api.create_property()
    sent = await sold_on_a_room_type_we_do_not_map(api, prop, "a-room-type-mapped-late")
    [kept] = await revisions(api, prop, 1)
    visitor = await owner_of(api, prop)
    base = f"/console/properties/{prop['id']}/bookings"
    listed = await visitor.get(base)
    part = listed.text.split('id="revisions"', 1)[1]
    action = f"{base}/revisions/{sent['id']}/apply"
    assert "unmapped" in part and "a-room-type-mapped-late" in part and f'action="{action}"' in part

    # The owner's operator maps the channel manager's room type; the owner applies it again.
    await map_first_room_type(api, prop, "a-room-type-mapped-late")
    applied = await visitor.submit(base, action, {})
    assert (applied.status, applied.location) == (303, f"{base}?done=applied#revisions")
    [done] = await revisions(api, prop, 1)
    assert (kept["state"], done["state"]) == ("unmapped", "applied")
    after = await visitor.get(f"{base}?done=applied")
    assert "applied again in the next round" in after.text
    assert "None: every change the channels sent is applied." in after.text
    ota_part = after.text.split('id="ota-bookings"', 1)[1].split('id="revisions"', 1)[0]
    assert done["reference"] in ota_part and "Bo" in ota_part and "90.00 EUR" in ota_part

    again = await visitor.submit(base, action, {})  # applied: nothing to apply again
    assert again.status == 409 and "only an unmapped or refused one" in again.text


async def test_an_owner_gets_404_for_every_route_of_another_property(api: Harness) -> None:
    mine, _, my_booking = await booked(api, "WEB-A")
    theirs, _, their_booking = await booked(api, "WEB-B")
    await kept_revision(api, mine["id"], "rev-mine")
    await kept_revision(api, theirs["id"], "rev-theirs")
    visitor = await owner_of(api, mine)
    own = f"/console/properties/{mine['id']}"
    other = f"/console/properties/{theirs['id']}"
    token = (await visitor.get(own + "/bookings")).csrf()

    for path in ("/grid", "/grid?from=2026-11-23&to=2026-11-24", "/bookings", f"/bookings/{their_booking}",
                 f"/bookings/{my_booking}", "/notifications", "/settings"):
        page = await visitor.get(other + path)
        assert page.status == 404 and "There is no such page." in page.text, (path, page.status)
    for path, form in ((f"/bookings/{their_booking}/check-in", {}), ("/bookings/revisions/rev-theirs/apply", {}),
                       ("/bookings/revisions/rev-mine/apply", {}),
                       ("/settings", {"bookingsPerDay": "900", "guestConfirmation": "on"})):
        page = await visitor.post(other + path, {"csrf": token, **form})
        assert page.status == 404, (path, page.status)
    # Their booking and revision under my property's URL: not found either.
    assert (await visitor.get(f"{own}/bookings/{their_booking}")).status == 404
    assert (await visitor.post(f"{own}/bookings/{their_booking}/check-in", {"csrf": token})).status == 404
    assert (await visitor.post(f"{own}/bookings/revisions/rev-theirs/apply", {"csrf": token})).status == 404
    assert (await visitor.post(f"{own}/bookings/revisions/no-such-revision/apply", {"csrf": token})).status == 404
    assert (await visitor.get(f"{own}/bookings/999999")).status == 404

    assert await api.ctx.db.fetchval("SELECT status FROM bookings WHERE id = $1", their_booking) == "UPCOMING"
    assert [r["state"] for r in await ota.revisions_of(api.ctx.db, theirs["id"])] == ["unmapped"]
    shown = (await api.admin("GET", f"/properties/{theirs['id']}")).data
    assert (shown["bookingsPerDay"], shown["guestConfirmation"]) == (None, False)
    # The same token works on my own property's pages: the 404s above were not the token's.
    assert (await visitor.post(f"{own}/bookings/{my_booking}/check-in", {"csrf": token})).status == 303


async def test_a_form_without_its_token_is_refused(api: Harness) -> None:
    prop, _, booking_id = await booked(api)
    await kept_revision(api, prop["id"], "rev-1")
    visitor = await owner_of(api, prop)
    base = f"/console/properties/{prop['id']}"
    for path, form in ((f"/bookings/{booking_id}/check-in", {}), ("/bookings/revisions/rev-1/apply", {}),
                       ("/settings", {"bookingsPerDay": "900"})):
        for sent in (form, {**form, "csrf": "not-the-session-token-at-all"}):
            page = await visitor.post(base + path, sent)
            assert page.status == 403 and "no longer valid" in page.text, (path, page.status)
    assert await api.ctx.db.fetchval("SELECT status FROM bookings WHERE id = $1", booking_id) == "UPCOMING"
    assert [r["state"] for r in await ota.revisions_of(api.ctx.db, prop["id"])] == ["unmapped"]
    assert (await api.admin("GET", f"/properties/{prop['id']}")).data["bookingsPerDay"] is None


@pytest.mark.parametrize("env", [{"CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET, "CONNECTAPI_PUSH_PAUSED": "0"}])
async def test_an_ota_booking_shows_the_front_desk_its_nights_taxes_extras_and_who_collects(api: Harness) -> None:
    """Made on the sandbox as an OTA would sell it (issue 42): nights priced apart, a city tax
    not included, breakfast on top, paid to the channel with its virtual card, a child of 5."""
    prop = await api.create_property()
    made = await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings", {
        "roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"],
        "checkIn": "2026-12-10", "checkOut": "2026-12-12", "adults": 2, "children": 1, "childrenAges": [5],
        "guest": {"name": "Ana", "surname": "Lima", "language": "pt", "city": "Lisboa"}, "amount": "250.00",
        "nightlyAmounts": ["120.00", "130.00"], "arrivalHour": "22:30", "notes": "A cot, please.",
        "taxes": [{"name": "VAT (6%)", "type": "Value Added Tax (VAT)", "inclusive": True, "amount": "14.15"},
                  {"name": "City tax", "type": "city_tax", "amount": "8.00"}],
        "extras": [{"name": "Breakfast", "amount": "45.00", "priceMode": "Per person per night", "persons": 3,
                    "nights": 2}],
        "paymentCollect": "ota", "paymentType": "credit_card", "virtualCard": True, "commission": "44.25"})
    assert made.status == 201, made.body
    [settled] = await revisions(api, prop, 1)
    assert (settled["state"], settled["note"]) == ("applied", None)
    booking_id = await api.ctx.db.fetchval("SELECT id FROM bookings WHERE property_id = $1", prop["id"])
    visitor = await owner_of(api, prop)
    page = await visitor.get(f"/console/properties/{prop['id']}/bookings/{booking_id}")
    assert page.status == 200
    desk = page.text.split('id="ota-terms"', 1)[1].split("Front desk", 1)[0]
    for shown in ("295.00 EUR", "44.25 EUR", "the channel (the guest paid it)", "credit card",
                  "the channel&#39;s virtual card (MC)", "22:30", "A cot, please.", "children aged 5",
                  "2026-12-10</td><td>120.00 EUR", "2026-12-11</td><td>130.00 EUR",
                  "VAT (6%) (included)</td><td>14.15 EUR", "City tax (not included)</td><td>8.00 EUR",
                  "Breakfast, per person per night</td><td>45.00 EUR"):
        assert shown in desk, shown

    # The OTA changes it with nights that do not add up to the room's amount: passed on as sent,
    # and the owner told.
    code = made.data["reference"]
    changed = await api.admin("POST", f"/properties/{prop['id']}/sandbox/ota-bookings/{code}/modify",
                              {"nightlyAmounts": ["120.00", "100.00"]})
    assert changed.status == 200, changed.body
    [latest, _] = await revisions(api, prop, 2)
    assert latest["state"] == "applied"
    assert latest["note"] == ("amounts do not add up: the nights of room 1 add up to 220.00 EUR, its amount is "
                              "250.00 EUR")
    told = await api.ctx.db.fetch("SELECT kind, body FROM notifications WHERE property_id = $1 AND kind = $2",
                                  prop["id"], "ota.amounts")
    assert len(told) == 1 and "the nights of room 1 add up to 220.00 EUR" in told[0]["body"]
    after = await visitor.get(f"/console/properties/{prop['id']}/bookings/{booking_id}")
    assert "2026-12-11</td><td>100.00 EUR" in after.text and "Room</td><td>250.00 EUR" in after.text
