"""The asynchronous client: `AsyncClient(base_url=..., api_key=...)`, on asyncio or trio
(httpx and anyio underneath). It never blocks the loop: every wait is awaited."""

from __future__ import annotations

import builtins
import datetime
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import anyio
import httpx
from pydantic import BaseModel

from . import _calls as calls
from . import models
from .errors import BatchTimeoutError
from .rate_limit import RateLimit

M = TypeVar("M", bound=BaseModel)


class AsyncClock(Protocol):
    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class AnyioClock:
    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


class _Resource:
    def __init__(self, client: AsyncClient) -> None:
        self._client = client


class _Ari(_Resource):
    _resource = ""

    async def set(self, updates: Sequence[Mapping[str, Any]], *,
                  idempotency_key: str | None = None) -> models.WriteResult:
        """As `Client`'s: one idempotency key for every try of this call."""
        return await self._client._send(calls.write_ari(self._resource, updates, idempotency_key))


class AsyncAvailability(_Ari):
    _resource = "availability"

    async def get(self, date_from: datetime.date | str | None = None,
                  date_to: datetime.date | str | None = None) -> models.AvailabilityRead:
        return await self._client._send(calls.read_ari(self._resource, models.AvailabilityRead, date_from, date_to))


class AsyncRates(_Ari):
    _resource = "rates"

    async def get(self, date_from: datetime.date | str | None = None,
                  date_to: datetime.date | str | None = None) -> models.RatesRead:
        return await self._client._send(calls.read_ari(self._resource, models.RatesRead, date_from, date_to))


class AsyncRestrictions(_Ari):
    _resource = "restrictions"

    async def get(self, date_from: datetime.date | str | None = None,
                  date_to: datetime.date | str | None = None) -> models.RestrictionsRead:
        return await self._client._send(calls.read_ari(self._resource, models.RestrictionsRead, date_from, date_to))


class AsyncBookings(_Resource):
    async def create(self, body: models.BookingIn | Mapping[str, Any], *,
                     idempotency_key: str | None = None) -> models.Booking:
        return await self._client._send(calls.create_booking(body, idempotency_key))

    async def get(self, booking_id: int) -> models.Booking:
        return await self._client._send(calls.get_booking(booking_id))

    async def list_page(self, *, since: datetime.datetime | str | None = None, limit: int | None = None,
                        external_reference: str | None = None, before: int | None = None) -> models.BookingList:
        return await self._client._send(calls.list_bookings(since, limit, external_reference, before))

    async def pages(self, *, since: datetime.datetime | str | None = None, limit: int | None = None,
                    external_reference: str | None = None) -> AsyncIterator[models.BookingList]:
        before = None
        while True:
            page = await self.list_page(since=since, limit=limit, external_reference=external_reference,
                                        before=before)
            if before is not None and not page.bookings:
                return
            yield page
            if page.next_before is None:
                return
            before = page.next_before

    async def list(self, *, since: datetime.datetime | str | None = None, limit: int | None = None,
                   external_reference: str | None = None) -> AsyncIterator[models.Booking]:
        """`async for booking in client.bookings.list(): ...`, page after page."""
        async for page in self.pages(since=since, limit=limit, external_reference=external_reference):
            for booking in page.bookings:
                yield booking

    async def modify(self, booking_id: int, patch: models.BookingPatchIn | Mapping[str, Any],
                     if_match: int | str | None = None, *, idempotency_key: str | None = None) -> models.Booking:
        return await self._client._send(calls.modify_booking(booking_id, patch, if_match, idempotency_key))

    async def cancel(self, booking_id: int, reason: str | None = None) -> models.Booking:
        return await self._client._send(calls.cancel_booking(booking_id, reason))


class AsyncTestHelpers(_Resource):
    """Test keys only, as `Client.test_helpers`."""

    __test__ = False

    async def ota_booking(self, body: models.TestOtaBookingIn | Mapping[str, Any]) -> models.TestOtaRevision:
        return await self._client._send(calls.test_helper("/ota-bookings", models.TestOtaRevision, dict(body)))

    async def ota_modify(self, reference: str, change: models.OtaBookingChangeIn | Mapping[str, Any]
                         ) -> models.TestOtaRevision:
        return await self._client._send(calls.test_helper(f"/ota-bookings/{calls._segment(reference)}/modify",
                                                          models.TestOtaRevision, dict(change)))

    async def ota_cancel(self, reference: str) -> models.TestOtaRevision:
        return await self._client._send(calls.test_helper(f"/ota-bookings/{calls._segment(reference)}/cancel",
                                                          models.TestOtaRevision))

    async def check_in(self, booking_id: int) -> models.TestCheckIn:
        return await self._client._send(calls.test_helper(f"/bookings/{calls._segment(booking_id)}/check-in",
                                                          models.TestCheckIn))

    async def channel_faults(self, mode: str, count: int = 1) -> models.TestFaults:
        return await self._client._send(calls.test_helper("/channel-manager/faults", models.TestFaults,
                                                          {"mode": mode, "count": count}))

    async def reset(self) -> models.TestReset:
        return await self._client._send(calls.test_helper("/reset", models.TestReset))

    async def events(self, after: str | None = None, wait: int = 0) -> models.TestEvents:
        return await self._client._send(calls.test_events(after, wait))


