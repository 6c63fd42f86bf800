"""Channex's documented requests and answers, as data (docs.channex.io, mirrored in
WebRenew/channex-knowledge-graph, channex-docs/: api-reference, ari, rate-limits,
bookings-collection, webhook-collection).

The sandbox is checked against these cases (test_sandbox_contract.py), and our client's
tests may import them too, so the sandbox and the client cannot drift apart together.

How to read a case:
- `request`: method, path, query, body. Strings "{name}" are filled in from the case's
  names: property_id, room_type_id, other_room_type_id, rate_plan_id, other_rate_plan_id
  (a fresh property in USD with two room types and a per-room plan on each) and whatever
  a `before` step `capture`d (a dotted path into its answer, e.g. "data.id";
  per_person_rate_plan_id: MAKE_PER_PERSON_PLAN's).
- `before`: requests made first, in order, each expected to answer 2xx.
- `status`, `body`: the answer. The body is compared whole: "<uuid>" stands for any id,
  "<any>" for any value; REVISION_KEYS is the set of keys a revision's attributes hold.
- `absent_headers`: headers the answer must not carry; every answer carries x-request-id.
- `key`: the user-api-key sent ("right" unless said).

Dates: the docs' examples are in 2019-2021, which Channex itself would now refuse as past
("Past dates are not allowed"); the cases keep their shape with dates moved after TODAY,
the day the sandbox's clock is set to. Where an answer is ours (the docs give none), the
case says so in `ours`.
"""

from __future__ import annotations

from typing import Any

TODAY = "2026-11-22"  # the sandbox clock's date in the contract tests (UTC, 10:00)
START = "2026-11-22T10:00:00+00:00"
UUID = "<uuid>"
ANY = "<any>"

UNAUTHORIZED = {"errors": {"code": "unauthorized", "title": "Unauthorized"}}
NOT_FOUND = {"errors": {"code": "not_found", "title": "Resouce Not Found"}}
TOO_MANY = {"errors": {"code": "http_too_many_requests", "title": "Too Many Requests"}}
TASK = {"data": [{"id": UUID, "type": "task"}], "meta": {"message": "Success", "warnings": []}}
# The availability route's documented success is only {"meta": {"message": "Success"}}; the
# sandbox answers the restriction route's shape (with the task id the certification asks
# for). A client must take either.
AVAILABILITY_DOCUMENTED_SUCCESS = {"meta": {"message": "Success"}}
ACK_SUCCESS = {"meta": {"message": "Success"}}
NULL = "Should be a non null value or not existed field"

# A revision's attributes: the docs' Booking.com example's keys, plus booking_id and
# system_id (which the feed's revisions carry, Booking Revisions List).
REVISION_KEYS = frozenset({
    "id", "booking_id", "revision_id", "property_id", "unique_id", "system_id", "ota_reservation_code",
    "ota_name", "status", "arrival_date", "departure_date", "arrival_hour", "amount", "ota_commission",
    "currency", "notes", "payment_collect", "payment_type", "occupancy", "customer", "guarantee", "services",
    "rooms", "inserted_at"})
CUSTOMER_KEYS = frozenset({"name", "surname", "mail", "phone", "country", "city", "address", "zip", "language",
                           "company", "meta"})
GUARANTEE_KEYS = frozenset({"card_number", "card_type", "cardholder_name", "cvv", "expiration_date", "is_virtual"})
ROOM_KEYS = frozenset({"amount", "booking_room_id", "checkin_date", "checkout_date", "ota_unique_id", "days",
                       "guests", "meta", "occupancy", "rate_plan_id", "room_type_id", "services", "taxes"})
TAX_KEYS = frozenset({"is_inclusive", "name", "nights", "persons", "price_mode", "price_per_unit", "total_price",
                      "type"})

# An OTA booking made through the sandbox's control route (Booking.com, two nights).
OTA_BOOKING = {
    "property_id": "{property_id}", "room_type_id": "{room_type_id}", "rate_plan_id": "{rate_plan_id}",
    "arrival_date": "2026-12-13", "departure_date": "2026-12-15", "amount": "153.00", "adults": 2,
    "customer": {"name": "Name", "surname": "Surname", "mail": "customer_email@guest.booking.com",
                 "phone": "Custom Phone", "country": "GB", "city": "."},
}
MAKE_BOOKING = {"method": "POST", "path": "/_sandbox/ota-bookings", "body": OTA_BOOKING,
                "capture": {"revision_id": "data.id"}}


