"""Routes without an API key: the channel manager's notification, the public webhook
contract and the Connect API's OpenAPI document. All are held to the caller address's `ip`
budget."""

from __future__ import annotations

import hmac
import json
import logging

from quart import Blueprint, Response, request

from ..domain.webhook_contract import contract
from .openapi import OPENAPI_PATH, openapi_document
from .envelope import ok
from .gates import admit, context, refuse_auth

blueprint = Blueprint("public", __name__)
log = logging.getLogger("connectapi.intake")

NOTIFY_PATH = "/api/v1/channel-manager/notify"
CONTRACT_PATH = "/api/v1/public/webhooks/contract"
NOTIFY_SECRET_HEADER = "X-Notify-Secret"


@blueprint.post(NOTIFY_PATH)
async def channel_manager_notify() -> Response:
    """A trigger only: the body names a revision, but we read revisions from the feed, so a
    forged or out-of-order notification can at worst make us look sooner."""
    address = await admit(needs_key=True)
    ctx = context()
    given = request.headers.get(NOTIFY_SECRET_HEADER, "")
    if not ctx.cm_notify_secret or not hmac.compare_digest(given.encode(), ctx.cm_notify_secret.encode()):
        await refuse_auth(address, "NOTIFY_SECRET_INVALID",
                          f"the {NOTIFY_SECRET_HEADER} header does not hold the notification secret")
    ctx.intake.wake()
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
