"""PATCH /bookings/{id}: a merge patch of an API booking, all or nothing, never oversold."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
import trio

from .harness import API, Answer, Harness
from .test_bookings import available, book, counts, desk_and_ota_copies, sent_notifications, setup, stay
from .test_pipeline import grid, settled

ROOMY = "bookings=1000,property-bookings=1000,requests=10000,property=10000,writes=1000,property-writes=1000"


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_BUDGETS": ROOMY}


async def patch(api: Harness, key: str, booking_id: int, body: Any, headers: dict[str, str] | None = None
                ) -> Answer:
    return await api.call("PATCH", f"{API}/bookings/{booking_id}", key=key, body=body, headers=headers)


async def read(api: Harness, key: str, booking_id: int) -> Answer:
    return await api.call("GET", f"{API}/bookings/{booking_id}", key=key)


async def set_available(api: Harness, prop: dict[str, Any], room: int, first: str, last: str, count: int) -> None:
    ari = (await api.create_key(prop["id"], ["ari:write"]))["key"]
    put = await api.call("PUT", f"{API}/availability", key=ari, body={"updates": [
        {"roomTypeId": room, "dateFrom": first, "dateTo": last, "available": count}]})
    assert put.status == 202, put.body


async def events(api: Harness, booking_id: int, reason: str = "booking.modified") -> list[tuple[int, str, int]]:
    rows = await api.ctx.db.fetch(
        """SELECT room_type_id, first_night, last_night, delta FROM inventory_events
           WHERE booking_id = $1 AND reason = $2 ORDER BY first_night, room_type_id""", booking_id, reason)
    assert all(r["first_night"] == r["last_night"] for r in rows)  # a change moves each night on its own
    return [(r["room_type_id"], str(r["first_night"]), r["delta"]) for r in rows]


async def folio_rooms(api: Harness, booking_id: int) -> list[tuple[int, str, int]]:
    rows = await api.ctx.db.fetch(
        """SELECT r.position, f.night, f.amount_minor FROM folio_lines f JOIN booking_rooms r ON r.id = f.booking_room_id
           WHERE f.booking_id = $1 AND f.kind = 'ROOM' ORDER BY r.position, f.night""", booking_id)
    return [(r["position"], str(r["night"]), r["amount_minor"]) for r in rows]


@pytest.mark.live_only  # counts the owner's e-mails
async def test_a_longer_stay_needs_only_its_new_nights(api: Harness) -> None:
    prop, key = await setup(api)
    double = prop["roomTypes"][0]["id"]
    made = await book(api, key, stay(prop))  # 2026-12-01 to 12-04, one Double at 120.50
    assert made.status == 201 and made.headers["ETag"] == '"1"'
    assert (made.data["revision"], made.data["modifiedAt"]) == (1, made.data["createdAt"])
    booking_id = made.data["bookingId"]
    await set_available(api, prop, double, "2026-12-01", "2026-12-03", 0)  # its own nights are full now
    api.advance(600)

    longer = await patch(api, key, booking_id, {"checkOut": "2026-12-05"})
    assert longer.status == 200, longer.body
    b = longer.data
    assert (b["checkIn"], b["checkOut"], b["nights"], b["totalAmount"]) == ("2026-12-01", "2026-12-05", 4, "482.00")
    assert (b["revision"], b["modifiedAt"][:16], b["replay"]) == (2, "2026-11-22T10:10", False)
    assert b["rooms"][0]["bookingRoomId"] == made.data["rooms"][0]["bookingRoomId"]
    assert longer.headers["ETag"] == '"2"'
    assert await available(api, key, double, "2026-12-01", "2026-12-05") == {
        "2026-12-01": 0, "2026-12-02": 0, "2026-12-03": 0, "2026-12-04": 7, "2026-12-05": 8}
    assert await events(api, booking_id) == [(double, "2026-12-04", -1)]
    assert await folio_rooms(api, booking_id) == [(0, f"2026-12-0{d}", 12050) for d in (1, 2, 3, 4)]
    got = await read(api, key, booking_id)
    assert got.data == b and got.headers["ETag"] == '"2"'

    db = api.ctx.db
    log = await db.fetchval("SELECT detail FROM activity_log WHERE action = 'booking.modified'")
    assert '"2026-12-04" -> "2026-12-05"' in log and '"361.50" -> "482.00"' in log, log
    event = await db.fetchval("SELECT payload FROM domain_events WHERE type = 'booking.modified'")
    assert (event["changes"], event["previous"]["checkOut"], event["current"]["checkOut"], event["revision"]) == (
        ["checkOut"], "2026-12-04", "2026-12-05", 2)
    notes = await sent_notifications(api, prop["id"], 2)
    assert [n["kind"] for n in notes] == ["booking.modified", "booking.created"]
    assert "changed" in notes[0]["subject"]


async def test_a_shorter_stay_gives_nights_back_and_never_fails_for_its_own_rooms(api: Harness) -> None:
    prop, key = await setup(api)
    double = prop["roomTypes"][0]["id"]
    made = (await book(api, key, stay(prop, payment={"amount": "100.00", "method": "CARD"}))).data
    await set_available(api, prop, double, "2026-11-30", "2026-12-05", 0)  # nothing left anywhere
    same = await patch(api, key, made["bookingId"], {"checkIn": "2026-12-01", "checkOut": "2026-12-04",
                                                     "guest": {"name": "Ana Silva"}})
    assert same.status == 200 and same.data == made  # changes nothing: the same booking, the same revision
    assert same.headers["ETag"] == '"1"'
    shorter = await patch(api, key, made["bookingId"], {"checkOut": "2026-12-02"})
    assert shorter.status == 200, shorter.body
    b = shorter.data
    assert (b["nights"], b["totalAmount"], b["totalPaid"], b["balanceDue"], b["revision"]) == (
        1, "120.50", "100.00", "20.50", 2)
    assert await available(api, key, double, "2026-12-01", "2026-12-03") == {
        "2026-12-01": 0, "2026-12-02": 1, "2026-12-03": 1}
    assert await events(api, made["bookingId"]) == [(double, "2026-12-02", 1), (double, "2026-12-03", 1)]
    assert await folio_rooms(api, made["bookingId"]) == [(0, "2026-12-01", 12050)]
    assert await api.ctx.db.fetchval("SELECT count(*) FROM folio_lines WHERE kind = 'PAYMENT'") == 1


async def test_moved_dates_give_back_and_take_only_the_nights_that_differ(api: Harness) -> None:
    prop, key = await setup(api)
    double = prop["roomTypes"][0]["id"]
    made = (await book(api, key, stay(prop))).data
    moved = await patch(api, key, made["bookingId"], {"checkIn": "2026-12-03", "checkOut": "2026-12-06"})
    assert moved.status == 200, moved.body
    assert await available(api, key, double, "2026-12-01", "2026-12-06") == {
        "2026-12-01": 8, "2026-12-02": 8, "2026-12-03": 7, "2026-12-04": 7, "2026-12-05": 7, "2026-12-06": 8}
    assert await events(api, made["bookingId"]) == [
        (double, "2026-12-01", 1), (double, "2026-12-02", 1), (double, "2026-12-04", -1), (double, "2026-12-05", -1)]

    # Into a full night: 409 naming it, and nothing changes.
    await set_available(api, prop, double, "2026-12-07", "2026-12-07", 0)
    before = await counts(api)
    full = await patch(api, key, made["bookingId"], {"checkIn": "2026-12-05", "checkOut": "2026-12-08"})
    assert (full.status, full.code) == (409, "NO_AVAILABILITY")
    assert full.data["details"] == {"roomTypeId": double, "date": "2026-12-07", "available": 0, "requested": 1}
    assert await counts(api) == before
    assert (await read(api, key, made["bookingId"])).data == moved.data
    assert await available(api, key, double, "2026-12-03", "2026-12-07") == {
        "2026-12-03": 7, "2026-12-04": 7, "2026-12-05": 7, "2026-12-06": 8, "2026-12-07": 0}


async def test_another_room_type(api: Harness) -> None:
    prop, key = await setup(api)
    double, suite = prop["roomTypes"][0]["id"], prop["roomTypes"][1]["id"]
    made = (await book(api, key, stay(prop))).data
    room_id = made["rooms"][0]["bookingRoomId"]
    changed = await patch(api, key, made["bookingId"], {"rooms": [
        {"bookingRoomId": room_id, "roomTypeId": suite, "ratePlanId": prop["ratePlans"][1]["id"], "adults": 3,
         "nightlyRate": "300"}]})
    assert changed.status == 200, changed.body
    assert changed.data["rooms"] == [{"bookingRoomId": room_id, "roomTypeId": suite,
                                      "ratePlanId": prop["ratePlans"][1]["id"], "mealPlan": "BB", "adults": 3,
                                      "children": 0, "nightlyRate": "300.00", "status": "UPCOMING"}]
    assert changed.data["totalAmount"] == "900.00"
    assert await available(api, key, double, "2026-12-01", "2026-12-03") == dict.fromkeys(
        ("2026-12-01", "2026-12-02", "2026-12-03"), 8)
    assert await available(api, key, suite, "2026-12-01", "2026-12-03") == dict.fromkeys(
        ("2026-12-01", "2026-12-02", "2026-12-03"), 1)
    assert sorted(await events(api, made["bookingId"])) == sorted(
        [(double, f"2026-12-0{d}", 1) for d in (1, 2, 3)] + [(suite, f"2026-12-0{d}", -1) for d in (1, 2, 3)])
    meals = await api.ctx.db.fetch("SELECT description FROM folio_lines WHERE kind = 'MEAL'")
    assert {m["description"] for m in meals} == {"Breakfast (included in the rate)"} and len(meals) == 3


async def test_a_room_added_and_one_removed(api: Harness) -> None:
    prop, key = await setup(api)
    double, suite = prop["roomTypes"][0]["id"], prop["roomTypes"][1]["id"]
    flexible, suite_bb = prop["ratePlans"][0]["id"], prop["ratePlans"][1]["id"]
    two = [{"roomTypeId": double, "ratePlanId": flexible, "adults": 2, "nightlyRate": "100"},
           {"roomTypeId": suite, "ratePlanId": suite_bb, "adults": 2, "nightlyRate": "200"}]
    made = (await book(api, key, stay(prop, rooms=two))).data
    kept, dropped = (r["bookingRoomId"] for r in made["rooms"])
    changed = await patch(api, key, made["bookingId"], {"rooms": [
        {"roomTypeId": double, "ratePlanId": flexible, "adults": 1, "nightlyRate": "90"},  # new, first
        {**two[0], "bookingRoomId": kept, "children": 1}]})
    assert changed.status == 200, changed.body
    rooms = changed.data["rooms"]
    assert [(r["roomTypeId"], r["adults"], r["children"], r["nightlyRate"]) for r in rooms] == [
        (double, 1, 0, "90.00"), (double, 2, 1, "100.00")]
    assert rooms[1]["bookingRoomId"] == kept and rooms[0]["bookingRoomId"] not in (kept, dropped)
    assert changed.data["totalAmount"] == "570.00"
    assert await api.ctx.db.fetchval("SELECT count(*) FROM booking_rooms WHERE id = $1", dropped) == 0
    assert sorted(await events(api, made["bookingId"])) == sorted(
        [(double, f"2026-12-0{d}", -1) for d in (1, 2, 3)] + [(suite, f"2026-12-0{d}", 1) for d in (1, 2, 3)])
    assert await available(api, key, double, "2026-12-02", "2026-12-02") == {"2026-12-02": 6}
    assert await available(api, key, suite, "2026-12-02", "2026-12-02") == {"2026-12-02": 2}
    assert await folio_rooms(api, made["bookingId"]) == [
        (0, f"2026-12-0{d}", 9000) for d in (1, 2, 3)] + [(1, f"2026-12-0{d}", 10000) for d in (1, 2, 3)]
    foreign = await patch(api, key, made["bookingId"], {"rooms": [{**two[0], "bookingRoomId": dropped}]})
    assert (foreign.status, foreign.code, foreign.data["details"][0]["path"]) == (
        400, "VALIDATION", "rooms[0].bookingRoomId")


async def test_the_guest_is_merged_and_moves_no_inventory(api: Harness) -> None:
    prop, key = await setup(api)
    made = (await book(api, key, stay(prop, notes="late arrival"))).data
    db = api.ctx.db
    dirty = await db.fetchval("SELECT count(*) FROM availability_cells WHERE version > pushed_version")
    changed = await patch(api, key, made["bookingId"], {"guest": {"name": "Ana Lima", "email": None},
                                                        "notes": None})
    assert changed.status == 200, changed.body
    assert changed.data["guest"] == {"name": "Ana Lima", "phone": "+351 912 345 678", "email": None}
    assert changed.data["revision"] == 2
    assert await db.fetchval("SELECT notes FROM bookings") is None
    assert await events(api, made["bookingId"]) == []
    assert await db.fetchval("SELECT count(*) FROM availability_cells WHERE version > pushed_version") == dirty
    new_phone = await patch(api, key, made["bookingId"], {"guest": {"phone": "+351 933 000 111",
                                                                    "notes": "allergic to feathers"}})
    assert new_phone.data["guest"] == {"name": "Ana Lima", "phone": "+351 933 000 111", "email": None}
    guest = await db.fetchrow("SELECT g.phone, g.notes FROM bookings b JOIN guests g ON g.id = b.guest_id")
    assert guest is not None and (guest["phone"], guest["notes"]) == ("+351933000111", "allergic to feathers")
    activity = await db.fetchval("SELECT detail FROM activity_log WHERE action = 'booking.modified' ORDER BY id "
                                 "LIMIT 1")
    assert '"Ana Silva"' in activity and '"Ana Lima"' in activity, activity


async def test_if_match_names_the_revision(api: Harness) -> None:
    prop, key = await setup(api)
    made = (await book(api, key, stay(prop))).data
    etag = (await read(api, key, made["bookingId"])).headers["ETag"]
    first = await patch(api, key, made["bookingId"], {"notes": "one"}, {"If-Match": etag})
    assert first.status == 200 and first.headers["ETag"] == '"2"'
    before = await counts(api)
    for stale in (etag, 'W/"2"', '"x"', '"7", "1"'):
        refused = await patch(api, key, made["bookingId"], {"notes": "two", "checkOut": "2026-12-09"},
                              {"If-Match": stale})
        assert (refused.status, refused.code) == (412, "BOOKING_REVISION_STALE"), stale
        assert refused.data["details"] == {"revision": 2, "etag": '"2"'}
    assert await counts(api) == before
    assert (await read(api, key, made["bookingId"])).data == first.data
    listed = await patch(api, key, made["bookingId"], {"notes": "two"}, {"If-Match": '"1", "2"'})
    assert listed.status == 200 and listed.data["revision"] == 3
    anything = await patch(api, key, made["bookingId"], {"notes": "three"}, {"If-Match": "*"})
    assert anything.status == 200 and anything.data["revision"] == 4


async def test_a_cancelled_or_checked_in_booking_cannot_change(api: Harness) -> None:
    prop, key = await setup(api)
    cancelled = (await book(api, key, stay(prop, "WEB-1"))).data
    checked = (await book(api, key, stay(prop, "WEB-2"))).data
    gone = await api.call("POST", f"{API}/bookings/{cancelled['bookingId']}/cancel", key=key)
    assert gone.data["revision"] == 2 and gone.headers["ETag"] == '"2"'
    assert (await api.admin("POST", f"/bookings/{checked['bookingId']}/check-in")).status == 200
    before = await counts(api)
    for booking_id, status in ((cancelled["bookingId"], "CANCELLED"), (checked["bookingId"], "CHECKED_IN")):
        refused = await patch(api, key, booking_id, {"checkOut": "2026-12-05"})
        assert (refused.status, refused.code, refused.data["details"]) == (409, "BOOKING_NOT_MODIFIABLE",
                                                                           {"status": status})
        # The state decides before the condition: a stale If-Match changes nothing of the answer.
        assert (await patch(api, key, booking_id, {"notes": "x"}, {"If-Match": '"1"'})).code == (
            "BOOKING_NOT_MODIFIABLE")
    assert await counts(api) == before
    assert (await read(api, key, checked["bookingId"])).data["revision"] == 2  # the check-in was a change


async def test_desk_ota_and_other_properties_bookings_are_not_found(api: Harness) -> None:
    prop, key = await setup(api)
    other, other_key = await setup(api)
    made = (await book(api, key, stay(prop))).data
    db = api.ctx.db
    await desk_and_ota_copies(api, made["bookingId"])
    before = await counts(api)
    hidden = [r["id"] for r in await db.fetch("SELECT id FROM bookings WHERE source <> 'api'")]
    for booking_id, who in [(hidden[0], key), (hidden[1], key), (made["bookingId"], other_key), (999999, key)]:
        answer = await patch(api, who, booking_id, {"notes": "x"})
        assert (answer.status, answer.code) == (404, "BOOKING_NOT_FOUND")
    assert (await patch(api, key, 0, {"notes": "x"})).code == "BOOKING_NOT_FOUND"
    assert await counts(api) == before


async def test_a_replayed_idempotency_key(api: Harness) -> None:
    prop, key = await setup(api)
    made = (await book(api, key, stay(prop))).data
    headers = {"x-idempotency-key": "change-000001"}
    first = await patch(api, key, made["bookingId"], {"checkOut": "2026-12-05"}, headers)
    again = await patch(api, key, made["bookingId"], {"checkOut": "2026-12-05"}, headers)
    assert (first.status, again.status) == (200, 200)
    assert again.headers.get("X-Idempotent-Replay") == "true" and again.data == first.data
    assert again.headers["ETag"] == '"2"'
    assert (await read(api, key, made["bookingId"])).data["revision"] == 2  # applied once
    assert len(await events(api, made["bookingId"])) == 1
    other = await patch(api, key, made["bookingId"], {"checkOut": "2026-12-06"}, headers)
    assert (other.status, other.code) == (409, "IDEMPOTENCY_KEY_REUSED")
    conditioned = await patch(api, key, made["bookingId"], {"checkOut": "2026-12-05"},
                              {**headers, "If-Match": '"2"'})
    assert conditioned.code == "IDEMPOTENCY_KEY_REUSED"  # another condition is another request
    refused = await patch(api, key, made["bookingId"], {"checkIn": "2026-11-01"},
                          {"x-idempotency-key": "change-000002"})
    replayed = await patch(api, key, made["bookingId"], {"checkIn": "2026-11-01"},
                           {"x-idempotency-key": "change-000002"})
    assert refused.code == replayed.code == "STAY_INVALID" and replayed.headers.get("X-Idempotent-Replay") == "true"


@pytest.mark.parametrize(("body", "path"), [
    ({"vip": True}, "vip"),
    ({"guest": {"name": "Ana", "vip": True}}, "guest.vip"),
    ({"rooms": [{"roomTypeId": 1, "ratePlanId": 1, "adults": 1, "nightlyRate": "1", "view": "sea"}]},
     "rooms[0].view"),
    ({"externalReference": "WEB-2"}, "externalReference"),
    ({"currency": "EUR"}, "currency"),
    ({"payment": {"amount": "10.00", "method": "CARD"}}, "payment"),
    ({"checkIn": None}, "checkIn"),
    ({"rooms": None}, "rooms"),
    ({"guest": {"phone": None}}, "guest.phone"),
    ({"rooms": []}, "rooms"),
    ({"notes": "n" * 2001}, "notes"),
])
async def test_unknown_and_unchangeable_fields_are_refused(api: Harness, body: dict[str, Any], path: str) -> None:
    prop, key = await setup(api)
    made = (await book(api, key, stay(prop))).data
    before = await counts(api)
    answer = await patch(api, key, made["bookingId"], body)
    assert (answer.status, answer.code) == (400, "VALIDATION"), answer.body
    assert [d["path"] for d in answer.data["details"]] == [path], answer.data["details"]
    if path in ("externalReference", "currency", "payment"):
        assert "cannot be changed" in answer.data["details"][0]["message"]
    assert await counts(api) == before
    assert (await read(api, key, made["bookingId"])).data == made


async def test_the_rules_of_creation_apply(api: Harness) -> None:
    prop, key = await setup(api)
    double, suite = prop["roomTypes"][0]["id"], prop["roomTypes"][1]["id"]
    flexible, suite_bb = prop["ratePlans"][0]["id"], prop["ratePlans"][1]["id"]
    made = (await book(api, key, stay(prop, payment={"amount": "300.00", "method": "CARD"}))).data

    def room(**c: Any) -> list[dict[str, Any]]:
        return [{"roomTypeId": double, "ratePlanId": flexible, "adults": 2, "nightlyRate": "100", **c}]

    cases: list[tuple[dict[str, Any], str, Any]] = [
        ({"checkIn": "2026-11-21"}, "STAY_INVALID", {"checkIn": "2026-11-21", "checkOut": "2026-12-04",
                                                     "today": "2026-11-22"}),
        ({"checkOut": "2026-12-01"}, "STAY_INVALID", None),
        ({"checkOut": "2027-03-02"}, "STAY_INVALID", None),
        ({"rooms": room(roomTypeId=999999)}, "UNKNOWN_ROOM_TYPE", {"roomTypeIds": [999999]}),
        ({"rooms": room(ratePlanId=999999)}, "UNKNOWN_RATE_PLAN", {"ratePlanIds": [999999]}),
        ({"rooms": room(ratePlanId=suite_bb)}, "UNKNOWN_ROOM_TYPE_FOR_PLAN", None),
        ({"rooms": room() + room(adults=3)}, "OCCUPANCY_EXCEEDED",
         {"index": 1, "roomTypeId": double, "maxAdults": 2, "maxOccupancy": 3}),
        ({"checkOut": "2026-12-02"}, "PAYMENT_EXCEEDS_TOTAL", {"amount": "300.00", "total": "120.50"}),
        ({"rooms": [{"roomTypeId": suite, "ratePlanId": suite_bb, "adults": 2, "nightlyRate": "10"}]},
         "PAYMENT_EXCEEDS_TOTAL", {"amount": "300.00", "total": "30.00"}),
    ]
    before = await counts(api)
    for body, code, details in cases:
        answer = await patch(api, key, made["bookingId"], body)
        assert (answer.status, answer.code) == (400, code), (body, answer.body)
        if details is not None:
            assert answer.data["details"] == details, code
    assert await counts(api) == before
    assert (await read(api, key, made["bookingId"])).data == made


@pytest.mark.parametrize("env", [{"CONNECTAPI_BUDGETS": "bookings=3,property-bookings-day=1"}])
async def test_a_change_pays_the_per_minute_booking_budgets_not_the_daily_one(api: Harness) -> None:
    prop, key = await setup(api)
    made = (await book(api, key, stay(prop))).data
    assert (await patch(api, key, made["bookingId"], {"notes": "a"})).status == 200  # past the day's one booking
    assert (await patch(api, key, made["bookingId"], {"notes": "b"})).status == 200
    limited = await patch(api, key, made["bookingId"], {"notes": "c"})
    assert (limited.status, limited.code, limited.data["scope"]) == (429, "RATE_LIMITED", "bookings")
    assert (await read(api, key, made["bookingId"])).data["revision"] == 3
    api.advance(61)
    day = await book(api, key, stay(prop, "WEB-2"))
    assert (day.status, day.data["scope"]) == (429, "property-bookings-day")


async def test_the_scope_and_the_module(api: Harness) -> None:
    prop, key = await setup(api)
    made = (await book(api, key, stay(prop))).data
    reader = (await api.create_key(prop["id"], ["bookings:read"]))["key"]
    missing = await patch(api, reader, made["bookingId"], {"notes": "x"})
    assert (missing.status, missing.code, missing.data["details"]["needed"]) == (403, "SCOPE_MISSING",
                                                                                 "bookings:write")
    assert (await api.admin("PATCH", f"/properties/{prop['id']}", {"pmsEntitled": False})).status == 200
    refused = await patch(api, key, made["bookingId"], {"notes": "x"})
    assert (refused.status, refused.code) == (402, "MODULE_NOT_ENTITLED")
    assert (await patch(api, key, made["bookingId"], {"vip": 1})).code == "VALIDATION"  # the body first
    assert (await read(api, key, made["bookingId"])).data["revision"] == 1


async def test_the_last_two_rooms_of_a_night_under_thirty_requests(api: Harness) -> None:
    """Fifteen new bookings and fifteen changes that move a booking into the night with the
    last two rooms, all at once: two get them, every other is 409 NO_AVAILABILITY naming the
    night, and nothing of theirs is written."""
    prop, key = await setup(api)
    double = prop["roomTypes"][0]["id"]
    moving = []
    for i in range(15):
        night = 20 + i % 2  # eight on the 20th, seven on the 21st: a Double has eight rooms
        made = await book(api, key, stay(prop, f"HELD-{i}", checkIn=f"2026-12-{night}",
                                         checkOut=f"2026-12-{night + 1}"))
        assert made.status == 201, made.body
        moving.append(made.data)
    await set_available(api, prop, double, "2026-12-10", "2026-12-10", 2)
    before = await counts(api)
    answers: list[tuple[str, Answer]] = []

    async def new(i: int) -> None:
        answers.append(("new", await book(api, key, stay(prop, f"NEW-{i}", checkIn="2026-12-10",
                                                         checkOut="2026-12-11"))))

    async def move(b: dict[str, Any]) -> None:
        answers.append(("move", await patch(api, key, b["bookingId"], {"checkIn": "2026-12-10",
                                                                       "checkOut": "2026-12-11"})))

    async with trio.open_nursery() as nursery:
        for i in range(15):
            nursery.start_soon(new, i)
            nursery.start_soon(move, moving[i])
    won = [(kind, a) for kind, a in answers if a.status < 400]
    refused = [a for _, a in answers if a.status >= 400]
    assert len(won) == 2 and len(refused) == 28
    assert all((a.status, a.code) == (409, "NO_AVAILABILITY") for a in refused), [a.body for a in refused]
    assert all(a.data["details"]["date"] == "2026-12-10" for a in refused)
    assert await available(api, key, double, "2026-12-10", "2026-12-10") == {"2026-12-10": 0}
    created, moved = sum(k == "new" for k, _ in won), sum(k == "move" for k, _ in won)
    after = await counts(api)
    assert after["bookings"] - before["bookings"] == created
    assert after["inventory_events"] - before["inventory_events"] == created + 2 * moved
    assert after["activity_log"] - before["activity_log"] == created + moved
    db = api.ctx.db
    assert await db.fetchval("SELECT count(*) FROM bookings WHERE check_in = '2026-12-10'") == 2
    assert await db.fetchval("SELECT count(*) FROM bookings WHERE revision > 1") == moved
    # The record agrees with itself: every night's count is the rooms less those its bookings hold.
    # The record's own cells and bookings: in test mode the live property has a cell of the
    # same room type and night too (decision 0115), and which of the two a scan returns last
    # is the heap's order, not the test's.
    rows = await db.fetch(
        """SELECT c.night, c.available, (SELECT count(*) FROM bookings b JOIN booking_rooms r ON r.booking_id = b.id
                                         WHERE b.property_id = c.property_id AND r.room_type_id = c.room_type_id
                                           AND b.status = 'UPCOMING'
                                           AND c.night >= b.check_in AND c.night < b.check_out) AS held
           FROM availability_cells c
           WHERE c.property_id = $2 AND c.room_type_id = $1 AND c.night IN ('2026-12-20', '2026-12-21')""",
        double, await api.record_of(prop))
    assert sorted((str(r["night"]), r["available"] + r["held"]) for r in rows) == [("2026-12-20", 8),
                                                                                   ("2026-12-21", 8)]


@pytest.mark.parametrize("env", [{"CONNECTAPI_PUSH_PAUSED": "0", "CONNECTAPI_BUDGETS": ROOMY}])
@pytest.mark.live_only  # reads the live sandbox
async def test_the_sandbox_grid_after_a_change_equals_the_record(api: Harness) -> None:
    prop, key = await setup(api)
    double = prop["roomTypes"][0]["id"]
    assert api.ctx.channel.sandbox is not None
    made = (await book(api, key, stay(prop))).data
    await settled(api, prop["id"])
    cm_room = await api.ctx.db.fetchval("SELECT cm_id FROM room_types WHERE id = $1", double)
    stats = api.ctx.channel.sandbox.stats
    calls = stats.availability_calls
    moved = await patch(api, key, made["bookingId"], {"checkIn": "2026-12-03", "checkOut": "2026-12-06"})
    assert moved.status == 200, moved.body
    await settled(api, prop["id"])
    assert stats.availability_calls == calls + 1  # the net change, once
    held = grid(api, prop).availability[cm_room]
    record = await available(api, key, double, "2026-11-30", "2026-12-07")
    assert {night: held[date.fromisoformat(night)] for night in record} == record
    assert record == {"2026-11-30": 8, "2026-12-01": 8, "2026-12-02": 8, "2026-12-03": 7, "2026-12-04": 7,
                      "2026-12-05": 7, "2026-12-06": 8, "2026-12-07": 8}
    guest_only = await patch(api, key, made["bookingId"], {"guest": {"name": "Ana Lima"}})
    assert guest_only.status == 200
    await settled(api, prop["id"])
    assert stats.availability_calls == calls + 1  # nothing to push




async def test_a_booking_stored_under_older_rules_can_still_change(api: Harness) -> None:
    """A booking written before a text rule was tightened (a line separator in its notes, which
    creation refuses today) is changed, never a crash of the property's writer."""
    prop, key = await setup(api)
    made = await book(api, key, stay(prop))
    booking_id = made.data["bookingId"]
    await api.ctx.db.execute("UPDATE bookings SET notes = 'x \u2028 y' WHERE id = $1", booking_id)
    for _ in range(7):  # past the writer's crash budget, had it crashed
        changed = await patch(api, key, booking_id, {"guest": {"email": "ana@example.com"}})
        assert changed.status == 200, changed.body
    fixed = await patch(api, key, booking_id, {"notes": "late arrival"})
    assert (fixed.status, fixed.data["revision"]) == (200, 2), fixed.body  # the e-mail was already so
    assert await api.ctx.db.fetchval("SELECT notes FROM bookings WHERE id = $1", booking_id) == "late arrival"
    assert (await book(api, key, {**stay(prop), "externalReference": "WEB-AFTER"})).status == 201