# A per-person rate plan as our client creates one: the docs' "Per Person Manual" example
# (Rate Plans Collection) without the fields it may leave to their defaults; options for 1
# and 2 adults, the largest primary.
PER_PERSON_PLAN = {"property_id": "{property_id}", "room_type_id": "{room_type_id}",
                   "title": "Best Available Rate per person", "sell_mode": "per_person",
                   "options": [{"occupancy": 1, "is_primary": False}, {"occupancy": 2, "is_primary": True}]}
MAKE_PER_PERSON_PLAN = {"method": "POST", "path": "/api/v1/rate_plans", "body": {"rate_plan": PER_PERSON_PLAN},
                        "capture": {"per_person_rate_plan_id": "data.id"}}
# The docs' "Per Person Manual" example, whole.
DOCS_PER_PERSON_PLAN = {
    "title": "Best Available Rate", "property_id": "{property_id}", "room_type_id": "{room_type_id}",
    "parent_rate_plan_id": None, "children_fee": "0.00", "infant_fee": "0.00", "max_stay": [0, 0, 0, 0, 0, 0, 0],
    "min_stay_arrival": [1, 1, 1, 1, 1, 1, 1], "min_stay_through": [1, 1, 1, 1, 1, 1, 1],
    "closed_to_arrival": [False] * 7, "closed_to_departure": [False] * 7, "stop_sell": [False] * 7,
    "options": [{"occupancy": 1, "is_primary": False, "rate": 0}, {"occupancy": 2, "is_primary": False, "rate": 0},
                {"occupancy": 3, "is_primary": True, "rate": 0}],
    "currency": "GBP", "sell_mode": "per_person", "rate_mode": "manual", "inherit_rate": False,
    "inherit_closed_to_arrival": False, "inherit_closed_to_departure": False, "inherit_stop_sell": False,
    "inherit_min_stay_arrival": False, "inherit_min_stay_through": False, "inherit_max_stay": False,
    "inherit_max_sell": False, "inherit_max_availability": False, "inherit_availability_offset": False,
    "auto_rate_settings": None}