class AsyncClient:
    """The Connect API, asynchronously; the same settings and methods as `Client`, awaited."""

    def __init__(self, *, base_url: str, api_key: str, max_retries: int = calls.DEFAULT_MAX_RETRIES,
                 max_wait: float = calls.DEFAULT_MAX_WAIT, timeout: float = calls.DEFAULT_TIMEOUT,
                 http_client: httpx.AsyncClient | None = None, clock: AsyncClock | None = None) -> None:
        if max_retries < 0 or max_wait < 0:
            raise ValueError("max_retries and max_wait cannot be negative")
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.max_wait = max_wait
        self._api_key = api_key
        self._clock: AsyncClock = clock or AnyioClock()
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(
            timeout=timeout, limits=httpx.Limits(keepalive_expiry=calls.KEEPALIVE_EXPIRY))
        self._seen = calls.Seen()
        self.availability = AsyncAvailability(self)
        self.rates = AsyncRates(self)
        self.restrictions = AsyncRestrictions(self)
        self.bookings = AsyncBookings(self)
        self.test_helpers = AsyncTestHelpers(self)

    @builtins.property
    def rate_limit(self) -> RateLimit | None:
        """What the last answer (of this client or one `with_options` made) said of the budgets."""
        return self._seen.rate_limit

    @builtins.property
    def last_response(self) -> calls.LastResponse | None:
        """What the last answer said beside its body: status, attempts, idempotency key, replay."""
        return self._seen.last_response

    def __repr__(self) -> str:
        return f"AsyncClient(base_url={self.base_url!r})"

    def with_options(self, *, max_retries: int | None = None, max_wait: float | None = None) -> AsyncClient:
        other = AsyncClient(base_url=self.base_url, api_key=self._api_key,
                            max_retries=self.max_retries if max_retries is None else max_retries,
                            max_wait=self.max_wait if max_wait is None else max_wait, http_client=self._http,
                            clock=self._clock)
        other._owns_http = False
        other._seen = self._seen  # what either saw last, both say
        return other

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def property(self) -> models.Property:
        return await self._send(calls.get_property())

    async def catalog(self) -> models.Catalog:
        return await self._send(calls.get_catalog())

    async def sync(self) -> models.Sync:
        return await self._send(calls.get_sync())

    async def batch(self, batch_id: str, wait: int = 0) -> models.Batch:
        """The batch; with `wait` (seconds, up to 30), answered once it is done or then."""
        return await self._send(calls.get_batch(batch_id, wait))

    async def wait_for_batch(self, batch_id: str, *, timeout: float = 600.0,
                             interval: float = calls.MIN_POLL_SECONDS) -> models.Batch:
        """As Client.wait_for_batch: each request waits at the service (`?wait=`)."""
        interval = max(interval, calls.MIN_POLL_SECONDS)
        deadline = self._clock.monotonic() + timeout
        while True:
            asked = self._clock.monotonic()
            wait = calls.batch_wait(deadline - asked, self._http.timeout.read)
            batch = await self._send(calls.get_batch(batch_id, wait))
            if batch.status == "completed":
                return batch
            now = self._clock.monotonic()
            left = deadline - now
            waited = wait > 0 and now - asked >= wait - calls.EARLY_BY
            if left <= 0 or (not waited and left < interval):
                raise BatchTimeoutError(f"batch {batch_id} still {batch.status} after {timeout:g} s "
                                        f"({batch.pending_cells} cells pending)", batch)
            if not waited:  # the service did not hold the answer: the contract's pace
                await self._clock.sleep(interval)

    async def _send(self, call: calls.Call[M]) -> M:
        method, path, query, headers, content = calls.request_of(call)
        headers["authorization"] = f"Bearer {self._api_key}"
        attempt = 0
        while True:
            try:
                response = await self._http.request(method, self.base_url + path, params=query, headers=headers,
                                              content=content)
            except httpx.TransportError as failure:
                step = calls.unanswered(call, failure, attempt, self.max_retries)
            else:
                got = calls.answered(call, response, attempt, self.max_retries, self.max_wait, self._seen)
                if not isinstance(got, calls.Wait):
                    return got
                step = got
            await self._clock.sleep(step.seconds)
            attempt += 1
