"""Routes without an API key: the channel manager's notification, the public webhook
contract, and the Connect API's OpenAPI document and Postman collection (documentation: a
newcomer reads them before holding a key). All are held to the caller address's `ip`
budget."""

from __future__ import annotations

import hmac
import json
import logging

from quart import Blueprint, Response, request

from ..domain.webhook_contract import contract
from . import postman
from .openapi import OPENAPI_PATH, openapi_document
from .envelope import ok
from .gates import admit, authenticated, context, refuse_auth

blueprint = Blueprint("public", __name__)
log = logging.getLogger("connectapi.intake")

NOTIFY_PATH = "/api/v1/channel-manager/notify"
CONTRACT_PATH = "/api/v1/public/webhooks/contract"
POSTMAN_PATH = "/api/v1/connect-api/postman"
NOTIFY_SECRET_HEADER = "X-Notify-Secret"


@blueprint.post(NOTIFY_PATH)
async def channel_manager_notify() -> Response:
    """A trigger only: the body names a revision, but we read revisions from the feed, so a
    forged or out-of-order notification can at worst make us look sooner."""
    arrival = await admit(needs_key=True)
    ctx = context()
    given = request.headers.get(NOTIFY_SECRET_HEADER, "")
    if not ctx.cm_notify_secret or not hmac.compare_digest(given.encode(), ctx.cm_notify_secret.encode()):
        await refuse_auth(arrival, "NOTIFY_SECRET_INVALID",
                          f"the {NOTIFY_SECRET_HEADER} header does not hold the notification secret")
    await authenticated(arrival)
    ctx.wakeups.revisions_waiting()
    return ok({"received": True})


@blueprint.get(CONTRACT_PATH)
async def webhook_contract() -> Response:
    await admit(needs_key=False)
    return ok(contract())


@blueprint.get(OPENAPI_PATH)
async def openapi() -> Response:
    """The document itself, not wrapped in the envelope: tools read it as it is."""
    await admit(needs_key=False)
    return Response(json.dumps(openapi_document()), content_type="application/json")


@blueprint.get(POSTMAN_PATH)
async def postman_collection() -> Response:
    """The collection, or with `?environment=1` its environment (baseUrl: the configured
    public URL, else this service as the caller reached it; apiKey: empty, for the caller
    to fill in)."""
    await admit(needs_key=False)
    if request.args.get("environment") == "1":
        base_url = context().public_url or request.host_url.rstrip("/")
        return Response(json.dumps(postman.environment(base_url)),
                        content_type="application/json")
    return Response(json.dumps(postman.collection()), content_type="application/json")
