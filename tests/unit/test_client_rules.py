"""The Python client's pure rules: reading the RateLimit headers, how long to wait before a
retry, what may be retried, which error class a code gets."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from connectapi_client import (ApiError, ConflictError, IdempotencyError, InternalServerError, InvalidRequestError,
                               RateLimit, RateLimitedError, models)
from connectapi_client import _calls as calls
from connectapi_client.errors import error_class


def test_the_ratelimit_headers_are_read_by_budget() -> None:
    state = RateLimit.from_headers({"RateLimit-Policy": '"requests";q=120;w=60, "writes";q=30;w=60',
                                    "ratelimit": '"requests";r=116;t=60, "writes";r=0;t=42'})
    assert state.budgets["writes"].quota == 30 and state.budgets["writes"].window == 60
    assert (state.budgets["requests"].remaining, state.budgets["requests"].reset) == (116, 60)
    assert (state.remaining, state.reset) == (0, 42)
    assert RateLimit.from_headers({}).remaining is None
    # What cannot be read is left out, never a failure of the call.
    broken = RateLimit.from_headers({"RateLimit": 'ip;r=x;t=5, "a\\"b";r=3, %%%', "RateLimit-Policy": "("})
    assert broken.budgets["ip"].remaining is None and broken.budgets["ip"].reset == 5


def error(status: int, code: str, retry_after: float | None = None, rate_limit: RateLimit | None = None) -> ApiError:
    return error_class(status, code)(status, code, "m", retry_after=retry_after, rate_limit=rate_limit)


def test_the_wait_is_what_the_service_said_with_a_little_jitter_and_never_beyond_max_wait() -> None:
    for _ in range(200):
        wait = calls.retry_wait(error(429, "RATE_LIMITED", 10), 0, 60)
        assert wait is not None and 10 <= wait <= 11
        assert calls.retry_wait(error(429, "RATE_LIMITED", 60), 0, 60) == pytest.approx(60, abs=0)  # capped, waited
    assert calls.retry_wait(error(429, "RATE_LIMITED", 61), 0, 60) is None
    spent = RateLimit.from_headers({"RateLimit": '"writes";r=0;t=17, "requests";r=5;t=50'})
    wait = calls.retry_wait(error(429, "RATE_LIMITED", None, spent), 0, 60)
    assert wait is not None and 17 <= wait <= 18.8  # the exhausted budget's t, not the other's
    assert all(0 <= (calls.retry_wait(error(503, "SERVICE_UNAVAILABLE"), 6, 60) or -1) <= 8 for _ in range(100))
    too_long = calls.too_long(error(429, "RATE_LIMITED", 3600), 60)
    assert isinstance(too_long, RateLimitedError) and too_long.retry_after == 3600 and "max_wait 60" in str(too_long)


def test_retry_after_as_a_date() -> None:
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (calls._seconds(later) or 0) <= 30
    assert calls._seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0
    assert calls._seconds("soon") is None and calls._seconds("-3") is None


def test_only_429_503_and_our_own_in_flight_retry_are_retried() -> None:
    assert calls.may_retry(error(429, "RATE_LIMITED"), 0) and calls.may_retry(error(503, "SERVICE_UNAVAILABLE"), 2)
    for status, code in ((400, "VALIDATION"), (409, "NO_AVAILABILITY"), (500, "INTERNAL"), (401, "API_KEY_INVALID")):
        assert not calls.may_retry(error(status, code), 0)
    assert not calls.may_retry(error(409, "IDEMPOTENCY_IN_FLIGHT"), 0)  # someone else's first try
    assert calls.may_retry(error(409, "IDEMPOTENCY_IN_FLIGHT"), 1)  # our own first try, still running


def test_a_connection_failure_is_retried_when_repeating_is_harmless() -> None:
    request = httpx.Request("POST", "http://x")
    dropped, refused = httpx.RemoteProtocolError("gone", request=request), httpx.ConnectError("no", request=request)
    helper = calls.test_helper("/ota-bookings", models.TestOtaRevision, {})
    assert not calls.may_retry_connection(helper, dropped) and calls.may_retry_connection(helper, refused)
    for call in (calls.write_ari("rates", [], None), calls.get_sync(), calls.cancel_booking(1, None),
                 calls.create_booking({}, None), calls.modify_booking(1, {}, 2, None)):
        assert calls.may_retry_connection(call, dropped)


def test_each_write_call_has_one_key_and_a_callers_key_is_checked() -> None:
    first, second = calls.write_ari("rates", [], None), calls.write_ari("rates", [], None)
    key = first.headers[calls.IDEMPOTENCY_HEADER]
    assert calls._KEY.match(key) and key != second.headers[calls.IDEMPOTENCY_HEADER]
    assert calls.write_ari("rates", [], "mine-000001").headers[calls.IDEMPOTENCY_HEADER] == "mine-000001"
    for bad in ("short", "x" * 65, "spaces in it!"):
        with pytest.raises(ValueError):
            calls.write_ari("rates", [], bad)
    with pytest.raises(TypeError):
        calls.write_ari("rates", {"updates": []}, None)  # type: ignore[arg-type]
    assert calls.modify_booking(1, {}, 3, None).headers["if-match"] == '"3"'
    assert calls.modify_booking(1, {}, 'W/"3"', None).headers["if-match"] == 'W/"3"'


@pytest.mark.parametrize(("status", "code", "kind"), [
    (400, "VALIDATION", InvalidRequestError), (400, "IDEMPOTENCY_KEY_INVALID", IdempotencyError),
    (409, "IDEMPOTENCY_KEY_REUSED", IdempotencyError), (409, "NO_AVAILABILITY", ConflictError),
    (418, "TEAPOT", ApiError), (502, "BAD_GATEWAY", InternalServerError)])
def test_error_classes_by_code_family(status: int, code: str, kind: type[ApiError]) -> None:
    assert isinstance(error(status, code), kind)
