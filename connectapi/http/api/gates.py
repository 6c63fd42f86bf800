"""The Connect API's gates, in the contract's order, before any route runs.

ip and global -> body size -> ip-auth -> key -> allowlist -> property status -> product
-> scope -> key and property budgets. Budgets are counted in the record (BudgetKeeper).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, NoReturn

from quart import current_app, g
from quart.wrappers import Request

from ...domain import api_keys as keyfmt
from ...domain.addresses import Allowlist
from ...budgets.rules import RequestKind
from ...domain.errors import ApiError
from ...storage import api_keys
from ...storage.records import ApiKey, KeyWithProperty, Property
from ...budgets.keeper import Admitted
from ..context import FrontContext, address_of, client_address, context, current_globals

from ...domain.paths import CONNECT_PREFIX as CONNECT_PREFIX
from ...domain.query_text import not_utf8
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


@dataclass(frozen=True, slots=True)
class Arrival:
    address: str
    # `global` waits for the key (its open share is spent): see BudgetKeeper.admit.
    global_deferred: bool = False
    mode: str = "live"  # the mode of the key presented: its budgets are counted apart


async def admit(needs_key: bool, address: str | None = None, mode: str = "live") -> Arrival:
    """The address's `ip` budget and `global` (and, when a key will be looked up, its
    `ip-auth` one), of the mode of the key presented; answers the client's address
    (`address`, when the caller has it)."""
    ctx = context()
    if address is None:
        address = client_address()
    entry = await ctx.budgets.keeper.admit(address, needs_key, mode)
    g.ratelimit = (("ip", entry.ip),)
    if entry.refusal is not None:
        raise entry.refusal
    return Arrival(address, entry.global_deferred, mode)


async def refuse_auth(arrival: Arrival, code: str, message: str, details: dict[str, Any] | None = None) -> NoReturn:
    """A refusal of who the caller is (401, or 403 for an allowlist) that also counts
    against the address's `ip-auth` budget; or, for a request past the open share of
    `global`, that budget's 429 (still counted on `ip-auth`: a flood past the share is
    held to its lookups per address)."""
    await _refuse_caller(arrival, ApiError(code, message, details))


async def _refuse_caller(arrival: Arrival, refusal: ApiError) -> NoReturn:
    ctx = context()
    await ctx.budgets.keeper.auth_failed(arrival.address, arrival.mode)
    if arrival.global_deferred:
        over = await ctx.budgets.keeper.charge_global(key_good=False, mode=arrival.mode)
        if over is not None:
            raise over
    raise refusal


async def authenticated(arrival: Arrival) -> None:
    """The caller proved who it is: a request that waited for it is charged to `global` now."""
    if arrival.global_deferred:
        ctx = context()
        refusal = await ctx.budgets.keeper.charge_global(key_good=True, mode=arrival.mode)
        if refusal is not None:
            raise refusal


@dataclass(frozen=True, slots=True)
class Refused:
    """The first gate (other than a budget) that refuses, and its answer."""

    gate: Literal["body", "key", "allowlist", "property"]
    error: ApiError


def body_refusal(length: int | None) -> ApiError | None:
    if length is not None and length > MAX_BODY_BYTES:
        return ApiError("PAYLOAD_TOO_LARGE", f"the body exceeds {MAX_BODY_BYTES} bytes")
    return None


def judge(route: RouteRule, length: int | None, presented: bytes | None, found: KeyWithProperty | None,
          address: str) -> Caller | Refused:
    """Every gate but the budgets, in the contract's order, from what is known of the
    request: the body's declared length, the digest of the key presented (None: no
    well-formed key), the key of that digest and its property (None: no such key), and
    the caller's address. The one place these gates are written; `run_gates` charges the
    budgets around it."""
    if (too_large := body_refusal(length)) is not None:
        return Refused("body", too_large)
    if presented is None or found is None or not keyfmt.same_digest(found.digest, presented):
        return Refused("key", ApiError("API_KEY_INVALID", "a valid API key is required as a Bearer token"))
    key, prop = found.key, found.property
    if key.revoked_at is not None:
        return Refused("key", ApiError("API_KEY_REVOKED", "this API key was revoked or rotated"))
    if key.allowlist and not Allowlist(key.allowlist).allows(address):
        return Refused("allowlist", ApiError("IP_NOT_ALLOWED", "this key is not allowed from this address",
                                             {"address": address}))
    if prop.status != "active":
        return Refused("property", ApiError("PROPERTY_UNAVAILABLE", "the property is not available"))
    if route.product == "channelManager" and not prop.channel_manager:
        return Refused("property", ApiError("CHANNEL_MANAGER_DISABLED", "the property's channel manager is off"))
    if route.product == "pms" and not prop.pms:
        return Refused("property", ApiError("PMS_NOT_AVAILABLE", "the property has no PMS"))
    if route.scope is not None and route.scope not in key.scopes:
        return Refused("property", ApiError("SCOPE_MISSING", f"this key lacks the {route.scope} scope",
                                            {"needed": route.scope, "held": list(key.scopes)}))
    return Caller(key, prop, address)


def _presented_key(req: Request) -> tuple[bytes | None, str]:
    """The digest of the well-formed key the request presents (or None), and the mode that
    key claims (`live` when none is presented)."""
    token = keyfmt.bearer_token(req.headers.get("Authorization"))
    if token is None:
        return None, "live"
    mode = keyfmt.mode_of(token)
    if not keyfmt.is_well_formed(token):
        return None, mode
    return keyfmt.digest(token), mode


async def run_gates(ctx: FrontContext, req: Request) -> None:
    """The gates of a Connect API request, in the contract's order.

    The key is looked up in this process's cache first (no I/O). When it is there and
    `judge` lets the caller through, every budget is counted in one statement; otherwise
    the request goes gate by gate, each budget charged where the contract puts it and a
    refusal of the caller counted against its address.
    """
    route = _route_rule(req)
    length = req.content_length
    presented, mode = _presented_key(req)
    if route is None:  # nothing under the prefix matched: the router's 404 or 405 follows
        await admit(needs_key=False, mode=mode)
        if (too_large := body_refusal(length)) is not None:
            raise too_large
        return
    address = address_of(ctx, req)
    cached = ctx.keys.cached(presented) if presented is not None else None
    if cached is not None:
        verdict = judge(route, length, presented, cached, address)
        if isinstance(verdict, Caller):
            await _admitted(ctx, req, await ctx.budgets.keeper.admit_known(
                address, verdict.key.id, verdict.property.id, route.kind, mode), verdict)
            return
    arrival = await admit(needs_key=True, address=address, mode=mode)
    if (too_large := body_refusal(length)) is not None:
        raise too_large
    found = cached or (await ctx.keys.find(presented) if presented is not None else None)
    verdict = judge(route, length, presented, found, address)
    if isinstance(verdict, Refused):
        if verdict.gate == "allowlist" and found is not None:
            # Not a good caller yet: a key used from outside its allowlist gets none of the
            # part of `global` kept for good keys.
            await api_keys.record_allowlist_refusal(ctx.db, found.key.id, found.property.id, address,
                                                    ctx.clock.now())
        if verdict.gate in ("key", "allowlist"):
            await _refuse_caller(arrival, verdict.error)
        await authenticated(arrival)
        raise verdict.error
    await authenticated(arrival)
    await _admitted(ctx, req, await ctx.budgets.keeper.admit_request(verdict.key.id, verdict.property.id, route.kind),
                    verdict)


def _route_rule(req: Request) -> RouteRule | None:
    """The matched route's rule; None when nothing under the prefix matched (404/405)."""
    if req.routing_exception is not None:
        return None
    rule = req.url_rule
    assert rule is not None and rule.endpoint is not None
    route = getattr(current_app.view_functions[rule.endpoint], "connect_rule", None)
    if not isinstance(route, RouteRule):
        raise RuntimeError(f"{rule.endpoint} is under the API prefix without a rule()")
    return route


async def _admitted(ctx: FrontContext, req: Request, admitted: Admitted, who: Caller) -> None:
    store = current_globals()  # set twice: one context lookup
    store.ratelimit = admitted.policies
    if admitted.refusal is not None:
        raise admitted.refusal
    store.caller = who
    now = ctx.clock.now()
    if ctx.keys.due_for_touch(who.key.id, who.key.last_used_at, now, LAST_USED_EVERY):
        await api_keys.touch_last_used(ctx.db, who.key.id, now, LAST_USED_EVERY)
    if req.query_string and (issues := not_utf8(req.query_string)):
        # Before any route reads `request.args`, which would see U+FFFD.
        raise ApiError("VALIDATION", "query does not match the schema", issues)
