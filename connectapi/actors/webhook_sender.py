"""Delivers queued webhook deliveries: signed, in order per endpoint, retried for a day.

The queue is in the record (webhook_deliveries), so nothing is lost across a restart;
delivery is at least once. Only a 2xx within 10 s of the attempt's start counts (one
deadline on resolving, connecting, sending and the answer); at most 64 KiB of the answer's
body is read; redirects are not followed; no proxy is used; the URL and every address its
host resolves to are checked before each send. Endpoints are attempted side by side, so
a slow one delays only its own deliveries.
After a day of failures the endpoint is paused and its owner told; its deliveries wait.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import random
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ContextManager
from urllib.parse import urlsplit

import httpx
import trio
from opentelemetry.trace import Span

from ..channel.client import retry_after_seconds
from ..domain import emails
from ..domain.webhook_retry import next_wait
from ..domain.webhook_signing import signed_headers, signing_secrets
from ..domain.webhook_urls import Address, UnsafeUrl, check_resolved, check_url
from ..engine import Clock, NextRound, RoundsActor, Wake
from ..metrics import WEBHOOK_FAILURES
from ..storage import notifications, properties, webhooks
from ..storage.database import RECORD_AWAY, RECORD_BUSY, Database, StorageUnavailable, Tx
from ..storage.leases import Lease, LeaseKind
from ..tracing import spans
from .lease_hold import LeaseHolder

log = logging.getLogger("connectapi.webhooks")
# The whole attempt (resolve, connect, send, answer), not each read: a receiver trickling a
# byte every 9 s used to hold a send for ever.
ATTEMPT_SECONDS = 10.0
TIMEOUT_SECONDS = ATTEMPT_SECONDS  # each step of httpx's own, inside the attempt's
ANSWER_BYTES_MAX = 64 * 1024  # of an answer's body read, at most; nothing in it counts
ATTEMPTS_AT_ONCE = 256  # endpoints attempted at once, at most (sockets are finite)
# An endpoint's sending lease outlasts its attempt and the recording of it; if the process
# dies meanwhile, another one sends the delivery again once it runs out.
SENDING_LEASE = timedelta(seconds=60)
Resolver = Callable[[str, int], Awaitable[list[Address]]]


async def resolve(host: str, port: int) -> list[Address]:
    infos = await trio.socket.getaddrinfo(host, port, type=trio.socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0]) for info in infos]


@functools.cache
def _tls() -> ssl.SSLContext:
    """The certificates a receiver is checked against, read once per process (not from the
    environment either: see below)."""
    return httpx.create_ssl_context(trust_env=False)


def open_webhook_client() -> httpx.AsyncClient:
    # No connection is kept: each send connects to the address just checked, and a pooled
    # connection (keyed by that address) could carry another host's request over a TLS
    # session verified for the first. No proxy from the environment (HTTPS_PROXY set on the
    # host for something else) ever sees a signed body or chooses where it goes.
    return httpx.AsyncClient(follow_redirects=False, timeout=TIMEOUT_SECONDS, trust_env=False, verify=_tls(),
                             # No pool limit: a wait for a free connection would make one
                             # endpoint's slowness another's (the sender bounds the attempts).
                             limits=httpx.Limits(max_keepalive_connections=0, max_connections=None),
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


@dataclass
class _Answer:
    """What came back, filled in as it comes: a deadline may cut the read short after the status."""

    status: int | None = None
    retry_after: float | None = None
    answered: float | None = None  # monotonic: when the status came


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one attempt came to: delivered when `error` is None."""

    at: datetime
    started: float
    status: int | None
    error: str | None
    retry_after: float | None


async def read_at_most(response: httpx.Response, limit: int) -> int:
    """Read and drop the answer's body, as sent (never decompressed), until `limit` bytes
    have come (one network read more at most); answers how many were read."""
    read = 0
    async for chunk in response.aiter_raw():
        read += len(chunk)
        if read >= limit:
            break
    return read