def _created(kind: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """The 201 of a creation: ours echoes the attributes sent with the new id (the docs'
    answer holds every attribute, those left to their defaults too)."""
    return {"data": {"type": kind, "id": UUID, "attributes": {**attributes, "id": UUID}}}


def _plan_refused(details: dict[str, list[str]]) -> dict[str, Any]:
    return {"errors": {"code": "validation_error", "title": "Validation Error", "details": details}}


def _write(kind: str, values: list[dict[str, Any]]) -> dict[str, Any]:
    return {"method": "POST", "path": f"/api/v1/{kind}", "body": {"values": values}}


def _restriction(**fields: Any) -> dict[str, Any]:
    return {"property_id": "{property_id}", "rate_plan_id": "{rate_plan_id}", **fields}


def _per_person(**fields: Any) -> dict[str, Any]:
    return {"property_id": "{property_id}", "rate_plan_id": "{per_person_rate_plan_id}", **fields}


def _availability(**fields: Any) -> dict[str, Any]:
    return {"property_id": "{property_id}", "room_type_id": "{room_type_id}", **fields}


def _warned(value: dict[str, Any], warning: dict[str, list[str]]) -> dict[str, Any]:
    return {"data": [], "meta": {"message": "Success", "warnings": [{**value, "warning": warning}]}}


RANGE = {"filter[property_id]": "{property_id}", "filter[date][gte]": "2026-12-01",
         "filter[date][lte]": "2026-12-10"}
TEN_DAYS = [f"2026-12-{d:02d}" for d in range(1, 11)]

# The docs' warning example (ari, "Warning Notifications"): every field wrong at once.
ALL_WRONG = _restriction(booked=-1, closed_to_arrival=3, closed_to_departure=4, date_from="2026-12-03",
                         date_to="2026-12-05", max_stay=-2, min_stay_arrival=-2, min_stay_through=-1, rate="-2",
                         stop_sell=123)
# The docs' "Validation Error Response" example: nulls sent for fields to clear.
NULLS = _restriction(availability_offset=None, closed_to_arrival=True, closed_to_departure=None,
                     date="2026-12-16", max_stay=None, min_stay_arrival=None, min_stay_through=None, rate=None,
                     stop_sell=None)

CASES: dict[str, dict[str, Any]] = {
    # -- writes: the docs' request bodies, each answered with a task -----------------
    "restrictions: one date, rate in minor units": {
        "request": _write("restrictions", [_restriction(date="2026-12-20", rate=30000)]),
        "status": 200, "body": TASK},
    "restrictions: a date range": {
        "request": _write("restrictions", [_restriction(date_from="2026-12-20", date_to="2026-12-28", rate=30000)]),
        "status": 200, "body": TASK},
    "restrictions: several restrictions in one value": {
        "request": _write("restrictions", [_restriction(
            date_from="2026-12-20", date_to="2027-01-20", rate=30000, min_stay_through=1, closed_to_arrival=True,
            closed_to_departure=True)]),
        "status": 200, "body": TASK},
    "restrictions: several rate plans": {
        "request": _write("restrictions", [
            _restriction(date_from="2026-12-20", date_to="2027-01-20", rate=30000),
            {**_restriction(date_from="2026-12-20", date_to="2027-01-20", rate=30000),
             "rate_plan_id": "{other_rate_plan_id}"}]),
        "status": 200, "body": TASK},
    "restrictions: last wins, with days": {
        "request": _write("restrictions", [
            _restriction(date_from="2027-01-01", date_to="2027-12-31", rate=30000),
            _restriction(date_from="2027-01-01", date_to="2027-12-31", days=["sa", "su"], rate=35000)]),
        "status": 200, "body": TASK},
    "restrictions: rate as a decimal string, flags as 0/1": {
        "request": _write("restrictions", [_restriction(date="2026-12-20", rate="200.00", stop_sell=1,
                                                        closed_to_arrival=0, max_stay=0, min_stay=2)]),
        "status": 200, "body": TASK},
    "restrictions: the docs' multi-occupancy rate plan update": {
        "before": [MAKE_PER_PERSON_PLAN],
        "request": _write("restrictions", [_per_person(date_from="2026-12-19", date_to="2026-12-29", rates=[
            {"occupancy": 1, "rate": 12100}, {"occupancy": 2, "rate": 13200}])]),
        "status": 200, "body": TASK},
    "restrictions: per-person rates as decimal strings, one occupancy, with restrictions": {
        "before": [MAKE_PER_PERSON_PLAN],
        "request": _write("restrictions", [_per_person(date="2026-12-20", rates=[{"occupancy": 1, "rate": "121.00"}],
                                                       stop_sell=False, min_stay_arrival=2)]),
        "status": 200, "body": TASK},
    "availability: one date": {
        "request": _write("availability", [_availability(date="2026-12-20", availability=2)]),
        "status": 200, "body": TASK},
    "availability: a date range": {
        "request": _write("availability", [_availability(date_from="2026-12-20", date_to="2026-12-25",
                                                         availability=2)]),
        "status": 200, "body": TASK},
    "availability: several dates in one call": {
        "request": _write("availability", [_availability(availability=10, date="2026-12-09"),
                                           _availability(availability=11, date="2026-12-10")]),
        "status": 200, "body": TASK},
    # -- refused values: 200, the value echoed with its warning -----------------------
    "warning: the docs' every-field-wrong example": {
        "request": _write("restrictions", [ALL_WRONG]),
        "status": 200, "body": _warned(ALL_WRONG, {
            "booked": ["is not a known field"],  # ours: the docs' example leaves `booked` unwarned
            "closed_to_arrival": ["is invalid"], "closed_to_departure": ["is invalid"],
            "max_stay": ["must be greater than or equal to 0"],
            "min_stay_arrival": ["must be greater than or equal to 1"],
            "min_stay_through": ["must be greater than or equal to 1"], "rate": ["must be greater than 0"],
            "stop_sell": ["is invalid"]})},
    "warning: the docs' nulls example": {
        "request": _write("restrictions", [NULLS]),
        "status": 200, "body": _warned(NULLS, {
            "availability_offset": [NULL], "closed_to_departure": [NULL], "max_stay": [NULL],
            "min_stay_arrival": [NULL], "min_stay_through": [NULL], "rate": [NULL], "stop_sell": [NULL]})},
    "warning: a past date": {
        "ours": "the message",
        "request": _write("restrictions", [_restriction(date="2026-11-21", rate=30000)]),
        "status": 200, "body": _warned(_restriction(date="2026-11-21", rate=30000),
                                       {"date": ["can't be in the past"]})},
    "warning: today is not past": {
        "request": _write("availability", [_availability(date=TODAY, availability=1)]),
        "status": 200, "body": TASK},
    "warning: availability takes no days": {
        "ours": "the message",
        "request": _write("availability", [_availability(date_from="2026-12-01", date_to="2026-12-07",
                                                         days=["mo"], availability=1)]),
        "status": 200, "body": _warned(_availability(date_from="2026-12-01", date_to="2026-12-07", days=["mo"],
                                                     availability=1), {"days": ["is not allowed for availability"]})},
    "warning: availability is required": {
        "request": _write("availability", [_availability(date="2026-12-01")]),
        "status": 200, "body": _warned(_availability(date="2026-12-01"), {"availability": ["can't be blank"]})},
    "warning: availability below 0": {
        "request": _write("availability", [_availability(date="2026-12-01", availability=-1)]),
        "status": 200, "body": _warned(_availability(date="2026-12-01", availability=-1),
                                       {"availability": ["must be greater than or equal to 0"]})},
    "warning: no restriction in the value": {
        "ours": "the message (the docs: 'At least one restriction should be present')",
        "request": _write("restrictions", [_restriction(date="2026-12-01")]),
        "status": 200, "body": _warned(_restriction(date="2026-12-01"),
                                       {"restrictions": ["at least one restriction should be present"]})},
    "warning: a rate plan the property does not have": {
        "ours": "the message",
        "request": _write("restrictions", [{**_restriction(date="2026-12-01", rate=100), "rate_plan_id": "nope"}]),
        "status": 200, "body": _warned({**_restriction(date="2026-12-01", rate=100), "rate_plan_id": "nope"},
                                       {"rate_plan_id": ["not found"]})},
    "warning: date_to before date_from": {
        "ours": "the message",
        "request": _write("availability", [_availability(date_from="2026-12-05", date_to="2026-12-01",
                                                         availability=1)]),
        "status": 200, "body": _warned(_availability(date_from="2026-12-05", date_to="2026-12-01", availability=1),
                                       {"date_to": ["must be on or after date_from"]})},
    "warning: one value refused, the other applied": {
        "request": _write("restrictions", [_restriction(date="2026-12-01", rate="-2"),
                                           _restriction(date="2026-12-01", stop_sell=True)]),
        "status": 200, "body": {"data": [{"id": UUID, "type": "task"}], "meta": {"message": "Success", "warnings": [
            {**_restriction(date="2026-12-01", rate="-2"), "warning": {"rate": ["must be greater than 0"]}}]}}},
    "warning: rates for a per-room plan": {
        "ours": "the message",
        "request": _write("restrictions", [_restriction(date="2026-12-01", rates=[{"occupancy": 1, "rate": 100}])]),
        "status": 200, "body": _warned(_restriction(date="2026-12-01", rates=[{"occupancy": 1, "rate": 100}]),
                                       {"rates": ["multi-occupancy rates are not enabled for this rate plan"]})},
    "warning: an occupancy the per-person plan has no option for": {
        "ours": "the message (the docs: bad entries come back as warnings)",
        "before": [MAKE_PER_PERSON_PLAN],
        "request": _write("restrictions", [_per_person(date="2026-12-01", rates=[{"occupancy": 3, "rate": 100}])]),
        "status": 200, "body": _warned(_per_person(date="2026-12-01", rates=[{"occupancy": 3, "rate": 100}]),
                                       {"rates": ["occupancy 3 is not an option of this rate plan"]})},
    "warning: a per-person rate not above 0": {
        "ours": "the message (`rate`'s words, naming the occupancy)",
        "before": [MAKE_PER_PERSON_PLAN],
        "request": _write("restrictions", [_per_person(date="2026-12-01", rates=[
            {"occupancy": 1, "rate": "-2"}, {"occupancy": 2, "rate": 13200}])]),
        "status": 200, "body": _warned(_per_person(date="2026-12-01", rates=[
            {"occupancy": 1, "rate": "-2"}, {"occupancy": 2, "rate": 13200}]),
            {"rates": ["occupancy 1: rate must be greater than 0"]})},
    "warning: one price for a per-person plan": {
        "ours": "the refusal and its message (which occupancy's price would it be?)",
        "before": [MAKE_PER_PERSON_PLAN],
        "request": _write("restrictions", [_per_person(date="2026-12-01", rate=13200)]),
        "status": 200, "body": _warned(_per_person(date="2026-12-01", rate=13200), {"rate": [
            "is not taken by a per-person rate plan: send rates, a rate per occupancy"]})},
    # -- rate plans: per room or per person (Rate Plans Collection) ---------------------
    "rate plan: per room, as our client creates it": {
        "ours": "the answer's attributes (_created)",
        "request": {"method": "POST", "path": "/api/v1/rate_plans", "body": {"rate_plan": {
            "property_id": "{property_id}", "room_type_id": "{room_type_id}", "title": "Non Refundable"}}},
        "status": 201, "body": _created("rate_plan", {"property_id": "{property_id}", "room_type_id": "{room_type_id}",
                                                      "title": "Non Refundable"})},
    "rate plan: per person, as our client creates it": {
        "ours": "the answer's attributes (_created)",
        "request": {"method": "POST", "path": "/api/v1/rate_plans", "body": {"rate_plan": PER_PERSON_PLAN}},
        "status": 201, "body": _created("rate_plan", PER_PERSON_PLAN)},
    "rate plan: the docs' per-person example": {
        "ours": "the answer's attributes (_created)",
        "request": {"method": "POST", "path": "/api/v1/rate_plans", "body": {"rate_plan": DOCS_PER_PERSON_PLAN}},
        "status": 201, "body": _created("rate_plan", DOCS_PER_PERSON_PLAN)},
    "422: a per-person rate plan without options": {
        "request": {"method": "POST", "path": "/api/v1/rate_plans", "body": {"rate_plan": {
            **PER_PERSON_PLAN, "options": None}}},
        "status": 422, "body": _plan_refused({"options": ["can't be blank"]})},
    "422: a per-person rate plan with two primary options": {
        "ours": "the message",
        "request": {"method": "POST", "path": "/api/v1/rate_plans", "body": {"rate_plan": {
            **PER_PERSON_PLAN,
            "options": [{"occupancy": 1, "is_primary": True}, {"occupancy": 2, "is_primary": True}]}}},
        "status": 422, "body": _plan_refused({"options": ["exactly one option must be primary"]})},
    "422: an occupancy option past 18": {
        "ours": "the message",
        "request": {"method": "POST", "path": "/api/v1/rate_plans", "body": {"rate_plan": {
            **PER_PERSON_PLAN, "options": [{"occupancy": 19, "is_primary": True}]}}},
        "status": 422, "body": _plan_refused({"options": ["option 0: occupancy must be a whole number from 1 to 18"]})},
    "422: a sell mode Channex does not have": {
        "request": {"method": "POST", "path": "/api/v1/rate_plans", "body": {"rate_plan": {
            **PER_PERSON_PLAN, "sell_mode": "per_guest"}}},
        "status": 422, "body": _plan_refused({"sell_mode": ["is invalid"]})},
    # -- a body that is not {"values": [...]} --------------------------------------------
    "422: no values": {
        "request": {"method": "POST", "path": "/api/v1/restrictions", "body": {"value": []}},
        "status": 422, "body": {"errors": {"code": "validation_error", "title": "Validation Error",
                                           "details": {"values": ["can't be blank"]}}}},
    "422: values not a list": {
        "request": {"method": "POST", "path": "/api/v1/availability", "body": {"values": {}}},
        "status": 422, "body": {"errors": {"code": "validation_error", "title": "Validation Error",
                                           "details": {"values": ["is invalid"]}}}},
    "422: the API reference's example, a field left blank": {
        "request": {"method": "POST", "path": "/api/v1/properties", "body": {"property": {"currency": "USD"}}},
        "status": 422, "body": {"errors": {"code": "validation_error", "title": "Validation Error",
                                           "details": {"title": ["can't be blank"]}}}},
    # -- reads -------------------------------------------------------------------------
    "read restrictions: the docs' example": {
        "before": [_write("restrictions", [_restriction(date_from="2026-12-01", date_to="2026-12-10", rate=20000,
                                                        stop_sell=False)])],
        "request": {"method": "GET", "path": "/api/v1/restrictions",
                    "query": {**RANGE, "filter[restrictions]": "rate"}},
        "status": 200, "body": {"data": {"{rate_plan_id}": {day: {"rate": "200.00"} for day in TEN_DAYS}}}},
    "read restrictions: only the fields asked for": {
        "before": [_write("restrictions", [_restriction(date="2026-12-01", rate="120.00", min_stay_arrival=2,
                                                        closed_to_arrival=True)])],
        "request": {"method": "GET", "path": "/api/v1/restrictions",
                    "query": {"filter[property_id]": "{property_id}", "filter[date]": "2026-12-01",
                              "filter[restrictions]": "rate,closed_to_arrival,stop_sell"}},
        "status": 200, "body": {"data": {"{rate_plan_id}": {"2026-12-01": {"rate": "120.00",
                                                                           "closed_to_arrival": True}}}}},
    "read restrictions: a per-person plan": {
        "ours": "the whole answer: Channex documents no read of a per-person plan. `rate` (asked) is the primary "
                "occupancy's price, `rates` every occupancy's held, by occupancy",
        "before": [MAKE_PER_PERSON_PLAN,
                   _write("restrictions", [_per_person(date_from="2026-12-01", date_to="2026-12-02", rates=[
                       {"occupancy": 1, "rate": 12100}, {"occupancy": 2, "rate": 13200}], stop_sell=False),
                       _per_person(date="2026-12-02", rates=[{"occupancy": 1, "rate": "110.00"}])])],
        "request": {"method": "GET", "path": "/api/v1/restrictions",
                    "query": {**RANGE, "filter[restrictions]": "rate,stop_sell"}},
        "status": 200, "body": {"data": {"{per_person_rate_plan_id}": {
            "2026-12-01": {"rate": "132.00", "rates": [{"occupancy": 1, "rate": "121.00"},
                                                       {"occupancy": 2, "rate": "132.00"}], "stop_sell": False},
            "2026-12-02": {"rate": "132.00", "rates": [{"occupancy": 1, "rate": "110.00"},
                                                       {"occupancy": 2, "rate": "132.00"}], "stop_sell": False}}}}},
    "read restrictions: filter[restrictions] is required": {
        "request": {"method": "GET", "path": "/api/v1/restrictions", "query": RANGE},
        "status": 400, "body": {"errors": {"code": "bad_request", "title": "Bad Request",
                                           "details": ["restrictions is required"]}}},
    "read availability: the docs' example": {
        "before": [_write("availability", [_availability(date_from="2026-12-01", date_to="2026-12-10",
                                                         availability=20)])],
        "request": {"method": "GET", "path": "/api/v1/availability", "query": RANGE},
        "status": 200, "body": {"data": {"{room_type_id}": {day: 20 for day in TEN_DAYS}}}},
    "read availability: one date": {
        "before": [_write("availability", [_availability(date="2026-12-01", availability=3)])],
        "request": {"method": "GET", "path": "/api/v1/availability",
                    "query": {"filter[property_id]": "{property_id}", "filter[date]": "2026-12-01"}},
        "status": 200, "body": {"data": {"{room_type_id}": {"2026-12-01": 3}}}},
    "read availability: date is required": {
        "request": {"method": "GET", "path": "/api/v1/availability",
                    "query": {"filter[property_id]": "{property_id}"}},
        "status": 400, "body": {"errors": {"code": "bad_request", "title": "Bad Request",
                                           "details": ["date is required"]}}},
    # -- 401 -----------------------------------------------------------------------------
    **{f"401: {method} {path}": {"key": "wrong", "request": {"method": method, "path": path, "body": body},
                                 "status": 401, "body": UNAUTHORIZED}
       for method, path, body in (
           ("POST", "/api/v1/restrictions", {"values": []}), ("POST", "/api/v1/availability", {"values": []}),
           ("GET", "/api/v1/restrictions", None), ("GET", "/api/v1/availability", None),
           ("GET", "/api/v1/booking_revisions/feed", None), ("POST", "/api/v1/booking_revisions/x/ack", None),
           ("GET", "/_sandbox/stats", None))},
    "401: no key at all": {
        "key": None, "request": {"method": "GET", "path": "/api/v1/booking_revisions/feed"},
        "status": 401, "body": UNAUTHORIZED},
    # -- 429: the 11th restrictions call of a minute for a property ---------------------
    "429: restrictions, the 11th call in a minute": {
        "before": [_write("restrictions", [_restriction(date="2026-12-01", rate=100 + n)]) for n in range(10)],
        "request": _write("restrictions", [_restriction(date="2026-12-01", rate=500)]),
        "status": 429, "body": TOO_MANY, "absent_headers": ["retry-after"]},
    "429: availability, the 11th call in a minute": {
        "before": [_write("availability", [_availability(date="2026-12-01", availability=n)]) for n in range(10)],
        "request": _write("availability", [_availability(date="2026-12-01", availability=5)]),
        "status": 429, "body": TOO_MANY, "absent_headers": ["retry-after"]},
    "429: our own read budget, the 11th read in a minute": {
        "ours": "the budget (Channex documents none for reads)",
        "before": [{"method": "GET", "path": "/api/v1/availability", "query": RANGE} for _ in range(10)],
        "request": {"method": "GET", "path": "/api/v1/availability", "query": RANGE},
        "status": 429, "body": TOO_MANY, "absent_headers": ["retry-after"]},
    # -- bookings ------------------------------------------------------------------------
    "feed: empty": {
        "request": {"method": "GET", "path": "/api/v1/booking_revisions/feed",
                    "query": {"filter[property_id]": "{property_id}", "order[inserted_at]": "asc"}},
        "status": 200, "body": {"data": [], "meta": {"total": 0, "page": 1, "limit": 10}}},
    "feed: one revision": {
        "before": [MAKE_BOOKING],
        "request": {"method": "GET", "path": "/api/v1/booking_revisions/feed",
                    "query": {"filter[property_id]": "{property_id}", "order[inserted_at]": "asc",
                              "pagination[page]": "1", "pagination[limit]": "10"}},
        "status": 200, "body": {"data": [{"type": "booking_revision", "id": "{revision_id}", "attributes": ANY}],
                                "meta": {"total": 1, "page": 1, "limit": 10}}},
    "revision: one, by id": {
        "before": [MAKE_BOOKING],
        "request": {"method": "GET", "path": "/api/v1/booking_revisions/{revision_id}"},
        "status": 200, "body": {"data": {"type": "booking_revision", "id": "{revision_id}", "attributes": ANY}}},
    "revision: 404": {
        "request": {"method": "GET", "path": "/api/v1/booking_revisions/03dd7198-c5b7-493c-a889-74d0c2211de7"},
        "status": 404, "body": NOT_FOUND},
    "ack: 200": {
        "before": [MAKE_BOOKING],
        "request": {"method": "POST", "path": "/api/v1/booking_revisions/{revision_id}/ack"},
        "status": 200, "body": ACK_SUCCESS},
    "ack: then the feed is empty": {
        "before": [MAKE_BOOKING, {"method": "POST", "path": "/api/v1/booking_revisions/{revision_id}/ack"}],
        "request": {"method": "GET", "path": "/api/v1/booking_revisions/feed",
                    "query": {"filter[property_id]": "{property_id}"}},
        "status": 200, "body": {"data": [], "meta": {"total": 0, "page": 1, "limit": 10}}},
    "ack: 404": {
        "request": {"method": "POST", "path": "/api/v1/booking_revisions/03dd7198-c5b7-493c-a889-74d0c2211de7/ack"},
        "status": 404, "body": NOT_FOUND},
}

# The docs' webhook payload for a new booking revision (Webhook Collection, "Booking").
BOOKING_WEBHOOK_KEYS = frozenset({"event", "payload", "property_id", "user_id", "timestamp"})
BOOKING_WEBHOOK_PAYLOAD_KEYS = frozenset({"booking_id", "property_id", "revision_id"})
