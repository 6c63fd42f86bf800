"""The Connect API's gates, in the contract's order, before any route runs.

ip and global -> body size -> ip-auth -> key -> allowlist -> property status -> product
-> scope -> key and property budgets. Budgets are counted in the record (BudgetKeeper).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, NoReturn

from quart import current_app, g, request

from ..domain import api_keys as keyfmt
from ..domain.addresses import Allowlist
from ..domain.budgets import RequestKind
from ..domain.errors import ApiError
from ..storage import api_keys
from ..storage.records import ApiKey, KeyWithProperty, Property
from .budget_keeper import Admitted
from .context import FrontContext

from ..domain.paths import CONNECT_PREFIX as CONNECT_PREFIX
from ..domain.query_text import not_utf8
MAX_BODY_BYTES = 1_048_576
# lastUsedAt is written at most this often per key, so a busy key is not a write per request.
LAST_USED_EVERY = timedelta(seconds=60)

Product = Literal["channelManager", "pms"]


@dataclass(frozen=True, slots=True)
class RouteRule:
    scope: str | None  # None: any valid key
    product: Product | None
    kind: RequestKind


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller of this request."""

    key: ApiKey
    property: Property
    address: str


View = Callable[..., Awaitable[Any]]


def rule(scope: str | None = None, product: Product | None = None, kind: RequestKind = RequestKind.READ) -> Callable[[View], View]:
    """Mark a Connect API view with what it needs; the gates read it before the view runs."""

    def mark(view: View) -> View:
        view.connect_rule = RouteRule(scope, product, kind)  # type: ignore[attr-defined]
        return view

    return mark


def caller() -> Caller:
    found: Caller = g.caller
    return found


def context() -> FrontContext:
    ctx: FrontContext = current_app.config["CONNECTAPI"]
    return ctx


def client_address() -> str:
    """The caller's address: the peer, or what a trusted proxy says it forwarded."""
    # Every X-Forwarded-For line, in order, is one list (RFC 9110, 5.3): a proxy that adds a
    # line of its own instead of extending the first would otherwise let the client's own
    # first line name any address it likes.
    forwarded = ", ".join(request.headers.getlist("X-Forwarded-For")) or None
    return context().proxies.client_address(request.remote_addr or "", forwarded)


@dataclass(frozen=True, slots=True)
class Arrival:
    address: str
    # `global` waits for the key (its open share is spent): see BudgetKeeper.admit.
    global_deferred: bool = False


async def admit(needs_key: bool) -> Arrival:
    """The address's `ip` budget and `global` (and, when a key will be looked up, its
    `ip-auth` one); answers the client's address."""
    ctx = context()
    address = client_address()
    entry = await ctx.budgets_kept.admit(address, needs_key)
    g.ratelimit = (("ip", entry.ip),)
    if entry.refusal is not None:
        raise entry.refusal
    return Arrival(address, entry.global_deferred)


async def refuse_auth(arrival: Arrival, code: str, message: str, details: dict[str, Any] | None = None) -> NoReturn:
    """A refusal of who the caller is (401, or 403 for an allowlist) that also counts
    against the address's `ip-auth` budget; or, for a request past the open share of
    `global`, that budget's 429 (still counted on `ip-auth`: a flood past the share is
    held to its lookups per address)."""
    ctx = context()
    await ctx.budgets_kept.auth_failed(arrival.address)
    if arrival.global_deferred:
        refusal = await ctx.budgets_kept.charge_global(key_good=False)
        if refusal is not None:
            raise refusal
    raise ApiError(code, message, details)


async def authenticated(arrival: Arrival) -> None:
    """The caller proved who it is: a request that waited for it is charged to `global` now."""
    if arrival.global_deferred:
        ctx = context()
        refusal = await ctx.budgets_kept.charge_global(key_good=True)
        if refusal is not None:
            raise refusal


