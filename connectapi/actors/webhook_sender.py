"""Delivers queued webhook deliveries: signed, in order per endpoint, retried for a day.

The queue is in the record (webhook_deliveries), so nothing is lost across a restart;
delivery is at least once. Only a 2xx within the timeout counts; redirects are not
followed; the URL and every address its host resolves to are checked before each send.
After a day of failures the endpoint is paused and its owner told; its deliveries wait.
"""

from __future__ import annotations

import ipaddress
import logging
import random
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import httpx
import trio

from ..channel.client import retry_after_seconds
from ..domain import emails
from ..domain.webhook_retry import next_wait
from ..domain.webhook_signing import signed_headers, signing_secrets
from ..domain.webhook_urls import Address, UnsafeUrl, check_resolved, check_url
from ..engine import Clock, NextRound, RoundsActor
from ..metrics import WEBHOOK_FAILURES
from ..storage import notifications, properties, webhooks
from ..storage.database import Database, StorageUnavailable, Tx

log = logging.getLogger("connectapi.webhooks")
TIMEOUT_SECONDS = 10.0
Resolver = Callable[[str, int], Awaitable[list[Address]]]


async def resolve(host: str, port: int) -> list[Address]:
    infos = await trio.socket.getaddrinfo(host, port, type=trio.socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0]) for info in infos]


def open_webhook_client() -> httpx.AsyncClient:
    # No connection is kept: each send connects to the address just checked, and a pooled
    # connection (keyed by that address) could carry another host's request over a TLS
    # session verified for the first. No proxy from the environment (HTTPS_PROXY set on the
    # host for something else) ever sees a signed body or chooses where it goes.
    return httpx.AsyncClient(follow_redirects=False, timeout=TIMEOUT_SECONDS, trust_env=False,
                             limits=httpx.Limits(max_keepalive_connections=0),
                             headers={"User-Agent": "connectapi-webhooks"})


def pinned(url: str, address: Address) -> tuple[str, str, str]:
    """The URL with its host replaced by the checked address, the Host header and the TLS
    server name: the send goes where the check looked, not wherever a second DNS answer
    (a rebinding) would point, and the certificate is still verified for the host name."""
    parts = urlsplit(url)
    assert parts.hostname is not None
    literal = f"[{address}]" if address.version == 6 else str(address)
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    host_header = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    if ":" in parts.hostname:  # an IPv6 literal in the URL
        host_header = f"[{parts.hostname}]" + ("" if parts.port is None else f":{parts.port}")
    return parts._replace(netloc=netloc).geturl(), host_header, parts.hostname


class WebhookSender(RoundsActor):
    """Rounds: every delivery due, at once after a wake-up (an event just recorded), when
    the next retry falls due, and every `sweep_seconds` as a safety net."""

    name = "webhook-sender"
    waits_out = (StorageUnavailable,)

    def __init__(self, db: Database, clock: Clock, client: httpx.AsyncClient, allow_private: bool = False,
                 jitter: Callable[[], float] = random.random, resolver: Resolver = resolve,
                 sweep_seconds: float = 30.0) -> None:
        self._db = db
        self._clock = clock
        self._client = client
        self._allow_private = allow_private
        self._jitter = jitter
        self._resolve = resolver
        self.interval = sweep_seconds

    async def round(self) -> NextRound:
        await self.send_due()
        upcoming = await webhooks.next_due_at(self._db)
        return NextRound(due_in=None if upcoming is None else (upcoming - self._clock.now()).total_seconds())

    async def send_due(self) -> int:
        """Attempt every endpoint's next due delivery, round after round, until none is due;
        answers how many attempts were made."""
        made = 0
        while True:
            due = await webhooks.due(self._db, self._clock.now())
            if not due:
                return made
            async with trio.open_nursery() as nursery:
                for item in due:
                    nursery.start_soon(self._attempt, item)
            made += len(due)

    async def _attempt(self, item: webhooks.Due) -> None:
        try:
            await self._attempt_one(item)
        except StorageUnavailable:
            raise
        except Exception:
            # One endpoint's delivery must never stop everyone's: whatever went wrong here is
            # a failed attempt of this delivery, retried on its schedule.
            log.exception("webhook %s to endpoint %d: the attempt failed inside the sender", item.event_id,
                          item.endpoint.id)
            await self._failed(item, None, "the attempt failed inside the service", None, self._clock.now(),
                               self._clock.monotonic())

    async def _attempt_one(self, item: webhooks.Due) -> None:
        endpoint, now = item.endpoint, self._clock.now()
        started = self._clock.monotonic()
        status: int | None = None
        retry_after: float | None = None
        try:
            check_url(endpoint.url, self._allow_private)
            parts = urlsplit(endpoint.url)
            assert parts.hostname is not None
            addresses = await self._resolve(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
            check_resolved(parts.hostname, addresses, self._allow_private)
            if not addresses:
                raise UnsafeUrl(f"{parts.hostname} does not resolve")
            url, host, server_name = pinned(endpoint.url, addresses[0])
            headers = signed_headers(item.event_id, item.body, signing_secrets(
                endpoint.secret, endpoint.previous_secret, endpoint.rotated_at, now), now)
            response = await self._client.post(url, content=item.body.encode(),
                                               headers={**headers, "Content-Type": "application/json", "Host": host},
                                               extensions={"sni_hostname": server_name})
            status = response.status_code
            if 200 <= status < 300:
                await webhooks.delivered(self._db, item.delivery_id, endpoint.id, status, self._elapsed(started), now)
                return
            error = f"HTTP {status}"
            retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        except UnsafeUrl as exc:
            error = str(exc)
        except (httpx.HTTPError, OSError) as exc:
            error = f"{type(exc).__name__}: could not deliver"
        await self._failed(item, status, error, retry_after, now, started)

    async def _failed(self, item: webhooks.Due, status: int | None, error: str, retry_after: float | None,
                      now: datetime, started: float) -> None:
        endpoint = item.endpoint
        since_first = now - (item.first_attempt_at or now)
        # 410 Gone: the receiver says the endpoint is no more; pause it rather than retry.
        wait = None if status == 410 else next_wait(item.attempts + 1, since_first, retry_after, self._jitter)
        log.info("webhook %s to endpoint %d failed (attempt %d): %s", item.event_id, endpoint.id, item.attempts + 1,
                 error)
        WEBHOOK_FAILURES.inc()
        await webhooks.failed(self._db, item.delivery_id, endpoint.id, status, self._elapsed(started), error,
                              now + (wait or timedelta(0)), now)
        if wait is None:
            await self._pause(endpoint, now)

    async def _pause(self, endpoint: webhooks.Endpoint, now: datetime) -> None:
        """A day of failures: pause the endpoint (its deliveries wait) and tell the owner."""
        await webhooks.pause(self._db, endpoint.id, now)
        prop = await properties.get_property(self._db, endpoint.property_id)
        log.warning("webhook endpoint %d paused after a day of failed deliveries", endpoint.id)
        if prop is None or not prop.owner_email:
            return
        mail = emails.owner_endpoint_paused(prop.name, endpoint.url)
        owner = prop.owner_email

        async def work(tx: Tx) -> None:
            await notifications.enqueue(tx, prop.id, None, mail.kind, owner, mail.subject, mail.body, now)

        await self._db.transaction(work)

    def _elapsed(self, started: float) -> int:
        return int((self._clock.monotonic() - started) * 1000)
