"""What the sync and the async clients share: each route as a `Call` (method, path, query,
body, the model of its answer, whether it may be repeated), the retry rules, and reading
an answer. No I/O here."""

from __future__ import annotations

import datetime
import email.utils
import json
import logging
import random
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from . import models
from .errors import ApiConnectionError, ApiError, error_class
from .rate_limit import RateLimit

PREFIX = "/api/v1/connect-api/v1"
IDEMPOTENCY_HEADER = "x-idempotency-key"
_KEY = re.compile(r"^[A-Za-z0-9_-]{10,64}$")
# The contract: poll /batches and /sync no more often than every 15 seconds.
MIN_POLL_SECONDS = 15.0
# How long one GET /batches/{id}?wait=N asks the service to hold its answer until the batch
# is done: well within the client's own timeout (a read that waits is not a dropped one).
BATCH_WAIT_SECONDS = 20
# A shorter wait is not asked for (the client then paces itself at MIN_POLL_SECONDS): a
# wait of a second or two would make a poll every second or two.
MIN_BATCH_WAIT = 5
# A service that answered a batch still pending much sooner than it was asked to wait did
# not wait (a version without `wait`, or one stopping): the client then sleeps its interval.
EARLY_BY = 2.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_MAX_WAIT = 60.0
DEFAULT_TIMEOUT = 30.0
# Below the service's keep-alive timeout, so that an idle connection is dropped here before
# the service closes it under a request (the first request after idle would fail).
KEEPALIVE_EXPIRY = 2.0

M = TypeVar("M", bound=BaseModel)
# Each retry is logged here (INFO): the route, why, the wait and the try. Never the key or a body.
log = logging.getLogger("connectapi_client")


@dataclass(frozen=True)
class Call(Generic[M]):
    method: str
    path: str
    answer: type[M]
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    # May be sent again after a dropped connection: reads, writes carrying an idempotency
    # key, and a cancellation (a repeat answers replay: true).
    repeatable: bool = False

    @property
    def idempotency_key(self) -> str | None:
        """The key every try of this call carries (a keyed write's), else None."""
        return self.headers.get(IDEMPOTENCY_HEADER)


@dataclass(frozen=True)
class LastResponse:
    """What the last answer said beside its body."""

    status: int
    request_id: str | None
    idempotent_replay: bool
    idempotency_key: str | None
    etag: str | None
    attempts: int


@dataclass
class Seen:
    """The last answer's RateLimit state and facts, shared by a client and those
    `with_options` makes of it."""

    rate_limit: RateLimit | None = None
    last_response: LastResponse | None = None


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON: send dates, strings, numbers, lists and dicts")


def encode(body: Any) -> bytes:
    return json.dumps(body, default=_json_default, separators=(",", ":"), ensure_ascii=False).encode()


def _date(value: datetime.date | str | None) -> str | None:
    return None if value is None else value.isoformat() if isinstance(value, datetime.date) else str(value)


def new_idempotency_key() -> str:
    return "idem-" + uuid.uuid4().hex


def idempotency_key(given: str | None) -> str:
    """The caller's key, or one made now: generated once per call, sent on every try."""
    if given is None:
        return new_idempotency_key()
    if not _KEY.match(given):
        raise ValueError("an idempotency key is 10 to 64 characters of A-Z, a-z, 0-9, _ and -")
    return given


def _segment(value: int | str) -> str:
    return quote(str(value), safe="")


# ---- the routes -------------------------------------------------------------------------

def get_property() -> Call[models.Property]:
    return Call("GET", "/property", models.Property, repeatable=True)


def get_catalog() -> Call[models.Catalog]:
    return Call("GET", "/catalog", models.Catalog, repeatable=True)


def _range(date_from: datetime.date | str | None, date_to: datetime.date | str | None) -> dict[str, str]:
    query = {}
    if date_from is not None:
        query["from"] = _date(date_from) or ""
    if date_to is not None:
        query["to"] = _date(date_to) or ""
    return query


def read_ari(resource: str, answer: type[M], date_from: datetime.date | str | None,
             date_to: datetime.date | str | None) -> Call[M]:
    return Call("GET", f"/{resource}", answer, _range(date_from, date_to), repeatable=True)


def write_ari(resource: str, updates: Sequence[Mapping[str, Any]], key: str | None) -> Call[models.WriteResult]:
    if isinstance(updates, Mapping):
        raise TypeError("updates is the list of entries (the body's `updates`), not the body")
    return Call("PUT", f"/{resource}", models.WriteResult, body={"updates": list(updates)},
                headers={IDEMPOTENCY_HEADER: idempotency_key(key)}, repeatable=True)


def get_sync() -> Call[models.Sync]:
    return Call("GET", "/sync", models.Sync, repeatable=True)


def get_batch(batch_id: str, wait: int = 0) -> Call[models.Batch]:
    """The batch; with `wait`, once it is done or `wait` seconds have passed."""
    query = {"wait": str(wait)} if wait else {}
    return Call("GET", f"/batches/{_segment(batch_id)}", models.Batch, query=query, repeatable=True)


