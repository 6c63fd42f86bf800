"""Test-only routes behind the real gates, one per kind of rule the later issues use."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from quart import Blueprint, Response

from connectapi.budgets.rules import RequestKind
from connectapi.domain.validation import parse_model
from connectapi.http.api.gates import caller, rule
from connectapi.http.body import raw_body
from connectapi.http.context import context
from connectapi.http.envelope import ok

probe = Blueprint("probe", __name__)


class Updates(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    updates: list[dict[str, int]]


@probe.get("/probe/ari")
@rule(scope="ari:read", product="channelManager")
async def ari_read() -> Response:
    return ok({"property": caller().property.id})


@probe.put("/probe/ari")
@rule(scope="ari:write", product="channelManager", kind=RequestKind.WRITE)
async def ari_write() -> Response:
    body = parse_model(Updates, await raw_body())
    return ok({"entries": len(body.updates)}, 202)


@probe.get("/probe/bookings")
@rule(scope="bookings:read", product="pms")
async def bookings_read() -> Response:
    return ok([])


@probe.post("/probe/bookings")
@rule(scope="bookings:write", product="pms", kind=RequestKind.BOOKING_CREATE)
async def bookings_create() -> Response:
    # As POST /bookings charges them once past its repeat check.
    ctx, who = context(), caller()
    await ctx.budgets.keeper.charge_booking(who.key.id, who.property.id, who.property.bookings_per_day)
    return ok({}, 201)


@probe.get("/probe/crash")
@rule()
async def crash() -> Response:
    raise RuntimeError("secret internal detail: password=hunter2")
