"""The Channex-style channel manager, over HTTP.

Failures are told apart because the pipeline treats them differently:
- Throttled: a 429, with the channel manager's Retry-After when it sent one;
- Unavailable: a 5xx, a timeout, a refused or broken connection (back off and retry);
- MalformedAnswer, an Unavailable: a 2xx we cannot read (not JSON, or JSON not of the
  shape the call answers), backed off the same way;
- Rejected: any other 4xx, or a 3xx (a bug or a misconfiguration on our side; retrying
  will not help).
Nothing the channel manager sends back escapes as anything else: every method returns a
value of its declared type, checked, or raises one of these (issue 15). Messages say what
came back (its status, its content type, where its shape departs from the expected one),
not the values it held (a 4xx's own error title aside); they are short and printable, fit
for `lastError`.
The API key lives only in the request header: no repr, message or log line carries it
(an answer that echoes it has it taken out before any text of it is cut short).
"""

from __future__ import annotations

import email.utils
import functools
import json
import math
import logging
import re
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal, NotRequired, TypedDict, TypeVar, cast
from urllib.parse import quote

import httpx

from ..tracing.http_client import trace_calls

DEFAULT_TIMEOUT = 10.0
FEED_PAGE_LIMIT = 100  # the largest page Channex hands out
FEED_MAX_PAGES = 20  # a round reads at most 2000 revisions; the rest are read by the next round
RETRY_AFTER_MAX = 3600.0  # a Retry-After longer than this is read as this
MESSAGE_MAX = 300  # characters of an error message
WARNING_MAX = 300  # characters of one warning
# An answer's body is read up to this, then refused: the largest we ask for (a 500-day grid
# of a big property, a page of 100 revisions) is a few MiB; an endless or huge one must not
# take the service's memory.
ANSWER_BYTES_MAX = 32 * 1024 * 1024
REVISION_MAX_DEPTH = 32  # a revision nests about four deep (rooms, days); deeper is not one

log = logging.getLogger("connectapi.channel")