async def run_gates() -> None:
    ctx = context()
    route = _route_rule()
    if route is not None:
        known = _known_good(ctx, route)
        if known is not None:
            # Every gate but the budgets passed from what this process holds: the budgets
            # are then one statement, not two.
            admitted = await ctx.budgets_kept.admit_known(known.address, known.key.id, known.property.id,
                                                         route.kind)
            await _admitted(ctx, admitted, known)
            return
    arrival = await admit(needs_key=route is not None)
    address = arrival.address

    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise ApiError("PAYLOAD_TOO_LARGE", f"the body exceeds {MAX_BODY_BYTES} bytes")
    if route is None:
        return  # the router's 404 or 405 follows, in the envelope

    found = await _authenticate(ctx, arrival)
    key, prop = found.key, found.property
    if key.allowlist and not Allowlist(key.allowlist).allows(address):
        # Not a good caller yet: a key used from outside its allowlist gets none of the part
        # of `global` kept for good keys.
        await api_keys.record_allowlist_refusal(ctx.db, key.id, prop.id, address, ctx.clock.now())
        await refuse_auth(arrival, "IP_NOT_ALLOWED", "this key is not allowed from this address",
                          {"address": address})
    await authenticated(arrival)

    refused = _property_and_scope_refusal(key, prop, route)
    if refused is not None:
        raise refused

    admitted = await ctx.budgets_kept.admit_request(key.id, prop.id, route.kind)
    await _admitted(ctx, admitted, Caller(key, prop, address))


def _route_rule() -> RouteRule | None:
    """The matched route's rule; None when nothing under the prefix matched (404/405)."""
    if request.routing_exception is not None:
        return None
    assert request.url_rule is not None and request.url_rule.endpoint is not None
    view = current_app.view_functions[request.url_rule.endpoint]
    route = getattr(view, "connect_rule", None)
    if not isinstance(route, RouteRule):
        raise RuntimeError(f"{request.url_rule.endpoint} is under the API prefix without a rule()")
    return route


def _known_good(ctx: FrontContext, route: RouteRule) -> Caller | None:
    """The caller, when this process's key cache already holds its key and every gate but
    the budgets lets it through; None sends the request the long way, gate by gate (a
    refusal is then given in the contract's order)."""
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        return None
    token = keyfmt.bearer_token(request.headers.get("Authorization"))
    if token is None or not keyfmt.is_well_formed(token):
        return None
    wanted = keyfmt.digest(token)
    found = ctx.keys.cached(wanted)
    if found is None or not keyfmt.same_digest(found.digest, wanted) or found.key.revoked_at is not None:
        return None
    key, prop, address = found.key, found.property, client_address()
    if key.allowlist and not Allowlist(key.allowlist).allows(address):
        return None
    if _property_and_scope_refusal(key, prop, route) is not None:
        return None
    return Caller(key, prop, address)


def _property_and_scope_refusal(key: ApiKey, prop: Property, route: RouteRule) -> ApiError | None:
    """The gates after the key's own, in the contract's order: property status, product, scope."""
    if prop.status != "active":
        return ApiError("PROPERTY_UNAVAILABLE", "the property is not available")
    if route.product == "channelManager" and not prop.channel_manager:
        return ApiError("CHANNEL_MANAGER_DISABLED", "the property's channel manager is off")
    if route.product == "pms" and not prop.pms:
        return ApiError("PMS_NOT_AVAILABLE", "the property has no PMS")
    if route.scope is not None and route.scope not in key.scopes:
        return ApiError("SCOPE_MISSING", f"this key lacks the {route.scope} scope",
                        {"needed": route.scope, "held": list(key.scopes)})
    return None


async def _admitted(ctx: FrontContext, admitted: Admitted, who: Caller) -> None:
    g.ratelimit = admitted.policies
    if admitted.refusal is not None:
        raise admitted.refusal
    g.caller = who
    now = ctx.clock.now()
    if ctx.keys.due_for_touch(who.key.id, who.key.last_used_at, now, LAST_USED_EVERY):
        await api_keys.touch_last_used(ctx.db, who.key.id, now, LAST_USED_EVERY)
    if request.query_string and (issues := not_utf8(request.query_string)):
        # Before any route reads `request.args`, which would see U+FFFD.
        raise ApiError("VALIDATION", "query does not match the schema", issues)


async def _authenticate(ctx: FrontContext, arrival: Arrival) -> KeyWithProperty:
    """The key and its property, or a 401 that also counts against the address."""
    token = keyfmt.bearer_token(request.headers.get("Authorization"))
    if token is None or not keyfmt.is_well_formed(token):
        await refuse_auth(arrival, "API_KEY_INVALID", "a valid API key is required as a Bearer token")
    wanted = keyfmt.digest(token)
    found = await ctx.keys.find(wanted)
    if found is None or not keyfmt.same_digest(found.digest, wanted):
        await refuse_auth(arrival, "API_KEY_INVALID", "a valid API key is required as a Bearer token")
    if found.key.revoked_at is not None:
        await refuse_auth(arrival, "API_KEY_REVOKED", "this API key was revoked or rotated")
    return found

