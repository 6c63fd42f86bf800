"""Whatever the channel manager answers, the client returns a value of the declared type or
raises a ChannelManagerError (issue 15): over httpx.MockTransport, no sockets."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import date
from decimal import Decimal
from typing import Any, get_args

import httpx
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectapi.channel.client import (
    ChannelManagerClient,
    ChannelManagerError,
    Feed,
    PushAnswer,
    Refusal,
    MalformedAnswer,
    Rejected,
    Throttled,
    Unavailable,
    retry_after_seconds,
)
from connectapi.channel.sandbox.state import FAULT_MODES
from connectapi.domain.admin_models import SandboxFaultsIn

from ..examples import examples

KEY = "cm-secret-key-0123456789abcdef"
Call = Callable[[ChannelManagerClient], Awaitable[Any]]
Answer = Callable[[httpx.Request], httpx.Response]


# -- the declared types, as callers rely on them -------------------------------------------

def is_id(found: Any) -> bool:
    return isinstance(found, str) and found != ""


def is_warnings(found: Any) -> bool:
    return isinstance(found, PushAnswer) and all(isinstance(t, str) for t in found.task_ids) and all(
        isinstance(r, Refusal) and isinstance(r.value, dict) and all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(m, str) for m in v)
            for k, v in r.fields.items()) for r in found.refusals)


def is_availability(found: Any) -> bool:
    return isinstance(found, dict) and all(
        isinstance(entity, str) and isinstance(nights, dict)
        and all(isinstance(day, str) and type(count) is int for day, count in nights.items())
        for entity, nights in found.items())


def _is_rate(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    rate = Decimal(text)  # what the reconciler does; raises if it cannot
    if not rate.is_finite():
        return False
    int(rate * 1000)  # what the admin channel-grid does
    return True


def _is_restriction_fields(fields: Any) -> bool:
    if not isinstance(fields, dict) or not set(fields) <= {
            "rate", "rates", "min_stay_arrival", "min_stay_through", "max_stay", "closed_to_arrival",
            "closed_to_departure", "stop_sell"}:
        return False
    if "rate" in fields and not _is_rate(fields["rate"]):
        return False
    if "rates" in fields:  # a per-person plan's: [{occupancy, rate}], each occupancy once
        held = fields["rates"]
        if not isinstance(held, list) or not all(
                isinstance(e, dict) and set(e) == {"occupancy", "rate"} and type(e["occupancy"]) is int
                and 1 <= e["occupancy"] <= 18 and _is_rate(e["rate"]) for e in held):
            return False
        if len({e["occupancy"] for e in held}) != len(held):
            return False
    return all(type(fields[name]) is int for name in ("min_stay_arrival", "min_stay_through", "max_stay")
               if name in fields) and all(type(fields[name]) is bool for name in (
                   "closed_to_arrival", "closed_to_departure", "stop_sell") if name in fields)


def is_restrictions(found: Any) -> bool:
    return isinstance(found, dict) and all(
        isinstance(plan, str) and isinstance(nights, dict)
        and all(isinstance(day, str) and _is_restriction_fields(fields) for day, fields in nights.items())
        for plan, nights in found.items())


def is_feed(found: Any) -> bool:
    return (isinstance(found, Feed) and isinstance(found.complete, bool) and isinstance(found.revisions, list)
            and all(isinstance(r, dict) for r in found.revisions))


def is_revision(found: Any) -> bool:
    return isinstance(found, dict)


def is_none(found: Any) -> bool:
    return found is None


VALUE = {"property_id": "p", "room_type_id": "r", "date_from": "2026-12-01", "date_to": "2026-12-01",
         "availability": 1}
METHODS: dict[str, tuple[Call, Callable[[Any], bool]]] = {
    "create_property": (lambda c: c.create_property("Casa", "EUR"), is_id),
    "create_room_type": (lambda c: c.create_room_type("p", "Double", 2), is_id),
    "create_rate_plan": (lambda c: c.create_rate_plan("p", "r", "Flex"), is_id),
    "push_availability": (lambda c: c.push_availability([VALUE]), is_warnings),
    "push_restrictions": (lambda c: c.push_restrictions([VALUE]), is_warnings),
    "read_availability": (lambda c: c.read_availability("p", date(2026, 12, 1), date(2026, 12, 2)),
                          is_availability),
    "read_restrictions": (lambda c: c.read_restrictions("p", date(2026, 12, 1), date(2026, 12, 2)),
                          is_restrictions),
    "booking_feed": (lambda c: c.booking_feed(max_pages=3), is_feed),
    "booking_revision": (lambda c: c.booking_revision("rev-1"), is_revision),
    "ack_booking_revision": (lambda c: c.ack_booking_revision("rev-1"), is_none),
}
READING = [name for name in METHODS if name != "ack_booking_revision"]  # the ack reads no body


def answering(status: int, content: bytes, content_type: str | None = "application/json",
              headers: dict[str, str] | None = None) -> Answer:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["user-api-key"] == KEY
        given = dict(headers or {})
        if content_type is not None:
            given["content-type"] = content_type
        # as bytes: a header may hold any latin-1 character ("²" included)
        return httpx.Response(status, content=content,
                              headers=[(name.encode(), value.encode("latin-1")) for name, value in given.items()])
    return answer


async def call(name: str, answer: Answer) -> Any:
    async with httpx.AsyncClient(base_url="http://cm.test", headers={"user-api-key": KEY},
                                 transport=httpx.MockTransport(answer), follow_redirects=False) as http:
        return await METHODS[name][0](ChannelManagerClient(http))


async def failure(name: str, answer: Answer) -> ChannelManagerError:
    with pytest.raises(ChannelManagerError) as info:
        await call(name, answer)
    assert KEY not in str(info.value) and KEY not in repr(info.value)
    return info.value


def body(value: Any) -> bytes:
    return json.dumps(value).encode()


# -- a table of answers no method can read ------------------------------------------------

HTML = b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"
DEEP = b"[" * 100_000 + b"]" * 100_000
ITEMS = ("booking_feed", "booking_revision")  # answers of items each read on its own
UNREADABLE: list[tuple[str, bytes, str | None, str]] = [  # id, body, content type, what the message says
    ("html", HTML, "text/html; charset=utf-8", "a 200 that is not JSON (text/html)"),
    ("text", b"all good", "text/plain", "a 200 that is not JSON (text/plain)"),
    ("no content type", b"{oops", None, "a 200 that is not JSON (no content type)"),
    ("empty", b"", "application/json", "a 200 with an empty body"),
    ("blank", b"  \r\n", "application/json", "a 200 with an empty body"),
    ("deeply nested", DEEP, "application/json", "a 200 that is not JSON"),
    ("deeply nested data", b'{"data": ' + DEEP + b"}", "application/json", "a 200 that is not JSON"),
    ("a number too long to read", b'{"data": ' + b"9" * 5000 + b"}", "application/json",
     "a 200 that is not JSON"),
    ("NaN", b'{"data": NaN}', "application/json", "a 200 that is not JSON"),
    ("not UTF-8", b'{"data": "\xff\xfe\xfa"}', "application/json", "a 200 that is not JSON"),
    ("a list", b"[]", "application/json", "a 200 whose body is a list, not an object"),
    ("a string", b'"text"', "application/json", "a 200 whose body is a string, not an object"),
    ("a number", b"5", "application/json", "a 200 whose body is a whole number, not an object"),
    ("null", b"null", "application/json", "a 200 whose body is null, not an object"),
]


@pytest.mark.parametrize("name", READING)
@pytest.mark.parametrize(("content", "content_type", "said"), [case[1:] for case in UNREADABLE],
                         ids=[case[0] for case in UNREADABLE])
async def test_an_answer_that_is_not_the_json_asked_for_is_a_malformed_answer(
        name: str, content: bytes, content_type: str | None, said: str) -> None:
    found = await failure(name, answering(200, content, content_type))
    assert isinstance(found, MalformedAnswer) and isinstance(found, Unavailable)  # backed off like a 5xx
    if name in ITEMS and said == "a 200 that is not JSON" and (b"9999" in content or b"NaN" in content):
        # A list of items reads a number no one can hold as its text, for its item to fail
        # alone: here, where `data` itself is one, the answer's shape is what fails.
        said = "whose data is a string"
    assert found.status == 200 and said in str(found), str(found)
    assert len(str(found)) <= 300


# -- per method: JSON of the wrong shape or type -------------------------------------------

WRONG: dict[str, list[tuple[Any, str]]] = {
    "create_property": [
        ({}, "whose data is missing"),
        ({"data": 5}, "whose data is a whole number, not an object"),
        ({"data": []}, "whose data is a list, not an object"),
        ({"data": {}}, "whose data.id is missing"),
        ({"data": {"id": 5}}, "whose data.id is a whole number, not a string"),
        ({"data": {"id": 1e400}}, "a 200 that is not JSON"),  # Infinity
        ({"data": {"id": None}}, "whose data.id is null, not a string"),
        ({"data": {"id": ""}}, "whose data.id is not an id"),
        ({"data": {"id": "x" * 65}}, "whose data.id is not an id"),
        ({"data": {"id": "../../admin"}}, "whose data.id is not an id"),
        ({"data": {"id": ["a"]}}, "whose data.id is a list, not a string"),
    ],
    "push_availability": [
        ({"meta": 5}, "whose meta is a whole number, not an object"),
        ({"meta": []}, "whose meta is a list, not an object"),
        ({"meta": {"warnings": 7}}, "whose meta.warnings is a whole number, not a list"),
        ({"meta": {"warnings": "values[0]: bad"}}, "whose meta.warnings is a string, not a list"),
        ({"meta": {"warnings": {"0": "bad"}}}, "whose meta.warnings is an object, not a list"),
        ({"data": {"id": "t"}}, "whose data is an object, not a list"),
        ({"data": [{"type": "task"}]}, "whose data[0].id is missing"),
        ({"data": [{"id": "a/b"}]}, "whose data[0].id is not an id"),
    ],
    "read_availability": [
        ({}, "whose data is missing"),
        ({"data": 5}, "whose data is a whole number, not an object"),
        ({"data": "room"}, "whose data is a string, not an object"),
        ({"data": {"room-1": 5}}, "whose data.room-1 is a whole number, not an object"),
        ({"data": {"room-1": {"2026-12-01": "5"}}}, "whose data.room-1.2026-12-01 is a string, not a whole number"),
        ({"data": {"room-1": {"2026-12-01": 5.0}}}, "is a number, not a whole number"),
        ({"data": {"room-1": {"2026-12-01": True}}}, "is a boolean, not a whole number"),
        ({"data": {"room-1": {"2026-12-01": None}}}, "is null, not a whole number"),
        ({"data": {"room-1": {"2026-12-01": 10**30}}}, "is a whole number out of range"),
        ({"data": {"room-1": {"tomorrow": 5}}}, "whose data.room-1.tomorrow is not a date"),
        ({"data": {"room-1": {"2026-02-30": 5}}}, "is not a date"),
        ({"data": {"room 1 \u0000": {"2026-12-01": "x"}}}, "whose data.<a key>.2026-12-01 is a string"),
    ],
    "read_restrictions": [
        ({}, "whose data is missing"),
        ({"data": {"plan-1": {"2026-12-01": 5}}}, "whose data.plan-1.2026-12-01 is a whole number, not an object"),
        ({"data": {"plan-1": {"2026-12-01": {"rate": 120}}}}, "rate is a whole number, not a decimal string"),
        ({"data": {"plan-1": {"2026-12-01": {"rate": 120.5}}}}, "rate is a number, not a decimal string"),
        ({"data": {"plan-1": {"2026-12-01": {"rate": "NaN"}}}}, "rate is not a decimal string"),
        ({"data": {"plan-1": {"2026-12-01": {"rate": "Infinity"}}}}, "rate is not a decimal string"),
        ({"data": {"plan-1": {"2026-12-01": {"rate": "1e999999"}}}}, "rate is not a decimal string"),
        ({"data": {"plan-1": {"2026-12-01": {"rate": "9" * 40}}}}, "rate is not a decimal string"),
        ({"data": {"plan-1": {"2026-12-01": {"rate": "-5.00"}}}}, "rate is not a decimal string"),
        ({"data": {"plan-1": {"2026-12-01": {"rate": "١٢٠"}}}}, "rate is not a decimal string"),
        ({"data": {"plan-1": {"2026-12-01": {"rate": ""}}}}, "rate is not a decimal string"),
        ({"data": {"plan-1": {"2026-12-01": {"stop_sell": 1}}}}, "stop_sell is a whole number, not a boolean"),
        ({"data": {"plan-1": {"2026-12-01": {"closed_to_arrival": "false"}}}},
         "closed_to_arrival is a string, not a boolean"),
        ({"data": {"plan-1": {"2026-12-01": {"min_stay_arrival": "2"}}}},
         "min_stay_arrival is a string, not a whole number"),
        ({"data": {"plan-1": {"2026-12-01": {"max_stay": -1}}}}, "max_stay is a whole number out of range"),
        ({"data": {"plan-1": {"2026-12-01": {"min_stay_through": 2.5}}}}, "is a number, not a whole number"),
    ],
    "booking_feed": [
        ({}, "whose data is missing"),
        ({"data": {}}, "whose data is an object, not a list"),
        ({"data": "revisions"}, "whose data is a string, not a list"),
        ({"data": [], "meta": 5}, "whose meta is a whole number, not an object"),
        ({"data": [], "meta": {"total": "3"}}, "whose meta.total is a string, not a whole number"),
        ({"data": [], "meta": {"total": -1}}, "whose meta.total is a whole number out of range"),
        ({"data": [], "meta": {"total": 3, "limit": 0}}, "whose meta.limit is a whole number out of range"),
        ({"data": [], "meta": {"total": 3, "limit": 2.5}}, "whose meta.limit is a number, not a whole number"),
    ],
    "booking_revision": [
        ({}, "whose data is missing"),
        ({"data": []}, "whose data is a list, not an object"),
        ({"data": {"id": "rev-1"}}, "whose data.attributes is missing"),
        ({"data": {"attributes": "new"}}, "whose data.attributes is a string, not an object"),
        ({"data": {"attributes": {"id": "rev\u0000"}}}, "whose data.attributes hold text the record cannot keep"),
    ],
}
WRONG["create_room_type"] = WRONG["create_rate_plan"] = WRONG["create_property"]
WRONG["push_restrictions"] = WRONG["push_availability"]
WRONG_CASES = [(name, value, said) for name, cases in WRONG.items() for value, said in cases]


@pytest.mark.parametrize(("name", "value", "said"), WRONG_CASES,
                         ids=[f"{name}-{index}" for index, (name, _, _) in enumerate(WRONG_CASES)])
async def test_json_of_the_wrong_shape_or_type_is_a_malformed_answer(name: str, value: Any, said: str) -> None:
    found = await failure(name, answering(200, body(value)))
    assert isinstance(found, MalformedAnswer) and said in str(found), str(found)


# -- what is read, as it is read ----------------------------------------------------------

async def test_answers_of_the_right_shape_are_read_as_declared() -> None:
    assert await call("create_property", answering(201, body({"data": {"id": "9f0c-1", "type": "property"}}))) \
        == "9f0c-1"
    assert await call("push_availability", answering(200, body({"data": [{"id": "t", "type": "task"}]}))) \
        == PushAnswer(("t",), ())
    # The availability route may answer its meta alone: applied, no task id to keep.
    assert await call("push_availability", answering(200, body({"meta": {"message": "Success"}}))) \
        == PushAnswer((), ())
    warned = await call("push_restrictions", answering(200, body({"data": [], "meta": {"warnings": [
        "values[0]: rate must be positive", {"date": "2026-12-01", "rate": "-2", "warning": {"rate": ["is invalid"]}},
        None]}})))
    assert warned == PushAnswer((), (Refusal({}, {"value": ["values[0]: rate must be positive"]}),
                                     Refusal({"date": "2026-12-01", "rate": "-2"}, {"rate": ["is invalid"]}),
                                     Refusal({}, {"value": ["null"]})))
    assert await call("read_availability", answering(200, body({"data": {
        "room-1": {"2026-12-01": 3, "2026-12-02": 0}, "room-2": []}}))) == {
        "room-1": {"2026-12-01": 3, "2026-12-02": 0}, "room-2": {}}
    assert await call("read_availability", answering(200, body({"data": []}))) == {}
    held = await call("read_restrictions", answering(200, body({"data": {"plan-1": {"2026-12-01": {
        "rate": "120.00", "stop_sell": False, "min_stay_arrival": 2, "max_stay": None, "max_sold": 4}}}})))
    # null is "not shown" (the neutral value); fields we do not know are left out
    assert held == {"plan-1": {"2026-12-01": {"rate": "120.00", "stop_sell": False, "min_stay_arrival": 2}}}
    assert await call("booking_revision", answering(200, body({"data": {"attributes": {"id": "rev-1"}}}))) \
        == {"id": "rev-1"}
    assert await call("ack_booking_revision", answering(200, HTML, "text/html")) is None  # any 2xx acknowledges
    assert await call("ack_booking_revision", answering(204, b"", None)) is None


async def test_a_revision_we_cannot_take_is_left_in_the_feed_and_the_others_are_read(
        caplog: pytest.LogCaptureFixture) -> None:
    def nested(depth: int) -> Any:
        value: Any = "deep"
        for _ in range(depth):
            value = [value]
        return value

    good = [{"id": f"rev-{n}", "attributes": {"id": f"rev-{n}", "status": "new"}} for n in range(3)]
    page = {"data": [good[0], 5, {"id": "x"}, {"id": "y", "attributes": ["new"]}, good[1],
                     {"id": "z", "attributes": {"notes": "a\u0000b"}},
                     {"id": "w", "attributes": {"notes": "\ud800"}},
                     {"id": "v", "attributes": {"notes": nested(40)}},
                     {"id": ["unhashable"], "attributes": {"id": {"also": "unhashable"}}}, good[2]],
            "meta": {"total": 10, "limit": 100}}
    with caplog.at_level(logging.WARNING, "connectapi.channel"):
        feed = await call("booking_feed", answering(200, body(page)))
    assert feed.complete
    assert feed.revisions == [good[0]["attributes"], good[1]["attributes"], {"id": {"also": "unhashable"}},
                              good[2]["attributes"]]
    skipped = [r.getMessage() for r in caplog.records if "not a revision" in r.getMessage()]
    assert len(skipped) == 6, skipped
    assert "data[1] is a whole number, not an object" in skipped[0]
    assert "data[2].attributes is missing" in skipped[1]
    assert "data[3].attributes is a list, not an object" in skipped[2]
    assert "data[5].attributes hold text the record cannot keep" in skipped[3]
    assert "data[7].attributes nest deeper than 32" in skipped[5]


async def test_the_feed_reads_every_page_and_stops_at_meta_total() -> None:
    asked: list[str] = []

    def pages(request: httpx.Request) -> httpx.Response:
        page = int(request.url.params["pagination[page]"])
        asked.append(str(page))
        items = [{"id": f"rev-{page}-{n}", "attributes": {"id": f"rev-{page}-{n}"}} for n in range(2)]
        return httpx.Response(200, json={"data": items, "meta": {"total": 5, "limit": 2}})

    feed = await call("booking_feed", pages)
    assert feed.complete and asked == ["1", "2", "3"] and len(feed.revisions) == 6


# -- statuses and transport ---------------------------------------------------------------

async def test_statuses_other_than_2xx() -> None:
    throttled = await failure("push_availability", answering(429, b"", None, {"Retry-After": "\u00b2"}))
    assert isinstance(throttled, Throttled) and throttled.retry_after is None  # "²" is a digit, not a number
    long = await failure("push_availability", answering(429, b"", None, {"Retry-After": "9" * 40}))
    assert isinstance(long, Throttled) and long.retry_after == 3600.0
    down = await failure("push_availability", answering(503, HTML, "text/html"))
    assert type(down) is Unavailable and down.status == 503
    moved = await failure("read_availability", answering(302, b"", None, {"Location": "https://elsewhere/"}))
    assert isinstance(moved, Rejected) and moved.status == 302 and "redirect" in str(moved)
    interim = await failure("read_availability", answering(100, b"", None))
    assert type(interim) is Unavailable
    for refusal in (b"[1, 2]", b'{"errors": ["a", "b"]}', b'{"errors": {"title": 5, "code": "bad"}}', DEEP, HTML,
                    b'"x"', b'{"errors": {"title": "Unknown key ' + KEY.encode() + b'"}}'):
        refused = await failure("create_property", answering(422, refusal))
        assert isinstance(refused, Rejected) and refused.status == 422 and "HTTP 422" in str(refused)
    titled = await failure("create_property", answering(422, b'{"errors": {"title": "Bad\\nthing"}}'))
    assert str(titled).endswith("HTTP 422: Bad?thing")


@pytest.mark.parametrize("error", [
    httpx.RemoteProtocolError("Server disconnected without sending a response."),
    httpx.ReadError("[Errno 104] Connection reset by peer"), httpx.ConnectError("refused"),
    httpx.DecodingError("bad gzip"), httpx.TooManyRedirects("loop"), httpx.ReadTimeout("slow"),
    httpx.UnsupportedProtocol("ftp"), httpx.InvalidURL("bad"),
], ids=lambda e: type(e).__name__)
async def test_any_http_error_is_unavailable(error: Exception) -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise error

    for name in ("push_availability", "booking_feed", "ack_booking_revision"):
        found = await failure(name, broken)
        assert type(found) is Unavailable and found.status is None


def test_retry_after_is_capped_and_never_raises() -> None:
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds("86400") == 3600.0
    assert retry_after_seconds("\u0663") is None  # an Arabic-Indic three
    assert retry_after_seconds("Fri, 31 Dec 9999 23:59:59 GMT", now=0) == 3600.0
    assert retry_after_seconds("Mon, 99 Foo 0000 99:99:99 GMT") is None


async def test_revision_ids_stay_one_path_segment() -> None:
    paths: list[str] = []

    def seen(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.raw_path.decode())
        return httpx.Response(200, json={"data": {"attributes": {}}})

    async with httpx.AsyncClient(base_url="http://cm.test", headers={"user-api-key": KEY},
                                 transport=httpx.MockTransport(seen)) as http:
        client = ChannelManagerClient(http)
        for ident in ("..", "../../properties", "a/b?c#d", "\ud800"):
            await client.ack_booking_revision(ident)
            await client.booking_revision(ident)
    assert all(p.startswith("/api/v1/booking_revisions/") for p in paths), paths
    assert all(p.count("/") == 4 + p.endswith("/ack") for p in paths), paths


# -- anything at all ----------------------------------------------------------------------

KEYS = st.sampled_from(["data", "meta", "id", "attributes", "warnings", "total", "limit", "type", "errors", "title",
                        "rate", "min_stay_arrival", "max_stay", "stop_sell", "closed_to_arrival", "2026-12-01",
                        "2026-02-30", "room-1", "plan-1"]) | st.text(max_size=6)
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
           | st.sampled_from(["120.00", "0", "-1", "1e5", "NaN", "", "rev-1", "\u0000", "\u0662"]))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
                    max_leaves=30)
TOP = (JSON | st.dictionaries(st.sampled_from(["data", "meta", "errors"]), JSON, max_size=3)
       | st.fixed_dictionaries({"data": JSON}, optional={"meta": JSON}))
STATUS = st.sampled_from([200, 201, 204]) | st.integers(100, 599)
CONTENT = TOP.map(lambda value: json.dumps(value).encode()) | st.binary(max_size=64)


def run(name: str, answer: Answer) -> Any:
    async def main() -> Any:
        try:
            return await call(name, answer)
        except ChannelManagerError as exc:
            return exc
    return trio.run(main)


@pytest.mark.parametrize("name", list(METHODS))
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(status=STATUS, content=CONTENT)
def test_any_answer_is_the_declared_type_or_a_channel_manager_error(name: str, status: int, content: bytes) -> None:
    found = run(name, answering(status, content))
    assert isinstance(found, ChannelManagerError) or METHODS[name][1](found), repr(found)[:300]
    if 200 <= status < 300 and name != "ack_booking_revision" and isinstance(found, ChannelManagerError):
        assert isinstance(found, MalformedAnswer)


@contextmanager
def logged() -> Iterator[list[str]]:
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Keep()
    logger = logging.getLogger("connectapi.channel")
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)


WITH_KEY = st.text(max_size=6).map(lambda t: f"{t}{KEY}{t}") | st.just(KEY) | st.text(max_size=6)
ECHOING = st.recursive(st.none() | st.integers() | WITH_KEY,
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                           st.sampled_from(["data", "meta", "warnings", "id", "attributes", "errors", "title",
                                            "code", "total", "rate"]) | WITH_KEY, inner, max_size=4),
                       max_leaves=20)
HEADER_TEXT = st.sampled_from(["application/json", "text/html", f"text/{KEY}", f"{KEY}/json", f"x {KEY}"])


@pytest.mark.parametrize("name", list(METHODS))
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(status=STATUS, value=ECHOING, content_type=HEADER_TEXT, raw=st.booleans())
def test_the_key_is_never_in_a_message_or_a_log_line(name: str, status: int, value: Any, content_type: str,
                                                      raw: bool) -> None:
    content = (f"<p>{KEY}</p>" if raw else json.dumps(value)).encode()
    with logged() as lines:
        found = run(name, answering(status, content, content_type))
    said = [*lines, *(found if name.startswith("push_") and isinstance(found, list) else [])]
    if isinstance(found, ChannelManagerError):
        said += [str(found), repr(found.args)]
    # nor any part of it: a message cut short must not cut the key in two
    assert not any(KEY[i:i + 10] in text for text in said for i in range(len(KEY) - 9)), said


def test_the_admin_route_takes_the_sandbox_fault_modes() -> None:
    assert set(get_args(SandboxFaultsIn.model_fields["mode"].annotation)) == set(FAULT_MODES)
    assert {"malformed", "reset"} <= set(FAULT_MODES)


async def test_an_answer_past_the_size_bound_is_refused_not_read_whole() -> None:
    from connectapi.channel.client import ANSWER_BYTES_MAX, MalformedAnswer

    sent = {"bytes": 0}

    async def endless() -> Any:
        chunk = b" " * 65536
        while True:  # a body that never ends: only the bound stops the read
            sent["bytes"] += len(chunk)
            yield chunk

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=endless(), headers={"content-type": "application/json"})

    with trio.fail_after(20):  # before the bound, the read went on until memory ran out
        error = await failure("read_availability", answer)
    assert isinstance(error, MalformedAnswer) and f"over {ANSWER_BYTES_MAX} bytes" in str(error)
    assert sent["bytes"] <= ANSWER_BYTES_MAX + 2 * 65536


async def test_a_compressed_answer_is_read_as_sent() -> None:
    import gzip

    payload = body({"data": {"id": "cm-prop-1", "type": "property"}})
    found = await call("create_property", answering(201, gzip.compress(payload),
                                                    headers={"content-encoding": "gzip"}))
    assert found == "cm-prop-1"


async def test_a_failed_call_carries_its_x_request_id() -> None:
    """Channex's support asks for the x-request-id of a failed call: it is in the message
    (hence lastError and the log) and on the error."""
    rid = {"x-request-id": "5a1c-77e0"}
    down = await failure("push_availability", answering(503, b"", None, rid))
    assert isinstance(down, Unavailable) and down.request_id == "5a1c-77e0"
    assert str(down) == "POST /api/v1/availability: HTTP 503 (x-request-id 5a1c-77e0)"
    refused = await failure("push_restrictions", answering(422, body(
        {"errors": {"code": "validation_error", "title": "Validation Error", "details": {"values": ["is invalid"]}}}),
        headers=rid))
    assert isinstance(refused, Rejected) and refused.request_id == "5a1c-77e0"
    assert str(refused).endswith("HTTP 422: Validation Error (x-request-id 5a1c-77e0)")
    throttled = await failure("push_availability", answering(429, b"", None, rid))
    assert isinstance(throttled, Throttled) and throttled.request_id == "5a1c-77e0"
    assert "x-request-id 5a1c-77e0" in str(throttled) and throttled.retry_after is None
    unread = await failure("read_availability", answering(200, HTML, "text/html", rid))
    assert isinstance(unread, MalformedAnswer) and unread.request_id == "5a1c-77e0"
    # An id that is no id (spaces, a path, overlong) is not repeated.
    odd = await failure("push_availability", answering(500, b"", None, {"x-request-id": "a b/../c"}))
    assert odd.request_id is None and "x-request-id" not in str(odd)
    assert (await call("push_availability", answering(200, body({"data": [{"id": "t1", "type": "task"}]}),
                                                      headers=rid))).request_id == "5a1c-77e0"


async def test_reads_of_restrictions_name_the_fields_they_compare() -> None:
    """Channex answers 400 "restrictions is required" without filter[restrictions]."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"data": {}})

    await call("read_restrictions", answer)
    params = seen[0].url.params
    assert params["filter[restrictions]"] == ("rate,min_stay_arrival,min_stay_through,max_stay,closed_to_arrival,"
                                              "closed_to_departure,stop_sell")
    assert (params["filter[property_id]"], params["filter[date][gte]"], params["filter[date][lte]"]) == (
        "p", "2026-12-01", "2026-12-02")
