"""The Channex-style channel manager, over HTTP.

Failures are told apart because the pipeline treats them differently:
- Throttled: a 429, with the channel manager's Retry-After when it sent one;
- Unavailable: a 5xx, a timeout, a refused or broken connection (back off and retry);
- Rejected: any other 4xx (a bug or a misconfiguration on our side; retrying will not help).
The API key lives only in the request header: no repr, message or log line carries it.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any

import httpx

DEFAULT_TIMEOUT = 10.0
FEED_PAGE_LIMIT = 100  # the largest page Channex hands out
FEED_MAX_PAGES = 20  # a round reads at most 2000 revisions; the rest are read by the next round


@dataclass(frozen=True, slots=True)
class Feed:
    """What a read of the booking feed found; `complete` is False when pages were left unread."""

    revisions: list[dict[str, Any]]
    complete: bool


class ChannelManagerError(Exception):
    """Base of what a call to the channel manager can end in."""


class Throttled(ChannelManagerError):
    def __init__(self, retry_after: float | None) -> None:
        super().__init__(f"throttled by the channel manager (Retry-After: {retry_after})")
        self.retry_after = retry_after


class Unavailable(ChannelManagerError):
    """5xx, timeout or connection failure; `status` is None when no answer came."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Rejected(ChannelManagerError):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class ChannelManagerClient:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self._http = http

    def __repr__(self) -> str:
        return f"ChannelManagerClient({self._http.base_url})"

    async def _call(self, method: str, path: str, *, json: Any = None, params: dict[str, str] | None = None) -> Any:
        try:
            response = await self._http.request(method, path, json=json, params=params)
        except httpx.TimeoutException:
            raise Unavailable(f"{method} {path}: no answer in time") from None
        except httpx.TransportError as exc:
            raise Unavailable(f"{method} {path}: {type(exc).__name__}") from None
        status = response.status_code
        if status == 429:
            raise Throttled(retry_after_seconds(response.headers.get("Retry-After")))
        if status >= 500:
            raise Unavailable(f"{method} {path}: HTTP {status}", status)
        if status >= 400:
            raise Rejected(f"{method} {path}: HTTP {status}: {_error_text(response)}", status)
        try:
            return response.json()
        except ValueError:
            raise Unavailable(f"{method} {path}: an answer that is not JSON", status) from None

    async def create_property(self, title: str, currency: str) -> str:
        body = await self._call("POST", "/api/v1/properties", json={"property": {"title": title, "currency": currency}})
        return str(body["data"]["id"])

    async def create_room_type(self, property_id: str, title: str, rooms: int) -> str:
        body = await self._call("POST", "/api/v1/room_types", json={"room_type": {
            "property_id": property_id, "title": title, "count_of_rooms": rooms}})
        return str(body["data"]["id"])

    async def create_rate_plan(self, property_id: str, room_type_id: str, title: str) -> str:
        body = await self._call("POST", "/api/v1/rate_plans", json={"rate_plan": {
            "property_id": property_id, "room_type_id": room_type_id, "title": title}})
        return str(body["data"]["id"])

    async def push_availability(self, values: list[dict[str, Any]]) -> list[str]:
        """Absolute counts as range values; returns the warnings for values it dropped."""
        body = await self._call("POST", "/api/v1/availability", json={"values": values})
        return list(body.get("meta", {}).get("warnings", []))

    async def push_restrictions(self, values: list[dict[str, Any]]) -> list[str]:
        """Rates and restrictions as range values (with `days`); returns the warnings."""
        body = await self._call("POST", "/api/v1/restrictions", json={"values": values})
        return list(body.get("meta", {}).get("warnings", []))

    def _range(self, property_id: str, first: date, last: date) -> dict[str, str]:
        return {"filter[property_id]": property_id, "filter[date][gte]": first.isoformat(),
                "filter[date][lte]": last.isoformat()}

    async def read_availability(self, property_id: str, first: date, last: date) -> dict[str, dict[str, int]]:
        body = await self._call("GET", "/api/v1/availability", params=self._range(property_id, first, last))
        return dict(body["data"])

    async def read_restrictions(self, property_id: str, first: date, last: date) -> dict[str, dict[str, Any]]:
        body = await self._call("GET", "/api/v1/restrictions", params=self._range(property_id, first, last))
        return dict(body["data"])

    async def booking_feed(self, property_id: str | None = None, max_pages: int = FEED_MAX_PAGES) -> Feed:
        """Booking revisions not yet acknowledged (of one property, or of the account), oldest
        first, page after page: the channel manager hands out 10 unless asked, and revisions we
        leave unacknowledged (another integration's) must not hide the ones behind them."""
        params = {"order[inserted_at]": "asc", "pagination[limit]": str(FEED_PAGE_LIMIT)}
        if property_id:
            params["filter[property_id]"] = property_id
        found: dict[object, dict[str, Any]] = {}
        for page in range(1, max_pages + 1):
            body = await self._call("GET", "/api/v1/booking_revisions/feed",
                                    params={**params, "pagination[page]": str(page)})
            items = body["data"]
            for item in items:
                revision = dict(item["attributes"])
                # The list may move between two pages (a revision acknowledged elsewhere, or a
                # new one on a feed handed out newest first): one seen twice is kept once, one
                # skipped comes next round.
                found.setdefault(item.get("id") or revision.get("id") or ("without an id", len(found)), revision)
            meta = body.get("meta") or {}
            total, limit = meta.get("total"), meta.get("limit") or FEED_PAGE_LIMIT
            if not items or total is None or page * int(limit) >= int(total):
                return Feed(list(found.values()), complete=True)
        return Feed(list(found.values()), complete=False)

    async def booking_revision(self, revision_id: str) -> dict[str, Any]:
        body = await self._call("GET", f"/api/v1/booking_revisions/{revision_id}")
        return dict(body["data"]["attributes"])

    async def ack_booking_revision(self, revision_id: str) -> None:
        """Only once the revision is stored: an acknowledged revision is not offered again."""
        await self._call("POST", f"/api/v1/booking_revisions/{revision_id}/ack")


def _error_text(response: httpx.Response) -> str:
    try:
        errors = response.json().get("errors", {})
    except ValueError:
        return response.text[:200]
    return str(errors.get("title") or errors.get("code") or errors)[:200]


@asynccontextmanager
async def open_channel_manager(base_url: str, api_key: str, *,
                               timeout: float = DEFAULT_TIMEOUT) -> AsyncIterator[ChannelManagerClient]:
    http = httpx.AsyncClient(base_url=base_url, headers={"user-api-key": api_key}, timeout=timeout,
                             follow_redirects=False)
    async with http:
        yield ChannelManagerClient(http)
