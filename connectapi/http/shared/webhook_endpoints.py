"""What is done to a property's webhook endpoints, for the operator's admin routes and the
owner's console alike: register (with its ping), pause, resume, a test ping, rotate the
secret, redeliver one event, recover everything since an instant. Each one wakes the
sender when there is something for it to send. Who may act on which endpoint is the
caller's to check (the admin token reaches every endpoint; an owner its properties')."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ...domain.errors import ApiError
from ...domain.retention import events_kept_since
from ...domain.webhook_events import PropertyFacts, ping
from ...domain.webhook_signing import new_secret
from ...domain.webhook_urls import UnsafeUrl, check_url
from ...storage import properties, webhooks
from ...storage.webhooks import Endpoint
from ..context import context
from .twin_records import test_record_of


@dataclass(frozen=True, slots=True)
class Registered:
    endpoint: Endpoint
    secret: str  # shown once, to whoever registered it
    ping_event_id: str


@dataclass(frozen=True, slots=True)
class Recovered:
    events: int  # how many were queued again
    kept_since: datetime  # how far back events are kept: recover reaches no further


def checked_url(url: str, test_mode: bool = False) -> str:
    """The URL as it will be registered, or VALIDATION at `url` saying why not. A test
    endpoint may be plain http on loopback and private addresses (decision 0137)."""
    try:
        return check_url(url, context().operation.webhook_allow_private, test_mode=test_mode)
    except UnsafeUrl as exc:
        raise ApiError("VALIDATION", "request does not match the schema",
                       [{"path": "url", "message": str(exc)}]) from None


async def send_ping(endpoint: Endpoint, reason: str) -> str:
    """A ping event for this endpoint alone (queued: a paused endpoint gets it when resumed);
    answers its event id."""
    ctx = context()
    prop = await properties.get_property(ctx.db, endpoint.property_id)
    assert prop is not None
    event = ping(PropertyFacts(prop.live_id, prop.name, prop.currency, prop.timezone, prop.mode), ctx.clock.now(),
                 reason)
    await webhooks.record_event_now(ctx.db, prop.id, event, [endpoint.id], ctx.clock.now(), ctx.clock.shared_time())
    ctx.properties.wakeups.events_queued()
    return event.id


async def register(property_id: int, url: str, description: str | None, mode: str = "live") -> Registered:
    """A new endpoint of an existing (live) property with a fresh secret, pinged at once. A
    test endpoint is an endpoint of the property's test twin (made now if it has none): it
    receives the test record's events."""
    ctx = context()
    url = checked_url(url, test_mode=mode == "test")
    if await properties.get_live_property(ctx.db, property_id) is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    if mode == "test":
        twin = await test_record_of(property_id)
        if twin is None:
            raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
        property_id = twin
    secret = new_secret()
    made = await webhooks.create_endpoint(ctx.db, property_id, url, description, secret, ctx.clock.now())
    return Registered(made, secret, await send_ping(made, "registered"))


async def pause(endpoint: Endpoint) -> None:
    await webhooks.pause(context().db, endpoint.id, context().clock.now())


async def resume(endpoint: Endpoint) -> None:
    """Active again; what waited goes now."""
    await webhooks.resume(context().db, endpoint.id, context().clock.shared_time())
    context().properties.wakeups.events_queued()


async def rotate_secret(endpoint: Endpoint) -> str:
    """A new secret (answered once); the previous one still signs for a day."""
    secret = new_secret()
    await webhooks.rotate_secret(context().db, endpoint.id, secret, context().clock.now())
    return secret


async def redeliver(endpoint: Endpoint, event_id: str) -> bool:
    """One event of the endpoint's property queued for it again, with its own id; False when
    the property has no such event (any more)."""
    ctx = context()
    if not await webhooks.queue_again(ctx.db, endpoint, event_id, None, ctx.clock.now(), ctx.clock.shared_time()):
        return False
    ctx.properties.wakeups.events_queued()
    return True


async def recover(endpoint: Endpoint, since: datetime) -> Recovered:
    """Every event of the endpoint's property since the instant queued for it again."""
    ctx = context()
    now = ctx.clock.now()
    # Events are kept for the deliveries' retention: recover reaches back that far and no
    # further (an older event still in the record is not sent: the answer would depend on
    # when the janitor last ran), and says how far it reached.
    kept_since = events_kept_since(ctx.operation.retention, now)
    queued = await webhooks.queue_again(ctx.db, endpoint, None, max(since, kept_since), now, ctx.clock.shared_time())
    ctx.properties.wakeups.events_queued()
    return Recovered(queued, kept_since)
