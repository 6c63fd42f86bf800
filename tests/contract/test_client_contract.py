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