def batch_wait(left: float, read_timeout: float | None) -> int:
    """Seconds to ask the service to hold GET /batches for: at most BATCH_WAIT_SECONDS, what
    is left of the caller's timeout, and 5 s short of the HTTP client's own read timeout;
    0 (ask at once, then wait the interval) when that is under MIN_BATCH_WAIT."""
    most = BATCH_WAIT_SECONDS if read_timeout is None else min(BATCH_WAIT_SECONDS, read_timeout - 5)
    wait = int(min(most, left))
    return wait if wait >= MIN_BATCH_WAIT else 0


def list_bookings(since: datetime.datetime | str | None, limit: int | None, external_reference: str | None,
                  before: int | None) -> Call[models.BookingList]:
    query: dict[str, str] = {}
    if since is not None:
        query["since"] = since.isoformat() if isinstance(since, datetime.datetime) else str(since)
    if limit is not None:
        query["limit"] = str(limit)
    if external_reference is not None:
        query["externalReference"] = external_reference
    if before is not None:
        query["before"] = str(before)
    return Call("GET", "/bookings", models.BookingList, query, repeatable=True)


def get_booking(booking_id: int) -> Call[models.Booking]:
    return Call("GET", f"/bookings/{_segment(booking_id)}", models.Booking, repeatable=True)


def create_booking(body: Mapping[str, Any], key: str | None) -> Call[models.Booking]:
    return Call("POST", "/bookings", models.Booking, body=dict(body),
                headers={IDEMPOTENCY_HEADER: idempotency_key(key)}, repeatable=True)


def modify_booking(booking_id: int, patch: Mapping[str, Any], if_match: int | str | None,
                   key: str | None) -> Call[models.Booking]:
    headers = {IDEMPOTENCY_HEADER: idempotency_key(key), "content-type": "application/merge-patch+json"}
    if if_match is not None:
        # A revision number, or an ETag as the service sent it.
        headers["if-match"] = f'"{if_match}"' if isinstance(if_match, int) else if_match
    return Call("PATCH", f"/bookings/{_segment(booking_id)}", models.Booking, body=dict(patch), headers=headers,
                repeatable=True)


def cancel_booking(booking_id: int, reason: str | None) -> Call[models.Booking]:
    body = {} if reason is None else {"reason": reason}
    return Call("POST", f"/bookings/{_segment(booking_id)}/cancel", models.Booking, body=body, repeatable=True)


def test_events(after: str | None, wait: int) -> Call[models.TestEvents]:
    query = {"wait": str(wait)} if wait else {}
    if after is not None:
        query["after"] = after
    return Call("GET", "/test-helpers/events", models.TestEvents, query=query, repeatable=True)


def test_helper(path: str, answer: type[M], body: Any = None) -> Call[M]:
    # Not repeatable: a simulated OTA booking sent twice is two bookings.
    return Call("POST", f"/test-helpers{path}", answer, body={} if body is None else body)


# ---- answers and retries ----------------------------------------------------------------

def request_of(call: Call[Any]) -> tuple[str, str, dict[str, str], dict[str, str], bytes | None]:
    headers = {"accept": "application/json", **call.headers}
    content = None
    if call.body is not None:
        content = encode(call.body)
        headers.setdefault("content-type", "application/json")
    return call.method, PREFIX + call.path, call.query, headers, content


def _seconds(text: str | None) -> float | None:
    """Retry-After: whole seconds (what the service sends), or an HTTP date."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        try:
            at = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if at.tzinfo is None:
            return None
        value = (at - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        return max(value, 0.0)
    return value if value >= 0 else None


def error_of(response: httpx.Response, rate_limit: RateLimit, idempotency_key: str | None = None) -> ApiError:
    try:
        envelope = response.json()
        data = envelope.get("data") if isinstance(envelope, dict) else None
    except ValueError:
        envelope, data = None, None
    if not isinstance(data, dict) or not isinstance(data.get("code"), str):
        data = {"code": {413: "PAYLOAD_TOO_LARGE", 429: "RATE_LIMITED"}.get(response.status_code, "UNEXPECTED")}
        message = response.reason_phrase or "no error envelope in the answer"
    else:
        message = str(envelope.get("message", "")) if isinstance(envelope, dict) else ""
    retry_after = _seconds(response.headers.get("retry-after"))
    if retry_after is None and isinstance(data.get("retryAfterSeconds"), (int, float)):
        retry_after = float(data["retryAfterSeconds"])
    kind = error_class(response.status_code, data["code"])
    return kind(response.status_code, data["code"], message, details=data.get("details"), scope=data.get("scope"),
                retry_after=retry_after, request_id=response.headers.get("x-request-id"), rate_limit=rate_limit,
                idempotency_key=idempotency_key)


def answer_of(call: Call[M], response: httpx.Response, rate_limit: RateLimit) -> M:
    try:
        data = response.json()["data"]
    except (ValueError, KeyError, TypeError):
        # A 2xx that is not the service's envelope: something between us and it answered.
        raise ApiError(response.status_code, "UNEXPECTED_ANSWER", "a success answer without the service's "
                       f"envelope ({response.headers.get('content-type', 'no content type')})",
                       request_id=response.headers.get("x-request-id"), rate_limit=rate_limit,
                       idempotency_key=call.idempotency_key) from None
    return call.answer.model_validate(data)


def last_response(response: httpx.Response, call: Call[Any], attempts: int) -> LastResponse:
    return LastResponse(response.status_code, response.headers.get("x-request-id"),
                        response.headers.get("x-idempotent-replay") == "true", call.idempotency_key,
                        response.headers.get("etag"), attempts)


def backoff(attempt: int) -> float:
    """Full jitter over 0.5 s, 1 s, 2 s ... up to 8 s: retries of many clients spread out."""
    return random.uniform(0, min(8.0, 0.5 * 2 ** attempt))


def asked_wait(error: ApiError) -> float | None:
    """The wait the service asked for: Retry-After, else the exhausted budget's `t`."""
    if error.retry_after is not None:
        return error.retry_after
    if error.rate_limit is not None:
        spent = [b.reset for b in error.rate_limit.budgets.values() if b.remaining == 0 and b.reset is not None]
        return float(max(spent)) if spent else None
    return None