async def test_a_patch_that_changes_nothing_is_never_refused(api: Harness) -> None:
    """Nothing changes: 200 and the same revision, even where the catalog changed since and
    creation's rules would refuse the booking as it stands."""
    prop, key = await setup(api)
    made = await book(api, key, {**stay(prop), "rooms": [{**stay(prop)["rooms"][0], "adults": 2}]})
    booking_id = made.data["bookingId"]
    await api.ctx.db.execute("UPDATE room_types SET max_adults = 1 WHERE id = $1", prop["roomTypes"][0]["id"])
    for body in ({}, {"checkIn": made.data["checkIn"]}, {"guest": {"name": " " + made.data["guest"]["name"] + " "}}):
        same = await patch(api, key, booking_id, body)
        assert (same.status, same.data["revision"]) == (200, 1), (body, same.body)


async def test_a_new_phone_does_not_carry_the_old_guests_notes(api: Harness) -> None:
    prop, key = await setup(api)
    made = await book(api, key, {**stay(prop), "guest": {**stay(prop)["guest"], "notes": "allergic to nuts"}})
    booking_id = made.data["bookingId"]
    moved = await patch(api, key, booking_id, {"guest": {"phone": "+351 911 000 111"}})
    assert moved.status == 200, moved.body
    notes = await api.ctx.db.fetchval(
        "SELECT g.notes FROM bookings b JOIN guests g ON g.id = b.guest_id WHERE b.id = $1", booking_id)
    assert notes is None


