"""Our client against Channex's documented answers (channex_cases.py): the same cases
that pin the sandbox are fed to the client as the channel manager's answers, so the two
cannot drift apart together. Each answer must be read as what it is: a 200's task ids and
refused values, a grid, a revision, or the failure its status says."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from datetime import date
from typing import Any

import httpx
import pytest

from connectapi.channel.client import (
    ChannelManagerClient,
    ChannelManagerError,
    Feed,
    MalformedAnswer,
    PushAnswer,
    Rejected,
    Throttled,
)
from tests.channex_documented import BOOKING_COM_NEW, as_revision

from .channex_cases import ANY, CASES, UUID
from .sandbox import fill

KEY = "client-contract-key-0123456789"
NAMES = {"property_id": "716305c4-561a-4561-a187-7f5b8aeb5920", "room_type_id": "994d1375-dbbd-4072-8724-b2ab32ce781b",
         "other_room_type_id": "1a8fe3f5-4b53-4a4f-9f43-5e0d0b1c2d3e",
         "rate_plan_id": "bab451e7-9ab1-4cc6-b803-b18bb68f8e24",
         "other_rate_plan_id": "2c9c3a52-7d6e-4b71-8f1a-0c3e5d7f9a1b",
         "per_person_rate_plan_id": "5b1d7c3e-2f4a-4e8b-9c6d-0a1b2c3d4e5f",
         "revision_id": "5ea0ac5f-ca4c-42d4-a1e5-ba42e7ecb58b"}
REQUEST_ID = "0b5c1e2a-7f3d-4a6b-9c8e-1d2f3a4b5c6d"
Call = Callable[[ChannelManagerClient], Awaitable[Any]]


def concrete(template: Any) -> Any:
    """A case's answer as a channel manager would send it: names filled in, "<uuid>" a
    fresh id, "<any>" (a revision's attributes) the documented Booking.com revision."""
    if template == UUID:
        return str(uuid.uuid4())
    if template == ANY:
        return as_revision(BOOKING_COM_NEW, NAMES["revision_id"], "2026-11-22T10:00:00.000000")
    if isinstance(template, dict):
        return {k: concrete(v) for k, v in template.items()}
    if isinstance(template, list):
        return [concrete(v) for v in template]
    return template


def calling(case: dict[str, Any]) -> Call | None:
    """The client method that makes this case's request, or None (a route we do not call)."""
    request = fill(case["request"], NAMES)
    method, path, query = request["method"], request["path"], request.get("query") or {}
    if method == "POST" and path == "/api/v1/rate_plans":
        plan = request["body"]["rate_plan"]
        options = plan.get("options") if plan.get("sell_mode") == "per_person" else None
        occupancies = [option["occupancy"] for option in options] if isinstance(options, list) else None
        return lambda client: client.create_rate_plan(plan["property_id"], plan["room_type_id"], plan["title"],
                                                      occupancies)
    # Our client always sends a list of values; the answer is what the case is about.
    if method == "POST" and path == "/api/v1/availability":
        return lambda client: client.push_availability([])
    if method == "POST" and path == "/api/v1/restrictions":
        return lambda client: client.push_restrictions([])
    if method == "GET" and path in ("/api/v1/availability", "/api/v1/restrictions"):
        pid = query.get("filter[property_id]", NAMES["property_id"])
        day = date(2026, 12, 1)
        if path.endswith("availability"):
            return lambda client: client.read_availability(pid, day, day)
        return lambda client: client.read_restrictions(pid, day, day)
    if method == "GET" and path == "/api/v1/booking_revisions/feed":
        return lambda client: client.booking_feed(query.get("filter[property_id]"), max_pages=1)
    if method == "GET" and path.startswith("/api/v1/booking_revisions/"):
        return lambda client: client.booking_revision(path.rsplit("/", 1)[1])
    if method == "POST" and path.endswith("/ack"):
        return lambda client: client.ack_booking_revision(path.split("/")[-2])
    return None


CLIENT_CASES = sorted(name for name, case in CASES.items() if calling(case) is not None)


async def answered(case: dict[str, Any], call: Call) -> tuple[Any, dict[str, Any]]:
    body = concrete(fill(case["body"], NAMES))

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(case["status"], content=json.dumps(body).encode(),
                              headers={"content-type": "application/json", "x-request-id": REQUEST_ID})

    async with httpx.AsyncClient(base_url="http://channex.test", headers={"user-api-key": KEY},
                                 transport=httpx.MockTransport(answer)) as http:
        try:
            return await call(ChannelManagerClient(http)), body
        except ChannelManagerError as exc:
            return exc, body


def test_the_client_calls_the_documented_routes() -> None:
    assert len(CLIENT_CASES) >= 30  # every write, read, feed and acknowledgement case


@pytest.mark.parametrize("name", CLIENT_CASES)
async def test_the_client_reads_the_documented_answer(name: str) -> None:
    case = CASES[name]
    call = calling(case)
    assert call is not None
    found, body = await answered(case, call)
    status = case["status"]
    if status == 429:
        assert isinstance(found, Throttled) and found.retry_after is None  # Channex sends none: a minute
        assert found.request_id == REQUEST_ID
    elif status >= 400:
        assert isinstance(found, Rejected) and found.status == status, found
        assert found.request_id == REQUEST_ID and f"x-request-id {REQUEST_ID}" in str(found)
        if status == 404:
            assert "Resouce Not Found" in str(found)  # Channex's own spelling
    elif isinstance(found, PushAnswer):
        # A warning is not success: every refused value comes back, tied to its value.
        assert found.task_ids == tuple(item["id"] for item in body.get("data") or [])
        warnings = body["meta"].get("warnings", [])
        assert [(r.value, r.fields) for r in found.refusals] == [
            ({k: v for k, v in w.items() if k != "warning"}, w["warning"]) for w in warnings]
        assert found.request_id == REQUEST_ID
    elif isinstance(found, Feed):
        assert [r["id"] for r in found.revisions] == [item["id"] for item in body["data"]]
        assert found.complete
    elif found is None:
        assert name.startswith("ack")  # an acknowledgement: nothing but success
    elif isinstance(found, str):
        assert found == body["data"]["id"]  # a rate plan created
    elif "booking_revisions" in case["request"]["path"]:
        assert found == body["data"]["attributes"]
    else:  # a grid: every entity and night as answered, fields as documented
        assert set(found) == set(body["data"])
        for entity, nights in body["data"].items():
            assert set(found[entity]) == set(nights)
            for night, held in nights.items():
                assert found[entity][night] == held


async def test_the_documented_availability_success_without_data_is_read() -> None:
    """Channex's availability route may answer `{"meta": {"message": "Success"}}` alone."""
    from .channex_cases import AVAILABILITY_DOCUMENTED_SUCCESS
    case = {"status": 200, "body": AVAILABILITY_DOCUMENTED_SUCCESS}
    found, _ = await answered(case, lambda client: client.push_availability([]))
    assert found == PushAnswer((), (), REQUEST_ID)


# -- per-person rate plans (issue 44) -------------------------------------------------------

async def sent_and_answered(call: Call, status: int, answer_body: Any) -> tuple[list[httpx.Request], Any]:
    """The requests `call` made, and what it returned or raised, against one fixed answer."""
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(status, json=answer_body, headers={"x-request-id": REQUEST_ID})

    async with httpx.AsyncClient(base_url="http://channex.test", headers={"user-api-key": KEY},
                                 transport=httpx.MockTransport(answer)) as http:
        try:
            return sent, await call(ChannelManagerClient(http))
        except ChannelManagerError as exc:
            return sent, exc


@pytest.mark.parametrize("name", ["rate plan: per room, as our client creates it",
                                  "rate plan: per person, as our client creates it"])
async def test_the_client_creates_rate_plans_as_the_cases_the_sandbox_takes(name: str) -> None:
    case = CASES[name]
    call = calling(case)
    assert call is not None
    sent, found = await sent_and_answered(call, case["status"], concrete(fill(case["body"], NAMES)))
    assert isinstance(found, str)
    assert json.loads(sent[0].content) == fill(case["request"]["body"], NAMES)


CREATED_PLAN = {"data": {"type": "rate_plan", "id": NAMES["rate_plan_id"], "attributes": {}}}


async def test_a_per_room_plan_is_created_with_the_body_it_always_had() -> None:
    sent, found = await sent_and_answered(
        lambda client: client.create_rate_plan(NAMES["property_id"], NAMES["room_type_id"], "Flexible"), 201,
        CREATED_PLAN)
    assert found == NAMES["rate_plan_id"]
    (request,) = sent
    # byte for byte what the client sent before per-person plans
    assert request.content == httpx.Request("POST", "http://channex.test", json={"rate_plan": {
        "property_id": NAMES["property_id"], "room_type_id": NAMES["room_type_id"], "title": "Flexible"}}).content


async def test_a_per_person_plan_is_created_with_an_option_per_occupancy_the_largest_primary() -> None:
    sent, found = await sent_and_answered(
        lambda client: client.create_rate_plan(NAMES["property_id"], NAMES["room_type_id"], "Per person", [3, 1, 2]),
        201, CREATED_PLAN)
    assert found == NAMES["rate_plan_id"]
    assert json.loads(sent[0].content) == {"rate_plan": {
        "property_id": NAMES["property_id"], "room_type_id": NAMES["room_type_id"], "title": "Per person",
        "sell_mode": "per_person", "options": [{"occupancy": 1, "is_primary": False},
                                               {"occupancy": 2, "is_primary": False},
                                               {"occupancy": 3, "is_primary": True}]}}
    with pytest.raises(ValueError):
        await sent_and_answered(lambda client: client.create_rate_plan("p", "r", "None", []), 201, CREATED_PLAN)


async def read_fields(fields: dict[str, Any]) -> Any:
    """What read_restrictions makes of `fields` answered for plan-1 on 2026-12-01."""
    day = date(2026, 12, 1)
    _, found = await sent_and_answered(lambda client: client.read_restrictions(NAMES["property_id"], day, day), 200,
                                       {"data": {"plan-1": {"2026-12-01": fields}}})
    return found


async def test_a_per_person_nights_rates_are_read_as_answered() -> None:
    rates = [{"occupancy": 1, "rate": "121.00"}, {"occupancy": 2, "rate": "132.00"}]
    assert await read_fields({"rate": "132.00", "rates": rates, "stop_sell": False}) == {
        "plan-1": {"2026-12-01": {"rate": "132.00", "rates": rates, "stop_sell": False}}}
    # only occupancy and rate are kept of an entry; null is "not shown", as for any field
    assert await read_fields({"rates": [{"occupancy": 1, "rate": "121.00", "derived": True}]}) == {
        "plan-1": {"2026-12-01": {"rates": [{"occupancy": 1, "rate": "121.00"}]}}}
    assert await read_fields({"rate": "1.00", "rates": None}) == {"plan-1": {"2026-12-01": {"rate": "1.00"}}}
    assert await read_fields({"rates": []}) == {"plan-1": {"2026-12-01": {"rates": []}}}


WHERE = "data.plan-1.2026-12-01.rates"
RATES_WRONG: list[tuple[Any, str]] = [
    ({"occupancy": 1, "rate": "1.00"}, f"{WHERE} is an object, not a list"),
    ("121.00", f"{WHERE} is a string, not a list"),
    ([5], f"{WHERE}[0] is a whole number, not an object"),
    ([None], f"{WHERE}[0] is null, not an object"),
    ([{"rate": "1.00"}], f"{WHERE}[0].occupancy is missing"),
    ([{"occupancy": 1}], f"{WHERE}[0].rate is missing"),
    ([{"occupancy": "1", "rate": "1.00"}], f"{WHERE}[0].occupancy is a string, not a whole number"),
    ([{"occupancy": 1.0, "rate": "1.00"}], f"{WHERE}[0].occupancy is a number, not a whole number"),
    ([{"occupancy": True, "rate": "1.00"}], f"{WHERE}[0].occupancy is a boolean, not a whole number"),
    ([{"occupancy": 0, "rate": "1.00"}], f"{WHERE}[0].occupancy is a whole number out of range"),
    ([{"occupancy": 19, "rate": "1.00"}], f"{WHERE}[0].occupancy is a whole number out of range"),
    ([{"occupancy": 1, "rate": 12100}], f"{WHERE}[0].rate is a whole number, not a decimal string"),
    ([{"occupancy": 1, "rate": None}], f"{WHERE}[0].rate is null, not a decimal string"),
    ([{"occupancy": 1, "rate": "-1.00"}], f"{WHERE}[0].rate is not a decimal string (like 120.00)"),
    ([{"occupancy": 1, "rate": "NaN"}], f"{WHERE}[0].rate is not a decimal string (like 120.00)"),
    ([{"occupancy": 1, "rate": "1e3"}], f"{WHERE}[0].rate is not a decimal string (like 120.00)"),
    ([{"occupancy": 1, "rate": "1.00"}, {"occupancy": 1, "rate": "2.00"}], f"{WHERE}[1].occupancy is one given before"),
]


@pytest.mark.parametrize(("rates", "said"), RATES_WRONG,
                         ids=[f"{index}{said.removeprefix(WHERE)}" for index, (_, said) in enumerate(RATES_WRONG)])
async def test_rates_are_read_as_strictly_as_a_rate(rates: Any, said: str) -> None:
    found = await read_fields({"rate": "1.00", "rates": rates})
    assert isinstance(found, MalformedAnswer) and said in str(found), found


# -- a 200 that does not say its values were applied (an outside review, wave 4) ------------

PUSHED = {"property_id": "p", "rate_plan_id": "rp", "date": "2026-12-01", "rate": "120.00"}


@pytest.mark.parametrize("body", [
    {"errors": {"code": "validation_error", "title": "Validation Error", "details": {"rate": ["is invalid"]}}},
    {},
    {"data": [], "errors": {"code": "bad_request", "title": "Bad Request", "details": ["values is invalid"]}},
    {"data": [], "meta": {"message": "Success"}},  # none applied, none said refused
    {"data": [], "meta": {"message": "Success", "warnings": [{**PUSHED, "warning": {"rate": ["is invalid"]}}]}},
])
async def test_a_200_that_does_not_say_every_value_was_applied_or_refused_is_not_success(body: Any) -> None:
    # Two values sent: read as success, the cells would be marked pushed while the channel
    # holds neither. Unreadable, they stay to push (the property backs off and tries again).
    _, got = await sent_and_answered(lambda client: client.push_restrictions([PUSHED, PUSHED]), 200, body)
    assert isinstance(got, MalformedAnswer), f"read as success: {got!r}"
    assert got.request_id == REQUEST_ID


async def test_a_200_that_applied_nothing_and_refused_every_value_is_read() -> None:
    warned = {**PUSHED, "warning": {"rate": ["must be greater than 0"]}}
    body = {"data": [], "meta": {"message": "Success", "warnings": [warned, warned]}}
    _, got = await sent_and_answered(lambda client: client.push_restrictions([PUSHED, PUSHED]), 200, body)
    assert isinstance(got, PushAnswer) and got.task_ids == () and len(got.refusals) == 2
