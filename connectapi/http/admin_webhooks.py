"""Admin routes of webhook endpoints: register (with a ping), list, pause, resume, test,
rotate the secret, and the deliveries."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response

from ..domain.admin_models import RecoverIn, RedeliverIn, WebhookEndpointIn
from ..domain.errors import ApiError
from ..domain.retention import events_kept_since
from ..domain.paths import ADMIN_PREFIX
from ..domain.validation import parse_model
from ..domain.webhook_events import PropertyFacts, ping
from ..domain.webhook_signing import new_secret
from ..domain.webhook_urls import UnsafeUrl, check_url
from ..engine import Wake
from ..storage import properties, webhooks
from .body import raw_body
from .envelope import ok
from .gates import context

blueprint = Blueprint("admin_webhooks", __name__, url_prefix=ADMIN_PREFIX)


def endpoint_view(e: webhooks.Endpoint) -> dict[str, Any]:
    return {"id": e.id, "propertyId": e.property_id, "url": e.url, "description": e.description,
            "status": e.status, "failingSince": e.failing_since, "pausedAt": e.paused_at, "createdAt": e.created_at}


async def _endpoint_or_404(endpoint_id: int) -> webhooks.Endpoint:
    found = await webhooks.endpoint(context().db, endpoint_id)
    if found is None:
        raise ApiError("WEBHOOK_NOT_FOUND", f"no webhook endpoint {endpoint_id}")
    return found


async def _send_ping(e: webhooks.Endpoint, reason: str) -> str:
    ctx = context()
    prop = await properties.get_property(ctx.db, e.property_id)
    assert prop is not None
    event = ping(PropertyFacts(prop.id, prop.name, prop.currency, prop.timezone), ctx.clock.now(), reason)

    await webhooks.record_event_now(ctx.db, prop.id, event, [e.id], ctx.clock.now())
    ctx.webhooks.try_tell(Wake())
    return event.id


@blueprint.post("/properties/<int:property_id>/webhooks")
async def register(property_id: int) -> Response:
    ctx = context()
    body = parse_model(WebhookEndpointIn, await raw_body())
    try:
        url = check_url(body.url, ctx.webhook_allow_private)
    except UnsafeUrl as exc:
        raise ApiError("VALIDATION", "request does not match the schema", [{"path": "url", "message": str(exc)}]) from None
    if await properties.get_property(ctx.db, property_id) is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    secret = new_secret()
    made = await webhooks.create_endpoint(ctx.db, property_id, url, body.description, secret, ctx.clock.now())
    event_id = await _send_ping(made, "registered")
    return ok({**endpoint_view(made), "secret": secret, "pingEventId": event_id}, 201)


@blueprint.get("/properties/<int:property_id>/webhooks")
async def list_endpoints(property_id: int) -> Response:
    return ok([endpoint_view(e) for e in await webhooks.endpoints_of(context().db, property_id)])


@blueprint.post("/webhooks/<int:endpoint_id>/pause")
async def pause(endpoint_id: int) -> Response:
    await _endpoint_or_404(endpoint_id)
    await webhooks.pause(context().db, endpoint_id, context().clock.now())
    return ok(endpoint_view(await _endpoint_or_404(endpoint_id)))


@blueprint.post("/webhooks/<int:endpoint_id>/resume")
async def resume(endpoint_id: int) -> Response:
    await _endpoint_or_404(endpoint_id)
    await webhooks.resume(context().db, endpoint_id, context().clock.now())
    context().webhooks.try_tell(Wake())
    return ok(endpoint_view(await _endpoint_or_404(endpoint_id)))


@blueprint.post("/webhooks/<int:endpoint_id>/test")
async def test(endpoint_id: int) -> Response:
    event_id = await _send_ping(await _endpoint_or_404(endpoint_id), "test")
    return ok({"eventId": event_id}, 202)


@blueprint.post("/webhooks/<int:endpoint_id>/rotate-secret")
async def rotate(endpoint_id: int) -> Response:
    await _endpoint_or_404(endpoint_id)
    secret = new_secret()
    await webhooks.rotate_secret(context().db, endpoint_id, secret, context().clock.now())
    return ok({"id": endpoint_id, "secret": secret}, 201)


@blueprint.get("/webhooks/<int:endpoint_id>/deliveries")
async def deliveries(endpoint_id: int) -> Response:
    await _endpoint_or_404(endpoint_id)
    found = await webhooks.deliveries_of(context().db, endpoint_id)
    return ok([{"eventId": d.event_id, "type": d.type, "attempt": d.attempts, "status": d.status,
                "responseStatus": d.response_status, "durationMs": d.duration_ms,
                "nextAttemptAt": d.next_attempt_at, "lastError": d.last_error} for d in found])


@blueprint.post("/webhooks/<int:endpoint_id>/redeliver")
async def redeliver(endpoint_id: int) -> Response:
    ctx = context()
    body = parse_model(RedeliverIn, await raw_body())
    found = await _endpoint_or_404(endpoint_id)
    if not await webhooks.queue_again(ctx.db, found, body.eventId, None, ctx.clock.now()):
        raise ApiError("EVENT_NOT_FOUND", f"no event {body.eventId} of this endpoint's property")
    ctx.webhooks.try_tell(Wake())
    return ok({"eventId": body.eventId}, 202)


@blueprint.post("/webhooks/<int:endpoint_id>/recover")
async def recover(endpoint_id: int) -> Response:
    ctx = context()
    body = parse_model(RecoverIn, await raw_body())
    found = await _endpoint_or_404(endpoint_id)
    now = ctx.clock.now()
    # Events are kept for the deliveries' retention: recover reaches back that far and no
    # further (an older event still in the record is not sent: the answer would depend on
    # when the janitor last ran), and says how far it reached.
    kept_since = events_kept_since(ctx.retention, now)
    queued = await webhooks.queue_again(ctx.db, found, None, max(body.since, kept_since), now)
    ctx.webhooks.try_tell(Wake())
    return ok({"events": queued, "keptSince": kept_since}, 202)
