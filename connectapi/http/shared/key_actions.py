"""What is done to a property's API keys, for the admin API and the owners' console alike:
the secret made here and returned once (only its digest and display prefix are kept), the
live-key limit, and the key cache invalidated after every change, so that a narrowed,
rotated or revoked key stops working at once.

`property_id` on a key's action: the key must be that property's, or it is not found (the
console acts on one owned property's keys; the admin API, holding every property, passes
None)."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from typing_extensions import TypedDict

from ...domain import api_keys as keyfmt
from ...domain.admin_models import KeyIn, KeyPatch
from ...domain.errors import ApiError
from ...storage import api_keys
from ...storage.records import ApiKey
from ..context import context
from .twin_records import test_record_of


def _not_found(key_id: int, live: bool = True) -> ApiError:
    return ApiError("KEY_NOT_FOUND", f"no live key {key_id}" if live else f"no key {key_id}")


async def create_key(property_id: int, body: KeyIn) -> tuple[ApiKey, str]:
    """A new key of the (live) property and its secret, or KEY_LIMIT_REACHED. A test key is
    a key of the property's test twin, made now if it has none."""
    ctx = context()
    owner = property_id if body.mode == "live" else await test_record_of(property_id)
    if owner is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    secret = keyfmt.new_key(body.mode)
    try:
        key = await api_keys.create_key(
            ctx.db, owner, body.label, keyfmt.digest(secret), keyfmt.display_prefix(secret),
            body.granted_scopes(), body.allowlist,
        )
    except api_keys.KeyLimitReached:
        raise ApiError(
            "KEY_LIMIT_REACHED", f"a property has at most {api_keys.MAX_LIVE_KEYS} live keys of each mode"
        ) from None
    return key, secret


async def list_keys(property_id: int) -> list[ApiKey]:
    return await api_keys.list_keys(context().db, property_id)


class AllowlistRefusal(TypedDict):
    """A request refused by a key's allowlist."""

    key_id: int
    address: str  # the client's address, as text
    at: datetime


async def allowlist_refusals(property_id: int) -> list[AllowlistRefusal]:
    """The latest requests refused by a key's allowlist, newest first."""
    rows = await api_keys.allowlist_refusals(context().db, property_id)
    # The storage reads these three columns (key_id bigint, address text, at timestamptz)
    # into plain dicts: the cast names their shape, without copying each row.
    return [cast(AllowlistRefusal, row) for row in rows]


async def patch_key(key_id: int, patch: KeyPatch, property_id: int | None = None) -> ApiKey:
    ctx = context()
    key = await api_keys.patch_key(ctx.db, key_id, patch.label, patch.scopes, patch.allowlist, property_id)
    ctx.keys.invalidate()
    if key is None:
        raise _not_found(key_id)
    return key


async def rotate_key(key_id: int, property_id: int | None = None) -> tuple[ApiKey, str]:
    """The new key (the old one's label, scopes, allowlist and mode) and its secret; the old
    one is revoked."""
    ctx = context()
    old = await api_keys.get_key(ctx.db, key_id)
    secret = keyfmt.new_key(old.mode if old is not None else "live")  # none: NoSuchKey below
    try:
        key = await api_keys.rotate_key(
            ctx.db, key_id, keyfmt.digest(secret), keyfmt.display_prefix(secret), ctx.clock.now(), property_id
        )
    except api_keys.NoSuchKey:
        raise _not_found(key_id) from None
    ctx.keys.invalidate()
    return key, secret


async def revoke_key(key_id: int, property_id: int | None = None) -> ApiKey:
    ctx = context()
    key = await api_keys.revoke_key(ctx.db, key_id, ctx.clock.now(), property_id)
    ctx.keys.invalidate()
    if key is None:
        raise _not_found(key_id, live=False)
    return key


async def get_key(key_id: int, property_id: int) -> ApiKey:
    """A key of the property, live or revoked; KEY_NOT_FOUND for a key of another property
    exactly as for one that does not exist."""
    key = await api_keys.get_key(context().db, key_id)
    if key is None or key.of_property != property_id:
        raise _not_found(key_id, live=False)
    return key
