"""The synchronous client: `Client(base_url=..., api_key=...)`."""

from __future__ import annotations

import builtins
import datetime
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import httpx
from pydantic import BaseModel

from . import _calls as calls
from . import models
from .errors import BatchTimeoutError
from .rate_limit import RateLimit

M = TypeVar("M", bound=BaseModel)


class Clock(Protocol):
    """What the client waits with; a test gives one that only pretends."""

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _Resource:
    def __init__(self, client: Client) -> None:
        self._client = client


class _Ari(_Resource):
    _resource = ""
    _answer: type[BaseModel]

    def _get(self, date_from: datetime.date | str | None, date_to: datetime.date | str | None) -> Any:
        return self._client._send(calls.read_ari(self._resource, self._answer, date_from, date_to))

    def set(self, updates: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None) -> models.WriteResult:
        """Send `updates` (the body's entries, as the contract writes them): 202's write
        result. One idempotency key for every try of this call (yours, or one made now)."""
        return self._client._send(calls.write_ari(self._resource, updates, idempotency_key))


class Availability(_Ari):
    _resource, _answer = "availability", models.AvailabilityRead

    def get(self, date_from: datetime.date | str | None = None,
            date_to: datetime.date | str | None = None) -> models.AvailabilityRead:
        """Availability from the record, nights `date_from` to `date_to` (default: 30 days from today)."""
        return self._get(date_from, date_to)  # type: ignore[no-any-return]


class Rates(_Ari):
    _resource, _answer = "rates", models.RatesRead

    def get(self, date_from: datetime.date | str | None = None,
            date_to: datetime.date | str | None = None) -> models.RatesRead:
        """Rates from the record, in minor units (`rate_minor`)."""
        return self._get(date_from, date_to)  # type: ignore[no-any-return]


class Restrictions(_Ari):
    _resource, _answer = "restrictions", models.RestrictionsRead

    def get(self, date_from: datetime.date | str | None = None,
            date_to: datetime.date | str | None = None) -> models.RestrictionsRead:
        """Restrictions from the record; None: the record holds no opinion."""
        return self._get(date_from, date_to)  # type: ignore[no-any-return]


class Bookings(_Resource):
    def create(self, body: models.BookingIn | Mapping[str, Any], *,
               idempotency_key: str | None = None) -> models.Booking:
        """Create a booking in the PMS. `replay` is true when `externalReference` was used
        before: the booking as made, nothing charged twice."""
        return self._client._send(calls.create_booking(body, idempotency_key))

    def get(self, booking_id: int) -> models.Booking:
        return self._client._send(calls.get_booking(booking_id))

    def list_page(self, *, since: datetime.datetime | str | None = None, limit: int | None = None,
                  external_reference: str | None = None, before: int | None = None) -> models.BookingList:
        """One page, newest first; `next_before` names the next page (None: the last)."""
        return self._client._send(calls.list_bookings(since, limit, external_reference, before))

    def pages(self, *, since: datetime.datetime | str | None = None, limit: int | None = None,
              external_reference: str | None = None) -> Iterator[models.BookingList]:
        before = None
        while True:
            page = self.list_page(since=since, limit=limit, external_reference=external_reference, before=before)
            if before is not None and not page.bookings:
                return  # the page after a full last one: nothing more
            yield page
            if page.next_before is None:
                return
            before = page.next_before

    def list(self, *, since: datetime.datetime | str | None = None, limit: int | None = None,
             external_reference: str | None = None) -> Iterator[models.Booking]:
        """Every booking the API created since `since` (default: the last 7 days), newest
        first, fetched `limit` to a page as you iterate."""
        for page in self.pages(since=since, limit=limit, external_reference=external_reference):
            yield from page.bookings

    def modify(self, booking_id: int, patch: models.BookingPatchIn | Mapping[str, Any], if_match: int | str | None = None,
               *, idempotency_key: str | None = None) -> models.Booking:
        """Change dates, rooms, guest or notes (a JSON merge patch), all or nothing. With
        `if_match` (the booking's `revision`, or its ETag) only that revision is changed."""
        return self._client._send(calls.modify_booking(booking_id, patch, if_match, idempotency_key))

    def cancel(self, booking_id: int, reason: str | None = None) -> models.Booking:
        """Cancel the whole booking; a cancelled one answers again with `replay` true."""
        return self._client._send(calls.cancel_booking(booking_id, reason))


class TestHelpers(_Resource):
    """Test keys only (`cak_test_...`): make the test record's outside world happen."""

    __test__ = False  # not a pytest class

    def ota_booking(self, body: models.TestOtaBookingIn | Mapping[str, Any]) -> models.TestOtaRevision:
        return self._client._send(calls.test_helper("/ota-bookings", models.TestOtaRevision, dict(body)))

    def ota_modify(self, reference: str, change: models.OtaBookingChangeIn | Mapping[str, Any]
                   ) -> models.TestOtaRevision:
        return self._client._send(calls.test_helper(f"/ota-bookings/{calls._segment(reference)}/modify",
                                                    models.TestOtaRevision, dict(change)))

    def ota_cancel(self, reference: str) -> models.TestOtaRevision:
        return self._client._send(calls.test_helper(f"/ota-bookings/{calls._segment(reference)}/cancel",
                                                    models.TestOtaRevision))

    def check_in(self, booking_id: int) -> models.TestCheckIn:
        return self._client._send(calls.test_helper(f"/bookings/{calls._segment(booking_id)}/check-in",
                                                    models.TestCheckIn))

    def channel_faults(self, mode: str, count: int = 1) -> models.TestFaults:
        return self._client._send(calls.test_helper("/channel-manager/faults", models.TestFaults,
                                                    {"mode": mode, "count": count}))

    def reset(self) -> models.TestReset:
        return self._client._send(calls.test_helper("/reset", models.TestReset))

    def events(self, after: str | None = None, wait: int = 0) -> models.TestEvents:
        """The test record's events after `after` (the previous answer's), bodies as their
        webhooks carry them; without `after`, where to start (now); `wait`: seconds to hold
        the answer until one comes (up to 30). `connectapi_client.listen` forwards them."""
        return self._client._send(calls.test_events(after, wait))


