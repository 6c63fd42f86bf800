"""Admin routes for the owners of properties (issue 19): people who log in to the console
and see their properties only. Created with a one-time setup link, also e-mailed."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response, request

from ...domain import emails
from ...domain.errors import ApiError
from ...domain.owners import SETUP_LINK_VALID, OwnerChange, OwnerIn, new_secret
from ...domain.paths import ADMIN_PREFIX
from ...domain.validation import parse_model
from ...storage import owners
from ...storage.owners import Owner
from ..body import raw_body
from ..context import context
from ..envelope import ok

blueprint = Blueprint("admin_owners", __name__, url_prefix=ADMIN_PREFIX)
SETUP_PATH = "/console/setup/"


def owner_view(owner: Owner) -> dict[str, Any]:
    return {"ownerId": owner.id, "email": owner.email, "name": owner.name, "propertyIds": list(owner.property_ids),
            "passwordSet": owner.password_set, "disabled": owner.disabled_at is not None,
            "disabledAt": owner.disabled_at, "createdAt": owner.created_at}


def setup_url(token: str) -> str:
    base = context().operation.public_url or request.host_url.rstrip("/")
    return f"{base}{SETUP_PATH}{token}"


def _setup_mail(name: str, url: str, reset: bool) -> tuple[str, str]:
    mail = emails.owner_setup(name, url, int(SETUP_LINK_VALID.total_seconds() // 3600), reset)
    return mail.subject, mail.body


def _unknown(exc: owners.UnknownProperties) -> ApiError:
    return ApiError("VALIDATION", "no such properties", [{"path": "propertyIds", "message": f"no property {i}"}
                                                         for i in exc.ids])


@blueprint.post("/owners")
async def create_owner() -> Response:
    body = parse_model(OwnerIn, await raw_body())
    ctx = context()
    token = new_secret()
    url = setup_url(token)
    try:
        owner_id = await owners.create(ctx.db, body.email, body.name, body.propertyIds, token, ctx.clock.now(),
                                       _setup_mail(body.name, url, reset=False))
    except owners.EmailTaken:
        raise ApiError("OWNER_EXISTS", "another owner has this e-mail") from None
    except owners.UnknownProperties as exc:
        raise _unknown(exc) from None
    ctx.properties.wakeups.mails_queued()
    return ok({"ownerId": owner_id, "setupUrl": url}, 201)


@blueprint.get("/owners")
async def list_owners() -> Response:
    return ok([owner_view(o) for o in await owners.list_all(context().db)])


async def _owner_or_404(owner_id: int) -> Owner:
    found = await owners.get(context().db, owner_id)
    if found is None:
        raise ApiError("OWNER_NOT_FOUND", f"no owner {owner_id}")
    return found


@blueprint.get("/owners/<int:owner_id>")
async def get_owner(owner_id: int) -> Response:
    return ok(owner_view(await _owner_or_404(owner_id)))


@blueprint.patch("/owners/<int:owner_id>")
async def patch_owner(owner_id: int) -> Response:
    body = parse_model(OwnerChange, await raw_body())
    ctx = context()
    try:
        changed = await owners.change(ctx.db, owner_id, body.name, body.propertyIds, body.disabled, ctx.clock.now())
    except owners.UnknownProperties as exc:
        raise _unknown(exc) from None
    if not changed:
        raise ApiError("OWNER_NOT_FOUND", f"no owner {owner_id}")
    return ok(owner_view(await _owner_or_404(owner_id)))


@blueprint.delete("/owners/<int:owner_id>")
async def delete_owner(owner_id: int) -> Response:
    if not await owners.delete(context().db, owner_id):
        raise ApiError("OWNER_NOT_FOUND", f"no owner {owner_id}")
    return ok({"ownerId": owner_id, "deleted": True})


@blueprint.post("/owners/<int:owner_id>/reset")
async def reset_owner(owner_id: int) -> Response:
    """A new setup link (the earlier one stops working; the password stays until it is used)."""
    ctx = context()
    found = await _owner_or_404(owner_id)
    if found.disabled_at is not None:
        raise ApiError("VALIDATION", "the owner is disabled: enable it first",
                       [{"path": "ownerId", "message": "disabled"}])
    token = new_secret()
    url = setup_url(token)
    if not await owners.new_setup_link(ctx.db, owner_id, token, ctx.clock.now(), _setup_mail(found.name, url, True)):
        raise ApiError("OWNER_NOT_FOUND", f"no owner {owner_id}")
    ctx.properties.wakeups.mails_queued()
    return ok({"ownerId": owner_id, "setupUrl": url})
