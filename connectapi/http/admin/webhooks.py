"""Admin routes of webhook endpoints: register (with a ping), list, pause, resume, test,
rotate the secret, and the deliveries. What they do is webhook_endpoints', shared with the
owner's console."""

from __future__ import annotations

from quart import Blueprint, Response

from ...domain.admin_models import RecoverIn, RedeliverIn, WebhookEndpointIn
from ...domain.errors import ApiError
from ...domain.paths import ADMIN_PREFIX
from ...domain.validation import parse_model
from ...storage import webhooks
from ..body import raw_body
from ..context import context
from ..envelope import ok
from ..shared import webhook_endpoints
from .answers import EndpointView, RegisteredEndpoint

blueprint = Blueprint("admin_webhooks", __name__, url_prefix=ADMIN_PREFIX)


def endpoint_view(e: webhooks.Endpoint) -> EndpointView:
    return {"id": e.id, "propertyId": e.of_property, "mode": e.mode, "url": e.url, "description": e.description,
            "status": e.status, "failingSince": e.failing_since, "pausedAt": e.paused_at, "createdAt": e.created_at}


async def _endpoint_or_404(endpoint_id: int) -> webhooks.Endpoint:
    found = await webhooks.endpoint(context().db, endpoint_id)
    if found is None:
        raise ApiError("WEBHOOK_NOT_FOUND", f"no webhook endpoint {endpoint_id}")
    return found


@blueprint.post("/properties/<int:property_id>/webhooks")
async def register(property_id: int) -> Response:
    body = parse_model(WebhookEndpointIn, await raw_body())
    made = await webhook_endpoints.register(property_id, body.url, body.description, body.mode)
    registered: RegisteredEndpoint = {**endpoint_view(made.endpoint), "secret": made.secret,
                                      "pingEventId": made.ping_event_id}
    return ok(registered, 201)


@blueprint.get("/properties/<int:property_id>/webhooks")
async def list_endpoints(property_id: int) -> Response:
    return ok([endpoint_view(e) for e in await webhooks.endpoints_of(context().db, property_id)])


@blueprint.post("/webhooks/<int:endpoint_id>/pause")
async def pause(endpoint_id: int) -> Response:
    await webhook_endpoints.pause(await _endpoint_or_404(endpoint_id))
    return ok(endpoint_view(await _endpoint_or_404(endpoint_id)))


@blueprint.post("/webhooks/<int:endpoint_id>/resume")
async def resume(endpoint_id: int) -> Response:
    await webhook_endpoints.resume(await _endpoint_or_404(endpoint_id))
    return ok(endpoint_view(await _endpoint_or_404(endpoint_id)))


@blueprint.post("/webhooks/<int:endpoint_id>/test")
async def test(endpoint_id: int) -> Response:
    event_id = await webhook_endpoints.send_ping(await _endpoint_or_404(endpoint_id), "test")
    return ok({"eventId": event_id}, 202)


@blueprint.post("/webhooks/<int:endpoint_id>/rotate-secret")
async def rotate(endpoint_id: int) -> Response:
    secret = await webhook_endpoints.rotate_secret(await _endpoint_or_404(endpoint_id))
    return ok({"id": endpoint_id, "secret": secret}, 201)


@blueprint.get("/webhooks/<int:endpoint_id>/deliveries")
async def deliveries(endpoint_id: int) -> Response:
    await _endpoint_or_404(endpoint_id)
    found = await webhooks.deliveries_of(context().db, endpoint_id)
    return ok([{"eventId": d.event_id, "type": d.type, "attempt": d.attempts, "status": d.status,
                "responseStatus": d.response_status, "durationMs": d.duration_ms,
                "nextAttemptAt": d.next_attempt_at, "lastError": d.last_error, "traceId": d.trace_id} for d in found])


@blueprint.post("/webhooks/<int:endpoint_id>/redeliver")
async def redeliver(endpoint_id: int) -> Response:
    body = parse_model(RedeliverIn, await raw_body())
    if not await webhook_endpoints.redeliver(await _endpoint_or_404(endpoint_id), body.eventId):
        raise ApiError("EVENT_NOT_FOUND", f"no event {body.eventId} of this endpoint's property")
    return ok({"eventId": body.eventId}, 202)


@blueprint.post("/webhooks/<int:endpoint_id>/recover")
async def recover(endpoint_id: int) -> Response:
    body = parse_model(RecoverIn, await raw_body())
    done = await webhook_endpoints.recover(await _endpoint_or_404(endpoint_id), body.since)
    return ok({"events": done.events, "keptSince": done.kept_since}, 202)