class Client:
    """The Connect API, synchronously.

    `max_retries`: how many times a 429, a 503 or a dropped connection is tried again
    (per client; `with_options` for one call). `max_wait`: the longest wait the client
    accepts; a 429 asking more raises `RateLimitedError` at once, with the wait in it.
    """

    def __init__(self, *, base_url: str, api_key: str, max_retries: int = calls.DEFAULT_MAX_RETRIES,
                 max_wait: float = calls.DEFAULT_MAX_WAIT, timeout: float = calls.DEFAULT_TIMEOUT,
                 http_client: httpx.Client | None = None, clock: Clock | None = None) -> None:
        if max_retries < 0 or max_wait < 0:
            raise ValueError("max_retries and max_wait cannot be negative")
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.max_wait = max_wait
        self._api_key = api_key
        self._clock: Clock = clock or SystemClock()
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(
            timeout=timeout, limits=httpx.Limits(keepalive_expiry=calls.KEEPALIVE_EXPIRY))
        self._seen = calls.Seen()
        self.availability = Availability(self)
        self.rates = Rates(self)
        self.restrictions = Restrictions(self)
        self.bookings = Bookings(self)
        self.test_helpers = TestHelpers(self)

    @builtins.property
    def rate_limit(self) -> RateLimit | None:
        """What the last answer (of this client or one `with_options` made) said of the budgets."""
        return self._seen.rate_limit

    @builtins.property
    def last_response(self) -> calls.LastResponse | None:
        """What the last answer said beside its body: status, attempts, idempotency key, replay."""
        return self._seen.last_response

    def __repr__(self) -> str:  # never the key
        return f"Client(base_url={self.base_url!r})"

    def with_options(self, *, max_retries: int | None = None, max_wait: float | None = None) -> Client:
        """This client with other retry settings, for a call or a few; it shares the connections."""
        other = Client(base_url=self.base_url, api_key=self._api_key,
                       max_retries=self.max_retries if max_retries is None else max_retries,
                       max_wait=self.max_wait if max_wait is None else max_wait, http_client=self._http,
                       clock=self._clock)
        other._owns_http = False
        other._seen = self._seen  # what either saw last, both say
        return other

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ---- the routes without a resource ----

    def property(self) -> models.Property:
        return self._send(calls.get_property())

    def catalog(self) -> models.Catalog:
        return self._send(calls.get_catalog())

    def sync(self) -> models.Sync:
        return self._send(calls.get_sync())

    def batch(self, batch_id: str, wait: int = 0) -> models.Batch:
        """The batch; with `wait` (seconds, up to 30), answered once it is done or then."""
        return self._send(calls.get_batch(batch_id, wait))

    def wait_for_batch(self, batch_id: str, *, timeout: float = 600.0,
                       interval: float = calls.MIN_POLL_SECONDS) -> models.Batch:
        """The batch once it is `completed`, asked with `?wait=`: each request waits at the
        service until the batch is done (or up to 20 s), so the answer comes within a second
        of the batch; `BatchTimeoutError` after `timeout` seconds. Against a service that
        answers at once, polls every `interval` seconds (never less than the contract's 15)."""
        interval = max(interval, calls.MIN_POLL_SECONDS)
        deadline = self._clock.monotonic() + timeout
        while True:
            asked = self._clock.monotonic()
            wait = calls.batch_wait(deadline - asked, self._http.timeout.read)
            batch = self._send(calls.get_batch(batch_id, wait))
            if batch.status == "completed":
                return batch
            now = self._clock.monotonic()
            left = deadline - now
            waited = wait > 0 and now - asked >= wait - calls.EARLY_BY
            if left <= 0 or (not waited and left < interval):
                raise BatchTimeoutError(f"batch {batch_id} still {batch.status} after {timeout:g} s "
                                        f"({batch.pending_cells} cells pending)", batch)
            if not waited:  # the service did not hold the answer: the contract's pace
                self._clock.sleep(interval)

    # ---- one call, with its retries ----

    def _send(self, call: calls.Call[M]) -> M:
        method, path, query, headers, content = calls.request_of(call)
        headers["authorization"] = f"Bearer {self._api_key}"
        attempt = 0
        while True:
            try:
                response = self._http.request(method, self.base_url + path, params=query, headers=headers,
                                              content=content)
            except httpx.TransportError as failure:
                step = calls.unanswered(call, failure, attempt, self.max_retries)
            else:
                got = calls.answered(call, response, attempt, self.max_retries, self.max_wait, self._seen)
                if not isinstance(got, calls.Wait):
                    return got
                step = got
            self._clock.sleep(step.seconds)
            attempt += 1