class WebhookSender(RoundsActor[Wake]):
    """Rounds: every delivery due, at once after a wake-up (an event just recorded), when
    the next retry falls due, and every `sweep_seconds` as a safety net.

    A round starts the attempts and does not wait for them: each runs in the background,
    one per endpoint at a time, and its end brings the next round at once (the endpoint's
    next delivery may be due). So an endpoint that takes its full 10 s never holds up
    another endpoint's deliveries, nor a wake-up.
    """

    name = "webhook-sender"
    waits_out = RECORD_AWAY
    waits_out_briefly = RECORD_BUSY

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
        self._attempts: trio.Nursery | None = None
        self._nudge: Callable[[], None] = lambda: None
        self._busy: set[int] = set()  # endpoints with an attempt under way
        self._again = False  # an attempt ended since the last round began
        self._leases = LeaseHolder(db, clock)

    def on_serving(self, nursery: trio.Nursery, nudge: Callable[[], None]) -> None:
        self._attempts, self._nudge = nursery, nudge

    def wake_in(self) -> float:
        return 0.0 if self._again else super().wake_in()

    def may_stop_when_idle(self) -> bool:
        return not self._busy

    async def round(self) -> NextRound:
        self._again = False
        await self.start_due()
        if len(self._busy) >= ATTEMPTS_AT_ONCE:
            return NextRound()  # the end of an attempt brings the next round
        asked = self._clock.monotonic()
        due_in = await webhooks.next_due_in(self._db, sorted(self._busy), shared=self._clock.shared_time())
        # The record counted from when the statement ran: the time its answer took is gone.
        return NextRound(due_in=None if due_in is None else due_in - (self._clock.monotonic() - asked))

    async def start_due(self) -> int:
        """Start an attempt at the next due delivery of each endpoint that has none under
        way; answers how many were started."""
        assert self._attempts is not None, "started by the engine, which calls on_serving first"
        room = ATTEMPTS_AT_ONCE - len(self._busy)
        if room <= 0:
            return 0
        # Each endpoint returned is leased to this process: every one is attempted. (A read
        # from before another attempt of ours was recorded cannot return its endpoint: the
        # lease was ours until that record.)
        due = await webhooks.due(self._db, self._leases.holder, SENDING_LEASE.total_seconds(), sorted(self._busy), room,
                                 shared=self._clock.shared_time())
        for item in due:
            self._busy.add(item.endpoint.id)
            self._attempts.start_soon(self._deliver, item)
        return len(due)

    async def _deliver(self, item: webhooks.Due) -> None:
        lease = Lease(LeaseKind.SENDING, str(item.endpoint.id), self._leases.holder, SENDING_LEASE.total_seconds())
        try:
            # Held from `due`, which took it with the delivery; recording the attempt gives it
            # back in the same transaction. An attempt that ends any other way gives it back
            # on its way out, so the endpoint's next delivery need not wait for it to run out.
            pause_at = None
            async with self._leases.holding(lease, SENDING_LEASE.total_seconds()) as held:
                with _delivery_span(item) as sent:
                    attempt = await self._attempt(item)
                    sent.set_attribute("connectapi.delivered", attempt.error is None)
                    if attempt.status is not None:
                        sent.set_attribute("http.response.status_code", attempt.status)
                    pause = await self._record(item, attempt)
                held.given_back()  # with the record: nothing of the lease is this process's now
                pause_at = attempt.at if pause else None
            if pause_at is not None:
                await self._pause(item.endpoint, pause_at)
        except StorageUnavailable as exc:
            # The delivery stays due in the record, to be sent again (at least once): the
            # next round meets the outage and waits it out. Anything else failing to record
            # is a bug of ours: a crash, for the supervisor's backoff and budget (leaving the
            # delivery due and going on would send it again and again, at once).
            log.warning("webhook %s to endpoint %d: the record is away, the attempt is not recorded: %s",
                        item.event_id, item.endpoint.id, exc)
        finally:
            self._busy.discard(item.endpoint.id)
            self._again = True
            self._nudge()

    async def _attempt(self, item: webhooks.Due) -> Attempt:
        """One attempt, its one failure boundary: whatever the receiver, DNS or the network
        do, and whatever goes wrong in here, it comes to a delivered or failed attempt,
        within ATTEMPT_SECONDS on the whole (resolve, connect, send, answer)."""
        now, started = self._clock.now(), self._clock.monotonic()
        answer = _Answer()
        error: str | None
        try:
            with trio.move_on_after(ATTEMPT_SECONDS):
                await self._send(item, now, answer)
            if answer.status is None:
                error = f"no answer within {ATTEMPT_SECONDS:g} s"
            else:  # the status counts when the deadline cut the body short (not when it broke)
                error = None if 200 <= answer.status < 300 else f"HTTP {answer.status}"
        except UnsafeUrl as exc:
            error = str(exc)
        except (httpx.HTTPError, OSError) as exc:
            error = f"{type(exc).__name__}: could not deliver"
        except Exception:
            log.exception("webhook %s to endpoint %d: the attempt failed inside the sender", item.event_id,
                          item.endpoint.id)
            error = "the attempt failed inside the service"
        # The next attempt is timed from this one's start: a Retry-After counts from the
        # answer that carried it, which came that much later (up to ATTEMPT_SECONDS).
        retry_after = answer.retry_after
        if retry_after is not None:
            assert answer.answered is not None  # set with the status, before the Retry-After is read
            retry_after += answer.answered - started
        return Attempt(now, started, answer.status, error, retry_after)

    async def _send(self, item: webhooks.Due, now: datetime, answer: _Answer) -> None:
        endpoint = item.endpoint
        test_mode = endpoint.mode == "test"  # test data only: loopback and private addresses too
        check_url(endpoint.url, self._allow_private, test_mode=test_mode)
        parts = urlsplit(endpoint.url)
        assert parts.hostname is not None
        try:
            addresses = await self._resolve(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        except UnicodeError as exc:  # a name registered before such names were refused
            raise UnsafeUrl(f"{parts.hostname} cannot be looked up ({exc})") from None
        check_resolved(parts.hostname, addresses, self._allow_private, test_mode=test_mode)
        if not addresses:
            raise UnsafeUrl(f"{parts.hostname} does not resolve")
        url, host, server_name = pinned(endpoint.url, addresses[0])
        headers = signed_headers(item.event_id, item.body, signing_secrets(
            endpoint.secret, endpoint.previous_secret, endpoint.rotated_at, now), now)
        async with self._client.stream("POST", url, content=item.body.encode(),
                                       headers={**headers, "Content-Type": "application/json", "Host": host},
                                       extensions={"sni_hostname": server_name}) as response:
            answer.status, answer.answered = response.status_code, self._clock.monotonic()
            answer.retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            await read_at_most(response, ANSWER_BYTES_MAX)

    async def _record(self, item: webhooks.Due, attempt: Attempt) -> bool:
        """The attempt recorded (and the endpoint's lease given back with it); answers
        whether the endpoint is to be paused."""
        if attempt.error is None:
            assert attempt.status is not None
            await webhooks.delivered(self._db, item.delivery_id, item.endpoint.id, attempt.status,
                                     self._elapsed(attempt.started), attempt.at, self._leases.holder)
            return False
        return await self._failed(item, attempt.status, attempt.error, attempt.retry_after, attempt.at,
                                  attempt.started)

    async def _failed(self, item: webhooks.Due, status: int | None, error: str, retry_after: float | None,
                      now: datetime, started: float) -> bool:
        endpoint = item.endpoint
        since_first = now - (item.first_attempt_at or now)
        # 410 Gone: the receiver says the endpoint is no more; pause it rather than retry.
        wait = None if status == 410 else next_wait(item.attempts + 1, since_first, retry_after, self._jitter)
        log.info("webhook %s to endpoint %d failed (attempt %d): %s", item.event_id, endpoint.id, item.attempts + 1,
                 error)
        WEBHOOK_FAILURES.inc()
        # Timed from the attempt's start, as the schedule and a Retry-After count, on the
        # database's clock: the record's now less the time the attempt took.
        since_start = self._clock.monotonic() - started
        await webhooks.failed(self._db, item.delivery_id, endpoint.id, status, self._elapsed(started), error,
                              (wait or timedelta(0)).total_seconds() - since_start, now, self._leases.holder,
                              shared=self._clock.shared_time())
        return wait is None

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


def _delivery_span(item: webhooks.Due) -> ContextManager[Span]:
    """One attempt as a client span, linked to what made its event (a revision's apply, a
    booking's request). The endpoint by its id only: a receiver's URL may carry its own
    secret."""
    caused_by = spans.from_traceparent(item.trace_parent) if spans.enabled() else None
    return spans.span("webhook delivery", kind=spans.CLIENT, links=[caused_by] if caused_by else (),
                      attributes={"connectapi.event_id": item.event_id, "connectapi.event_type": item.event_type,
                                  "connectapi.endpoint_id": item.endpoint.id,
                                  "connectapi.property_id": item.endpoint.property_id,
                                  "connectapi.attempt": item.attempts + 1})
