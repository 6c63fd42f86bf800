"""Serving the sandbox channel manager with hypercorn, in-process or alone (`connectapi sandbox-cm`),
and its webhooks as Channex sends them (Webhook Collection, "Payloads")."""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve
from typing_extensions import NotRequired, TypedDict

from ...engine import Clock, SystemClock
from .bookings import BookingFeed
from .server import sandbox_asgi_app
from .state import Limits, SandboxState

# How often the sandbox looks for revisions left unacknowledged REMIND_AFTER (on its clock):
# a reminder goes out at most this late.
REMIND_EVERY_SECONDS = 30.0


async def serve_sandbox(state: SandboxState, api_key: str, clock: Clock, host: str, port: int,
                        shutdown: trio.Event,
                        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve until `shutdown` is set; hands back the base URL once listening. Meanwhile it
    tells the bookings' reminder listeners of revisions left unacknowledged 30 minutes."""
    config = HypercornConfig()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None

    async with trio.open_nursery() as nursery:
        async def served(task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
            with sandbox_asgi_app(state, api_key, clock) as app:
                await serve(app, config, shutdown_trigger=shutdown.wait, task_status=task_status)
            nursery.cancel_scope.cancel()  # the reminders stop with the server

        nursery.start_soon(remind_unacknowledged, state.bookings, clock)
        binds = await nursery.start(served)
        task_status.started(binds[0])


async def remind_unacknowledged(bookings: BookingFeed, clock: Clock) -> None:
    while True:
        await trio.sleep(REMIND_EVERY_SECONDS)
        bookings.remind(clock.now())


log = logging.getLogger("connectapi.sandbox")
# The header the service's /api/v1/channel-manager/notify checks: the default custom header
# of the sandbox's webhook (Channex's webhooks are unsigned; the subscriber configures
# headers, e.g. {"Authorization": "Basic user:password"}).
NOTIFY_SECRET_HEADER = "X-Notify-Secret"


@dataclass(frozen=True)
class Webhook:
    """A webhook subscription as Channex keeps one: callback_url, headers, send_data."""

    callback_url: str
    headers: dict[str, str] = field(default_factory=dict)
    send_data: bool = True
    user_id: str | None = None  # who made the change: null for an OTA's booking


class WebhookEvent(TypedDict):
    """A webhook's body: keys in this order, `payload` left out when the subscription does
    not send data."""

    event: str  # booking | non_acked_booking
    payload: NotRequired[dict[str, str]]  # {booking_id, property_id, revision_id}
    property_id: str
    user_id: str | None
    timestamp: str


def event_body(event: str, payload: dict[str, str], hook: Webhook, clock: Clock) -> WebhookEvent:
    """The payload of `non_acked_booking` is not documented: ours repeats the `booking` one."""
    timestamp = clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if hook.send_data:
        return {"event": event, "payload": payload, "property_id": payload["property_id"], "user_id": hook.user_id,
                "timestamp": timestamp}
    return {"event": event, "property_id": payload["property_id"], "user_id": hook.user_id, "timestamp": timestamp}


def webhook_sender(hook: Webhook, client: httpx.AsyncClient,
                   clock: Clock) -> Callable[[str], Callable[[dict[str, str]], None]]:
    """listener(event) -> a BookingFeed listener sending that event in the background (a
    trigger to pull the feed, never the booking's data)."""
    async def send(event: str, payload: dict[str, str]) -> None:
        try:
            answer = await client.post(hook.callback_url, json=event_body(event, payload, hook, clock),
                                       headers=hook.headers)
            if answer.status_code >= 300:
                log.warning("%s webhook answered %d", event, answer.status_code)
        except httpx.HTTPError as exc:
            log.warning("%s webhook failed: %s", event, type(exc).__name__)

    def listener(event: str) -> Callable[[dict[str, str]], None]:
        def notify(payload: dict[str, str]) -> None:
            trio.lowlevel.spawn_system_task(send, event, payload)

        return notify

    return listener


def notifier(url: str, secret: str, client: httpx.AsyncClient,
             clock: Clock | None = None) -> Callable[[dict[str, str]], None]:
    """The `booking` webhook to `url` with the secret in X-Notify-Secret (what the service's
    notify route checks)."""
    hook = Webhook(url, {NOTIFY_SECRET_HEADER: secret})
    return webhook_sender(hook, client, clock or SystemClock())("booking")


def subscribe(bookings: BookingFeed, hook: Webhook, client: httpx.AsyncClient, clock: Clock) -> None:
    """Send `booking` for every revision and `non_acked_booking` for one left unacknowledged."""
    listener = webhook_sender(hook, client, clock)
    bookings.listeners.append(listener("booking"))
    bookings.reminder_listeners.append(listener("non_acked_booking"))


def run_standalone(host: str, port: int, api_key: str, limits: Limits, notify_url: str | None = None,
                   notify_secret: str | None = None, call_seconds: float = 0.0,
                   notify_headers: dict[str, str] | None = None, send_data: bool = True) -> None:
    """`notify_headers` are the subscription's custom headers; with `notify_secret` they
    include X-Notify-Secret."""
    headers = dict(notify_headers or {})
    if notify_secret:
        headers.setdefault(NOTIFY_SECRET_HEADER, notify_secret)

    async def main() -> None:
        stop = trio.Event()
        clock = SystemClock()
        state = SandboxState(limits, call_seconds)
        async with trio.open_nursery() as nursery, httpx.AsyncClient(timeout=10) as client:
            if notify_url:
                subscribe(state.bookings, Webhook(notify_url, headers, send_data), client, clock)
            url = await nursery.start(serve_sandbox, state, api_key, clock, host, port, stop)
            print(f"sandbox channel manager listening on {url}", file=sys.stderr, flush=True)
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    break
            stop.set()

    trio.run(main)