def retry_wait(error: ApiError, attempt: int, max_wait: float) -> float | None:
    """How long to wait before trying again after a 429 or a 503: what the service said
    (Retry-After, else the exhausted budget's `t`) plus a little jitter, never beyond
    `max_wait`; without a word from the service, backoff. None when the service asks for
    more than `max_wait`: the caller gets the error at once."""
    said = asked_wait(error)
    if said is None:
        return min(backoff(attempt), max_wait)
    if said > max_wait:
        return None
    return min(said + random.uniform(0, min(1.0, 0.1 * said + 0.05)), max_wait)


def may_retry(error: ApiError, attempt: int) -> bool:
    """429 and 503 only, as the contract says; and our own retry meeting the first try of
    the same key still running (IDEMPOTENCY_IN_FLIGHT), which needs only a moment."""
    if error.status in (429, 503):
        return True
    return error.code == "IDEMPOTENCY_IN_FLIGHT" and attempt > 0


def may_retry_connection(call: Call[Any], failure: httpx.TransportError) -> bool:
    """A request that never left (no connection) may always be sent again; one that may have
    been applied only when repeating it is harmless."""
    return isinstance(failure, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)) or call.repeatable


def too_long(error: ApiError, max_wait: float) -> ApiError:
    """The error as raised when its wait is beyond the caller's `max_wait`: not waited."""
    asked = asked_wait(error)
    return type(error)(error.status, error.code, f"{error.message} (the service asks to wait {asked:.0f} s, "
                       f"more than max_wait {max_wait:g} s: not retried)", details=error.details, scope=error.scope,
                       retry_after=asked, request_id=error.request_id, rate_limit=error.rate_limit,
                       idempotency_key=error.idempotency_key)


def log_retry(call: Call[Any], why: str, wait: float, attempt: int) -> None:
    log.info("%s %s: %s; try %d in %.1f s (idempotency key %s)", call.method, call.path, why, attempt + 2, wait,
             call.idempotency_key or "none")


@dataclass(frozen=True)
class Wait:
    """Try the call again after this many seconds."""

    seconds: float


def unanswered(call: Call[Any], failure: httpx.TransportError, attempt: int, max_retries: int) -> Wait:
    """After no answer: the pause before the next try, or ApiConnectionError."""
    if attempt < max_retries and may_retry_connection(call, failure):
        pause = backoff(attempt)
        log_retry(call, f"no answer ({type(failure).__name__})", pause, attempt)
        return Wait(pause)
    raise ApiConnectionError(f"{call.method} {PREFIX}{call.path}: {type(failure).__name__}: {failure}",
                             idempotency_key=call.idempotency_key) from failure


def answered(call: Call[M], response: httpx.Response, attempt: int, max_retries: int, max_wait: float,
             seen: Seen) -> M | Wait:
    """After an answer: what it tells (`seen`), then its body, the wait before the next try,
    or its error raised."""
    rate_limit = seen.rate_limit = RateLimit.from_headers(response.headers)
    seen.last_response = last_response(response, call, attempt + 1)
    if response.is_redirect or 300 <= response.status_code < 400:
        # Never followed (httpx does not unless told): the service does not redirect, and what
        # answered is not it; the write may or may not have been made, so the key goes along.
        location = response.headers.get("location", "")[:200]
        raise ApiError(response.status_code, "UNEXPECTED_ANSWER",
                       f"a redirect{f' to {location}' if location else ''}, not followed: the service never "
                       "redirects", request_id=response.headers.get("x-request-id"), rate_limit=rate_limit,
                       idempotency_key=call.idempotency_key)
    if response.status_code < 400:
        return answer_of(call, response, rate_limit)
    error = error_of(response, rate_limit, call.idempotency_key)
    if attempt >= max_retries or not may_retry(error, attempt):
        raise error
    wait = retry_wait(error, attempt, max_wait)
    if wait is None:
        raise too_long(error, max_wait)
    log_retry(call, f"{error.status} {error.code}", wait, attempt)
    return Wait(wait)
