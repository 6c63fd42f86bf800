"""The documents anyone may read without a key: the public webhook contract, and the Connect
API's OpenAPI document and Postman collection (a newcomer reads them before holding a
key). Each is held to the caller address's `ip` budget."""

from __future__ import annotations

import json

from quart import Blueprint, Response, request

from ...domain.webhook_contract import contract
from ..api.gates import admit
from ..context import context
from ..envelope import ok
from . import postman
from .openapi import OPENAPI_PATH, openapi_document

blueprint = Blueprint("public", __name__)

CONTRACT_PATH = "/api/v1/public/webhooks/contract"
POSTMAN_PATH = "/api/v1/connect-api/postman"


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
        base_url = context().operation.public_url or request.host_url.rstrip("/")
        return Response(json.dumps(postman.environment(base_url)),
                        content_type="application/json")
    return Response(json.dumps(postman.collection()), content_type="application/json")