# The channel manager's ids: what our mapping accepts (domain.admin_models.ChannelId).
_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
# A rate as the channel manager keeps it: a plain decimal numeral in major units ("200.00").
_RATE = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,12})?")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MEDIA_TYPE = re.compile(r"[A-Za-z0-9!#$&^_.+-]{1,40}/[A-Za-z0-9!#$&^_.+-]{1,40}")
_COUNT_RANGE = (-(2**31), 2**31 - 1)  # availability: a whole number (negative when oversold)
_STAY_RANGE = (0, 2**31 - 1)
_OCCUPANCY_RANGE = (1, 18)  # adults a per-person plan's option may count


# What the reconciler and the operator's grid compare: `filter[restrictions]` asks for these
# (Channex answers 400 "restrictions is required" to a read without it).
COMPARED_RESTRICTIONS = ("rate", "min_stay_arrival", "min_stay_through", "max_stay", "closed_to_arrival",
                         "closed_to_departure", "stop_sell")


class OccupancyRate(TypedDict):
    """A per-person rate plan's price for one occupancy (count of adults) on a night."""

    occupancy: int  # 1 to 18
    rate: str  # as RestrictionFields.rate


class RestrictionFields(TypedDict, total=False):
    """What the channel manager holds for a rate plan on a night; a field it does not show
    (or shows as null) is absent, and fields we do not know are left out. A per-person
    plan's night (as our sandbox answers it: Channex documents no read of one) has `rates`,
    its occupancies' prices, and `rate`, its primary occupancy's."""

    rate: str  # a plain decimal numeral in major units: Decimal(rate) is finite and >= 0
    rates: list[OccupancyRate]  # as answered, each occupancy once
    min_stay_arrival: int
    min_stay_through: int
    max_stay: int
    closed_to_arrival: bool
    closed_to_departure: bool
    stop_sell: bool


class _OccupancyOption(TypedDict):
    occupancy: int
    is_primary: bool


class _RatePlanBody(TypedDict):
    """A rate plan as we create one: per room unless `sell_mode` says per person."""

    property_id: str
    room_type_id: str
    title: str
    sell_mode: NotRequired[Literal["per_person"]]
    options: NotRequired[list[_OccupancyOption]]  # a per-person plan's, one per count of adults


# What the channel manager holds over a range of nights, by its entity's id and the night
# (YYYY-MM-DD): a room type's count, or a rate plan's fields.
AvailabilityGrid = dict[str, dict[str, int]]
RestrictionsGrid = dict[str, dict[str, RestrictionFields]]

_STAY_FIELDS = ("min_stay_arrival", "min_stay_through", "max_stay")
_FLAG_FIELDS = ("closed_to_arrival", "closed_to_departure", "stop_sell")


@dataclass(frozen=True, slots=True)
class Feed:
    """What a read of the booking feed found; `complete` is False when pages were left unread.
    Each revision is a JSON object (its attributes, as the channel manager sent them)."""

    revisions: list[dict[str, Any]]
    complete: bool


@dataclass(frozen=True, slots=True)
class Refusal:
    """A value the channel manager refused inside a 200 (`meta.warnings`): the value as it
    echoed it (ids, dates, fields) and, per field, its messages. A warning that is not an
    object naming a value is kept with `value` empty: it cannot be tied to cells."""

    value: dict[str, object]  # as the channel manager echoed it: read by domain.refusals
    fields: dict[str, list[str]]


@dataclass(frozen=True, slots=True)
class PushAnswer:
    """What a write call came back with: the task ids of what it applied (none when it
    applied nothing), the values it refused, and its `x-request-id`."""

    task_ids: tuple[str, ...]
    refusals: tuple[Refusal, ...]
    request_id: str | None = None


class ChannelManagerError(Exception):
    """Base of what a call to the channel manager can end in. `request_id` is the answer's
    `x-request-id` (what Channex's support asks for), None when no answer came."""

    request_id: str | None = None


class Throttled(ChannelManagerError):
    def __init__(self, retry_after: float | None, request_id: str | None = None) -> None:
        said = f", x-request-id {request_id}" if request_id else ""
        super().__init__(f"throttled by the channel manager (Retry-After: {retry_after}{said})")
        self.retry_after = retry_after
        self.request_id = request_id


class Unavailable(ChannelManagerError):
    """5xx, timeout or connection failure; `status` is None when no answer came."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class MalformedAnswer(Unavailable):
    """A 2xx we cannot read: not JSON, or JSON not of the shape the call answers. Backed off
    like a 5xx (the channel manager, or something in front of it, is not itself)."""


class Rejected(ChannelManagerError):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date, at most RETRY_AFTER_MAX; None
    when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return min(float(value), RETRY_AFTER_MAX)
    try:
        when = email.utils.parsedate_to_datetime(value)
        seconds = when.timestamp() - (time.time() if now is None else now)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    return min(max(0.0, seconds), RETRY_AFTER_MAX)


class _Shape(Exception):
    """Where an answer departs from the shape expected, e.g. `data.id is missing`."""


_T = TypeVar("_T")


class ChannelManagerClient:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self._http = http
        key = http.headers.get("user-api-key") or ""
        # The key as it could come back: as sent, or quoted into a path.
        self._secrets = sorted({key, quote(key, safe="")} - {""}, key=len, reverse=True) if len(key) >= 4 else []

    def __repr__(self) -> str:
        return f"ChannelManagerClient({self._http.base_url})"

    def _say(self, text: str, limit: int = MESSAGE_MAX) -> str:
        """Text fit to show: without the key (taken out before the text is cut, so that no
        part of it is left either), cut to `limit`, printable."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return _printable(text if len(text) <= limit else text[:limit - 3] + "...")

    async def _call(self, method: str, path: str, *, json_body: Any = None,
                    params: dict[str, str] | None = None) -> httpx.Response:
        """The answer of a 2xx; anything else raised as a ChannelManagerError."""
        call = f"{method} {self._say(path, 80)}"
        try:
            async with self._http.stream(method, path, json=json_body, params=params) as streamed:
                content = bytearray()
                async for chunk in streamed.aiter_bytes():
                    content += chunk
                    if len(content) > ANSWER_BYTES_MAX:
                        raise MalformedAnswer(self._say(f"{call}: an answer over {ANSWER_BYTES_MAX} bytes"),
                                              streamed.status_code)
            # Read already (and decoded): the headers that described the wire go.
            headers = [(name, value) for name, value in streamed.headers.raw
                       if name.lower() not in (b"content-encoding", b"content-length", b"transfer-encoding")]
            response = httpx.Response(streamed.status_code, headers=headers, content=bytes(content),
                                      request=streamed.request)
        except httpx.TimeoutException:
            raise Unavailable(self._say(f"{call}: no answer in time")) from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            # A refused, reset or dropped connection, a broken answer: no answer we can use.
            raise Unavailable(self._say(f"{call}: {_no_answer(exc)} ({type(exc).__name__})")) from None
        status = response.status_code
        request_id = _request_id(response)
        said = f" (x-request-id {request_id})" if request_id else ""
        failure: ChannelManagerError | None = None
        if status == 429:
            failure = Throttled(retry_after_seconds(response.headers.get("Retry-After")), request_id)
        elif status >= 500:
            failure = Unavailable(self._say(f"{call}: HTTP {status}{said}"), status)
        elif status >= 400:
            failure = Rejected(self._say(f"{call}: HTTP {status}: {self._say(_error_text(response), 200)}{said}"),
                               status)
        elif status >= 300:
            failure = Rejected(self._say(f"{call}: HTTP {status}, a redirect (not followed){said}"), status)
        elif status < 200:
            failure = Unavailable(self._say(f"{call}: HTTP {status}, not a final answer{said}"), status)
        if failure is not None:
            failure.request_id = request_id
            raise failure
        return response

    async def _read(self, method: str, path: str, reader: Callable[[Any], _T], *, json_body: Any = None,
                    params: dict[str, str] | None = None, items: bool = False) -> _T:
        """Call, parse the 2xx as JSON and read it with `reader` (which raises _Shape).
        `items`: the answer lists items each read on its own (the booking feed): a number no
        one can hold is kept as its text (_tolerant_number), for its item alone to fail."""
        return (await self._read_answer(method, path, reader, json_body=json_body, params=params, items=items))[0]

    async def _read_answer(self, method: str, path: str, reader: Callable[[Any], _T], *, json_body: Any = None,
                           params: dict[str, str] | None = None, items: bool = False) -> tuple[_T, httpx.Response]:
        response = await self._call(method, path, json_body=json_body, params=params)
        status = response.status_code
        body = _parse_json(response.content, items)
        if body is _NOT_JSON:
            what = "with an empty body" if not response.content.strip() else \
                f"that is not JSON ({_content_type(response)})"
        else:
            try:
                return reader(body), response
            except _Shape as exc:
                what = f"whose {exc}"
        request_id = _request_id(response)
        said = f" (x-request-id {request_id})" if request_id else ""
        failure = MalformedAnswer(self._say(f"{method} {self._say(path, 80)}: a {status} {what}{said}"), status)
        failure.request_id = request_id
        raise failure

    async def create_property(self, title: str, currency: str, timezone: str = "UTC") -> str:
        """The property at the channel manager, in its time zone: Channex refuses dates
        before the property's today, which must be the day our pushers count from."""
        return await self._read("POST", "/api/v1/properties", _created_id, json_body={
            "property": {"title": title, "currency": currency, "timezone": timezone}})

    async def create_room_type(self, property_id: str, title: str, rooms: int) -> str:
        return await self._read("POST", "/api/v1/room_types", _created_id, json_body={"room_type": {
            "property_id": property_id, "title": title, "count_of_rooms": rooms}})

    async def create_rate_plan(self, property_id: str, room_type_id: str, title: str,
                               occupancies: Sequence[int] | None = None) -> str:
        """A rate plan sold per room, or with `occupancies` per person: an occupancy option
        for each count of adults, the largest primary (Channex derives from the primary).
        ValueError for no occupancies at all (the channel manager refuses the others)."""
        plan: _RatePlanBody = {"property_id": property_id, "room_type_id": room_type_id, "title": title}
        if occupancies is not None:
            if not occupancies:
                raise ValueError("a per-person rate plan needs at least one occupancy")
            primary = max(occupancies)
            plan["sell_mode"] = "per_person"
            plan["options"] = [{"occupancy": n, "is_primary": n == primary} for n in sorted(occupancies)]
        return await self._read("POST", "/api/v1/rate_plans", _created_id, json_body={"rate_plan": plan})

    async def push_availability(self, values: Sequence[Mapping[str, object]]) -> PushAnswer:
        """Absolute counts as range values (no `days`: Channex refuses them there)."""
        return await self._push("/api/v1/availability", values)

    async def push_restrictions(self, values: Sequence[Mapping[str, object]]) -> PushAnswer:
        """Rates and restrictions as range values (with `days`)."""
        return await self._push("/api/v1/restrictions", values)

    async def _push(self, path: str, values: Sequence[Mapping[str, object]]) -> PushAnswer:
        """A 200 is not success for every value: those refused come back in `meta.warnings`.
        The values as they go on the wire: the service sends `domain.channel_values`' typed
        ones; the tests also send what the channel manager refuses."""
        (task_ids, refusals), response = await self._read_answer(
            "POST", path, lambda body: _push_answer(body, len(values)), json_body={"values": values})
        said = tuple(Refusal(value, {self._say(name, 60): [self._say(text, WARNING_MAX) for text in texts]
                                     for name, texts in fields.items()})
                     for value, fields in refusals)
        return PushAnswer(task_ids, said, _request_id(response))

    def _range(self, property_id: str, first: date, last: date) -> dict[str, str]:
        return {"filter[property_id]": property_id, "filter[date][gte]": first.isoformat(),
                "filter[date][lte]": last.isoformat()}

    async def read_availability(self, property_id: str, first: date, last: date) -> AvailabilityGrid:
        """{room type id: {YYYY-MM-DD: count}}, counts whole numbers."""
        return await self._read("GET", "/api/v1/availability", _availability_grid,
                                params=self._range(property_id, first, last))

    async def read_restrictions(self, property_id: str, first: date, last: date,
                                fields: tuple[str, ...] = COMPARED_RESTRICTIONS,
                                ) -> RestrictionsGrid:
        """{rate plan id: {YYYY-MM-DD: fields}}: a rate as a decimal string (and a per-person
        plan's rates, each occupancy's), stays as whole numbers, closures and stop-sell as
        booleans (RestrictionFields). Channex answers only the fields named in
        `filter[restrictions]`, which it requires."""
        return await self._read("GET", "/api/v1/restrictions", _restrictions_grid,
                                params={**self._range(property_id, first, last),
                                        "filter[restrictions]": ",".join(fields)})

    async def booking_feed(self, property_id: str | None = None, max_pages: int = FEED_MAX_PAGES) -> Feed:
        """Booking revisions not yet acknowledged (of one property, or of the account), oldest
        first, page after page: the channel manager hands out 10 unless asked, and revisions we
        leave unacknowledged (another integration's) must not hide the ones behind them.

        A page we cannot read fails the read (MalformedAnswer); an item of a page that is not
        a revision (not an object with `attributes` an object we can store) is skipped with a
        warning in the log: it stays in the channel manager's feed, which tells the property
        after 30 minutes, and the revisions beside it are taken."""
        params = {"order[inserted_at]": "asc", "pagination[limit]": str(FEED_PAGE_LIMIT)}
        if property_id:
            params["filter[property_id]"] = property_id
        found: dict[object, dict[str, Any]] = {}
        for page in range(1, max_pages + 1):
            items, total, limit, skipped = await self._read(
                "GET", "/api/v1/booking_revisions/feed", _feed_page,
                params={**params, "pagination[page]": str(page)}, items=True)
            for why in skipped:
                log.warning("booking feed, page %d: an item that is not a revision is left in the channel "
                            "manager's feed: %s", page, self._say(why))
            for ident, revision in items:
                # The list may move between two pages (a revision acknowledged elsewhere, or a
                # new one on a feed handed out newest first): one seen twice is kept once, one
                # skipped comes next round.
                found.setdefault(ident if ident is not None else ("without an id", len(found)), revision)
            if not (items or skipped) or total is None or page * (limit or FEED_PAGE_LIMIT) >= total:
                return Feed(list(found.values()), complete=True)
        return Feed(list(found.values()), complete=False)

    async def booking_revision(self, revision_id: str) -> dict[str, Any]:
        return await self._read("GET", f"/api/v1/booking_revisions/{_segment(revision_id)}", _revision, items=True)

    async def ack_booking_revision(self, revision_id: str) -> None:
        """Only once the revision is stored: an acknowledged revision is not offered again.
        Any 2xx is the acknowledgement; what its body says does not change that. Anything
        else raises (a 404, Rejected with status 404: the revision is gone)."""
        await self._call("POST", f"/api/v1/booking_revisions/{_segment(revision_id)}/ack")


def _segment(text: str) -> str:
    """An id as one path segment: "..", "a/b" or "?x" must not name another route."""
    if text in (".", ".."):
        return "%2E" * len(text)  # dots alone would be read as a move up the path
    return quote(text, safe="", errors="replace")


def _request_id(response: httpx.Response) -> str | None:
    """The answer's x-request-id when it reads as an id (it goes to logs and lastError)."""
    found = response.headers.get("x-request-id")
    return found if found is not None and _ID.fullmatch(found) else None


def _no_answer(exc: Exception) -> str:
    if isinstance(exc, httpx.ConnectError):
        return "no connection"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the connection closed without a whole answer"
    if isinstance(exc, httpx.NetworkError):
        return "the connection broke"
    if isinstance(exc, httpx.DecodingError):
        return "an answer that could not be decoded"
    return "no usable answer"


# -- reading answers -------------------------------------------------------------------

_NOT_JSON = object()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _constant(name: str) -> str:
    """NaN, Infinity, -Infinity (no JSON, though parsers take them) in a list of items: kept
    as their text, as a number no one can hold is (_number), for its item to fail alone."""
    return name


NUMBER_DIGITS_MAX = 100  # a number longer than this is kept as its text, not read


def _number(text: str) -> Any:
    """A number of a list of items, or its text when it is no number we can hold: more
    digits than any answer has (int() refuses past 4,300 and failed the whole page) or past
    a float's range (1e999 read as infinity). Whoever reads the member then refuses it
    alone: one item of a feed page never makes the page, and the items beside it,
    unreadable."""
    if len(text) > NUMBER_DIGITS_MAX:
        return text
    if text.lstrip("-").isdigit():
        return int(text)
    value = float(text)
    return value if math.isfinite(value) else text


def _parse_json(content: bytes, items: bool = False) -> Any:
    """The JSON of a body, or _NOT_JSON: undecodable text, bad syntax, NaN or Infinity,
    nesting deeper than the parser goes, a number too long to read. With `items` (a list of
    items each read on its own), a number no one can hold (NaN, Infinity, 1e999, thousands
    of digits) is its text instead: the reader of its item refuses that one alone."""
    try:
        if items:
            return json.loads(content, parse_constant=_constant, parse_int=_number, parse_float=_number)
        return json.loads(content, parse_constant=_reject_constant)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return _NOT_JSON


def _content_type(response: httpx.Response) -> str:
    kind = response.headers.get("content-type", "").split(";")[0].strip()
    if not kind:
        return "no content type"
    return kind if _MEDIA_TYPE.fullmatch(kind) else "an unreadable content type"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # not from JSON


def _at(where: str, key: str) -> str:
    """The JSON path of `key` in `where`; a key that is no id or date is not repeated (no
    text of the answer is cut short in a message: it could cut a secret it held in two)."""
    name = key if _ID.fullmatch(key) else "<a key>"
    return name if where == "body" else f"{where}.{name}"


def _object(value: Any, where: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise _Shape(f"{where} is {_kind(value)}, not an object")
    return value


def _member(value: Any, key: str, where: str) -> Any:
    found = _object(value, where)
    if key not in found:
        raise _Shape(f"{_at(where, key)} is missing")
    return found[key]


def _mapping(value: Any, where: str) -> dict[str, object]:
    """An object; an empty list is read as an empty one (how some APIs write "nothing")."""
    if value == []:
        return {}
    return _object(value, where)


def _whole(value: Any, where: str, bounds: tuple[int, int]) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Shape(f"{where} is {_kind(value)}, not a whole number")
    if not bounds[0] <= value <= bounds[1]:
        raise _Shape(f"{where} is a whole number out of range")
    return value


def _created_id(body: Any) -> str:
    ident = _member(_member(body, "data", "body"), "id", "data")
    if not isinstance(ident, str):
        raise _Shape(f"data.id is {_kind(ident)}, not a string")
    if not _ID.fullmatch(ident):
        raise _Shape("data.id is not an id (1 to 64 of A-Z a-z 0-9 _ . : -)")
    return ident


_RawRefusal = tuple[dict[str, object], dict[str, list[str]]]


def _push_answer(body: Any, sent: int) -> tuple[tuple[str, ...], tuple[_RawRefusal, ...]]:
    """(task ids of `data`, refusals of `meta.warnings`) of a call that sent `sent` values.
    Channex's availability route may answer `{"meta": {"message": "Success"}}` alone: no
    task id then. A 200 is read as values applied only when it says so: one that carries
    `errors`, or neither `data` nor `meta`, or applied nothing (`data: []`) while refusing
    fewer values than were sent, cannot be read (the cells stay to push)."""
    found = _object(body, "body")
    if found.get("errors") is not None:
        raise _Shape("a 200 that carries errors")
    if "data" not in found and "meta" not in found:
        raise _Shape("neither data nor meta")
    data = found.get("data")
    task_ids: list[str] = []
    if data is not None:
        if not isinstance(data, list):
            raise _Shape(f"data is {_kind(data)}, not a list")
        for index, item in enumerate(data):
            ident = _member(item, "id", f"data[{index}]")
            if not isinstance(ident, str) or not _ID.fullmatch(ident):
                raise _Shape(f"data[{index}].id is not an id")
            task_ids.append(ident)
    meta = found.get("meta")
    warnings = None if meta is None else _object(meta, "meta").get("warnings")
    if warnings is not None and not isinstance(warnings, list):
        raise _Shape(f"meta.warnings is {_kind(warnings)}, not a list")
    refusals = tuple(_refusal(w) for w in warnings or ())
    if data == [] and len(refusals) < sent:
        # Channex: "when none is [applied], data is []", each refused value in a warning.
        raise _Shape(f"data is [] (no value applied) but {len(refusals)} of {sent} values refused")
    return tuple(task_ids), refusals


def _refusal(warning: Any) -> _RawRefusal:
    """A warning as (the value echoed, field -> messages). Documented: the value with a
    `warning` object of field -> list of messages; anything else is kept as one message
    about no value in particular."""
    if isinstance(warning, dict) and isinstance(warning.get("warning"), dict):
        value = {k: v for k, v in warning.items() if k != "warning"}
        fields: dict[str, list[str]] = {}
        for name, texts in warning["warning"].items():
            said = texts if isinstance(texts, list) else [texts]
            fields[str(name)] = [t if isinstance(t, str) else _compact(t) for t in said]
        return value, fields
    return {}, {"value": [warning if isinstance(warning, str) else _compact(warning)]}


def _grid(body: Any, cell: Callable[[Any, str], _T]) -> dict[str, dict[str, _T]]:
    grid: dict[str, dict[str, _T]] = {}
    data = _mapping(_member(body, "data", "body"), "data")
    for entity, nights in data.items():
        here = _at("data", entity)
        row = grid[entity] = {}
        for day, value in _mapping(nights, here).items():
            if not _is_day(day):
                raise _Shape(f"{_at(here, day)} is not a date (YYYY-MM-DD)")
            row[day] = cell(value, _at(here, day))
    return grid


def _is_day(text: str) -> bool:
    if not _DAY.fullmatch(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _availability_grid(body: Any) -> AvailabilityGrid:
    return _grid(body, lambda value, where: _whole(value, where, _COUNT_RANGE))


def _rate(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _Shape(f"{where} is {_kind(value)}, not a decimal string")
    if not _RATE.fullmatch(value):
        raise _Shape(f"{where} is not a decimal string (like 120.00)")
    return value


def _occupancy_rates(value: Any, where: str) -> list[OccupancyRate]:
    """A per-person plan's `rates`: a list of {occupancy, rate}, each occupancy once."""
    if not isinstance(value, list):
        raise _Shape(f"{where} is {_kind(value)}, not a list")
    found: list[OccupancyRate] = []
    for index, entry in enumerate(value):
        here = f"{where}[{index}]"
        occupancy = _whole(_member(entry, "occupancy", here), f"{here}.occupancy", _OCCUPANCY_RANGE)
        if any(held["occupancy"] == occupancy for held in found):
            raise _Shape(f"{here}.occupancy is one given before")
        found.append({"occupancy": occupancy, "rate": _rate(_member(entry, "rate", here), f"{here}.rate")})
    return found


def _restriction_fields(value: Any, where: str) -> RestrictionFields:
    held = _object(value, where)
    fields: dict[str, str | int | bool | list[OccupancyRate]] = {}
    rate = held.get("rate")
    if rate is not None:
        fields["rate"] = _rate(rate, f"{where}.rate")
    rates = held.get("rates")
    if rates is not None:
        fields["rates"] = _occupancy_rates(rates, f"{where}.rates")
    for name in _STAY_FIELDS:
        stay = held.get(name)
        if stay is not None:
            fields[name] = _whole(stay, f"{where}.{name}", _STAY_RANGE)
    for name in _FLAG_FIELDS:
        flag = held.get(name)
        if flag is not None:
            if not isinstance(flag, bool):
                raise _Shape(f"{where}.{name} is {_kind(flag)}, not a boolean")
            fields[name] = flag
    return cast(RestrictionFields, fields)


def _restrictions_grid(body: Any) -> RestrictionsGrid:
    return _grid(body, _restriction_fields)


def _revision_of(item: Any, where: str) -> dict[str, Any]:
    attributes = _member(item, "attributes", where)
    revision = _object(attributes, f"{where}.attributes")
    problem = _unstorable(revision)
    if problem:
        raise _Shape(f"{where}.attributes {problem}")
    return revision


def _revision(body: Any) -> dict[str, Any]:
    return _revision_of(_member(body, "data", "body"), "data")


_FeedPage = tuple[list[tuple[str | None, dict[str, Any]]], int | None, int | None, list[str]]


def _feed_page(body: Any) -> _FeedPage:
    """(revisions with their ids, meta.total, meta.limit, items skipped and why)."""
    data = _member(body, "data", "body")
    if not isinstance(data, list):
        raise _Shape(f"data is {_kind(data)}, not a list")
    items: list[tuple[str | None, dict[str, Any]]] = []
    skipped: list[str] = []
    for index, item in enumerate(data):
        try:
            revision = _revision_of(item, f"data[{index}]")
        except _Shape as exc:
            skipped.append(str(exc))
            continue
        ident = item.get("id") if isinstance(item.get("id"), str) and item["id"] else revision.get("id")
        items.append((ident if isinstance(ident, str) and ident else None, revision))
    said = _object(body, "body").get("meta")
    if said is None:
        return items, None, None, skipped
    meta = _object(said, "meta")
    total, limit = meta.get("total"), meta.get("limit")
    return (items, None if total is None else _whole(total, "meta.total", (0, 2**62)),
            None if limit is None else _whole(limit, "meta.limit", (1, 2**31)), skipped)


def _unstorable(revision: dict[str, object]) -> str | None:
    """Why the record could not keep this JSON as it is (PostgreSQL jsonb), or None: nested
    deeper than any revision, a string holding U+0000 or half of a surrogate pair."""
    stack: list[tuple[Any, int]] = [(revision, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > REVISION_MAX_DEPTH:
            return f"nest deeper than {REVISION_MAX_DEPTH}"
        if isinstance(value, dict):
            for key, inner in value.items():
                if not _storable_text(key):
                    return "hold a key the record cannot keep"
                stack.append((inner, depth + 1))
        elif isinstance(value, list):
            stack.extend((inner, depth + 1) for inner in value)
        elif isinstance(value, str) and not _storable_text(value):
            return "hold text the record cannot keep"
    return None


def _storable_text(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return f"({_kind(value)})"


def _error_text(response: httpx.Response) -> str:
    """What a 4xx says went wrong: `errors.title` or `errors.code` (Channex), or the body
    (whole: the caller takes the key out, then cuts it)."""
    body = _parse_json(response.content)
    if isinstance(body, dict) and "errors" in body:
        errors = body["errors"]
        if isinstance(errors, dict):
            for key in ("title", "code"):
                if isinstance(errors.get(key), str) and errors[key]:
                    return str(errors[key])
        return _compact(errors)
    if body is _NOT_JSON:
        return response.text
    return _compact(body)


@functools.cache
def _tls() -> ssl.SSLContext:
    """The certificates a client trusts, read once per process (reading the bundle costs
    tens of milliseconds: every client made, every test's service, paid it)."""
    return httpx.create_ssl_context()


@asynccontextmanager
async def open_channel_manager(base_url: str, api_key: str, *,
                               timeout: float = DEFAULT_TIMEOUT) -> AsyncIterator[ChannelManagerClient]:
    http = httpx.AsyncClient(base_url=base_url, headers={"user-api-key": api_key}, timeout=timeout,
                             follow_redirects=False, verify=_tls())
    trace_calls(http)  # each call a client span, when tracing is on
    async with http:
        yield ChannelManagerClient(http)
