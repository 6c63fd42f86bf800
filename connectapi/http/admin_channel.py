"""Admin routes about the channel manager: what it holds, and the sandbox's stats and faults."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from quart import Blueprint, Response, request

from ..channel.client import ChannelManagerError
from ..domain.admin_models import SandboxFaultsIn
from ..domain.channel_values import CM_RESTRICTIONS
from ..domain.errors import ApiError
from ..domain.money import currency_exponent
from ..domain.paths import ADMIN_PREFIX
from ..domain.validation import parse_model
from ..storage import properties
from .body import raw_body
from .envelope import ok
from .gates import context

blueprint = Blueprint("admin_channel", __name__, url_prefix=ADMIN_PREFIX)


def _sandbox() -> Any:
    sandbox = context().sandbox
    if sandbox is None:
        raise ApiError("SANDBOX_DISABLED", "a real channel manager is configured")
    return sandbox


@blueprint.get("/sandbox")
async def sandbox_stats() -> Response:
    return ok({"url": context().sandbox_url, "stats": _sandbox().stats.view()})


@blueprint.post("/sandbox/faults")
async def sandbox_faults() -> Response:
    sandbox = _sandbox()
    body = parse_model(SandboxFaultsIn, await raw_body())
    sandbox.faults.mode, sandbox.faults.remaining, sandbox.faults.retry_after = body.mode, body.count, body.retryAfter
    return ok({"mode": body.mode, "count": body.count, "retryAfter": body.retryAfter})


def _day(name: str, default: date) -> date:
    text = request.args.get(name)
    if text is None:
        return default
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ApiError("VALIDATION", "query does not match the schema",
                       [{"path": name, "message": "must be a date YYYY-MM-DD"}]) from None


@blueprint.get("/properties/<int:property_id>/channel-grid")
async def channel_grid(property_id: int) -> Response:
    ctx = context()
    ids = await properties.channel_ids(ctx.db, property_id)
    if ids is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    if ids.property_id is None:
        raise ApiError("VALIDATION", "the property is not mapped to the channel manager",
                       [{"path": "$", "message": "set its channel mapping first"}])
    first = _day("from", ctx.clock.now().date())
    last = _day("to", first + timedelta(days=30))
    if ctx.sandbox is not None:
        # Our own sandbox is looked at directly: a look must not spend the account's
        # ten reads a minute, which the reconciler needs.
        held_availability = ctx.sandbox.read_availability(ids.property_id, first, last)
        held_restrictions = ctx.sandbox.read_restrictions(ids.property_id, first, last)
    else:
        try:
            held_availability = await ctx.channel.read(property_id, "availability", ids.property_id, first, last)
            held_restrictions = await ctx.channel.read(property_id, "restrictions", ids.property_id, first, last)
        except ChannelManagerError as exc:
            raise ApiError("SERVICE_UNAVAILABLE", f"the channel manager did not answer: {exc}") from None
    rooms = {cm: ours for ours, cm in ids.room_types.items()}
    plans = {cm: ours for ours, cm in ids.rate_plans.items()}
    scale = 10 ** currency_exponent(ids.currency)
    availability = [{"roomTypeId": rooms[cm], "date": day, "available": count}
                    for cm, nights in held_availability.items() if cm in rooms for day, count in nights.items()]
    rates, restrictions = [], []
    for cm, nights in held_restrictions.items():
        if cm not in plans:
            continue
        for day, fields in nights.items():
            if "rate" in fields:
                rates.append({"ratePlanId": plans[cm], "date": day, "rateMinor": int(Decimal(fields["rate"]) * scale)})
            held = {ours: fields[theirs] for ours, (theirs, _) in CM_RESTRICTIONS.items() if theirs in fields}
            if held:
                restrictions.append({"ratePlanId": plans[cm], "date": day, **held})
    return ok({"from": first.isoformat(), "to": last.isoformat(), "availability": availability, "rates": rates,
               "restrictions": restrictions})