async def test_the_guest_or_the_notes_change_where_the_stay_could_no_longer_be_booked(api: Harness) -> None:
    """Only the stay is judged by creation's rules again: a guest's name is corrected on a
    booking whose room type takes fewer guests since, and after its check-in day has come."""
    prop, key = await setup(api)
    made = await book(api, key, {**stay(prop), "rooms": [{**stay(prop)["rooms"][0], "adults": 2}]})
    booking_id = made.data["bookingId"]
    await api.ctx.db.execute("UPDATE room_types SET max_adults = 1 WHERE id = $1", prop["roomTypes"][0]["id"])

    renamed = await patch(api, key, booking_id, {"guest": {"name": "Ana Lima Costa"}})
    assert (renamed.status, renamed.data["revision"]) == (200, 2), renamed.body
    assert renamed.data["guest"]["name"] == "Ana Lima Costa"
    assert (renamed.data["rooms"], renamed.data["totalAmount"]) == (made.data["rooms"], made.data["totalAmount"])
    moved = await patch(api, key, booking_id, {"checkOut": "2026-12-05"})
    assert (moved.status, moved.code) == (400, "OCCUPANCY_EXCEEDED"), moved.body

    api.advance(10 * 86400)  # 2026-12-02: the stay began yesterday, the guest has not checked in
    noted = await patch(api, key, booking_id, {"notes": "arrives late, keep the room"})
    assert (noted.status, noted.data["revision"]) == (200, 3), noted.body
    assert await api.ctx.db.fetchval("SELECT notes FROM bookings WHERE id = $1", booking_id) == "arrives late, keep the room"
    late = await patch(api, key, booking_id, {"guest": {"name": "Ana Costa"}, "checkOut": "2026-12-05"})
    assert (late.status, late.code) == (400, "STAY_INVALID"), late.body
    assert (await read(api, key, booking_id)).data["revision"] == 3
