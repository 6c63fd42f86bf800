"""Admin routes of properties: a property and its settings, its catalog (room types, rate
plans), its mapping to the channel manager, and its API keys. In sandbox mode a new
property, room type or rate plan is made on the sandbox channel manager too."""

from __future__ import annotations

from datetime import date, timedelta
from zoneinfo import ZoneInfo

from quart import Blueprint, Response

from ...actors.channel_manager import CALL_ASK_TIMEOUT
from ...actors.messages.channel_manager import CreateProperty, CreateRatePlan, CreateRoomType, Push
from ...domain.channel_values import AvailabilityValue
from ...domain.admin_models import ChannelMappingIn, KeyIn, KeyPatch, PropertyIn, PropertyPatch, RatePlanIn, RoomTypeIn
from ...domain.ari_write import HORIZON_DAYS
from ...domain.errors import ApiError
from ...domain.paths import ADMIN_PREFIX
from ...domain.sell_modes import PER_PERSON
from ...domain.validation import parse_model
from ...storage import properties
from ...storage.records import Property, RatePlan
from ..body import raw_body
from ..context import context
from ..envelope import ok
from ..shared import key_actions, property_actions
from ..shared.channel_calls import when_allowed
from .views import key_view, property_view, rate_plan_view, room_type_view

blueprint = Blueprint("admin", __name__, url_prefix=ADMIN_PREFIX)


async def _property_or_404(property_id: int) -> Property:
    prop = await properties.get_live_property(context().db, property_id)
    if prop is None:
        raise ApiError("PROPERTY_NOT_FOUND", f"no property {property_id}")
    return prop


@blueprint.post("/properties")
async def create_property() -> Response:
    body = parse_model(PropertyIn, await raw_body())
    ctx = context()
    today = ctx.clock.today(ZoneInfo(body.timezone))
    prop, catalog = await properties.create_property(ctx.db, body, today)
    if ctx.channel.sandbox is not None:
        # In sandbox mode the property exists on the channel manager too, mapped.
        cm_property = await _created(CreateProperty(prop.name, prop.currency, prop.timezone))
        rooms = {r.id: await _created(CreateRoomType(cm_property, r.name, r.rooms)) for r in catalog.room_types}
        plans = {p.id: await _created(CreateRatePlan(cm_property, rooms[p.room_type_id], p.name, _options(p)))
                 for p in catalog.rate_plans}
        await properties.set_channel_mapping(ctx.db, prop.id, cm_property, rooms, plans)
        await _seed_sandbox(prop.id, cm_property, [(rooms[r.id], r.rooms) for r in catalog.room_types], today)
    return ok(property_view(prop, catalog), 201)


def _options(plan: RatePlan) -> tuple[int, ...] | None:
    """The channel manager's occupancy options of a plan sold per person; None per room
    (whose create call is as it always was)."""
    return tuple(plan.occupancies) if plan.sell_mode == PER_PERSON else None


async def _created(message: CreateProperty | CreateRoomType | CreateRatePlan) -> str:
    """The channel manager's id of what it made (the sandbox's, in-process)."""
    made = await context().channel.mailbox.ask(message, context().properties.ask_timeout)
    if made.cm_id is None:
        raise ApiError("SERVICE_UNAVAILABLE", f"the sandbox channel manager refused it: {made.error}",
                       retry_after_seconds=5)
    return made.cm_id


async def _seed_sandbox(property_id: int, cm_property: str, rooms: list[tuple[str, int]], today: date) -> None:
    """The record starts a room type's horizon at its room count, in sync: make the sandbox hold it."""
    if not rooms:
        return
    last = today + timedelta(days=HORIZON_DAYS)
    values = [AvailabilityValue(property_id=cm_property, room_type_id=cm_room, date_from=today.isoformat(),
                                date_to=last.isoformat(), availability=count) for cm_room, count in rooms]
    outcome = await when_allowed(lambda: context().channel.mailbox.ask(Push(property_id, "availability", values, mode="live"),
                                                               CALL_ASK_TIMEOUT))
    if not outcome.ok:
        raise ApiError("SERVICE_UNAVAILABLE", f"the sandbox channel manager refused the property: {outcome.error}",
                       retry_after_seconds=5)


@blueprint.get("/properties/<int:property_id>")
async def read_property(property_id: int) -> Response:
    prop = await _property_or_404(property_id)
    return ok(property_view(prop, await properties.get_catalog(context().db, property_id)))


@blueprint.patch("/properties/<int:property_id>")
async def patch_property(property_id: int) -> Response:
    patch = parse_model(PropertyPatch, await raw_body())
    prop = await property_actions.patch_property(property_id, patch)
    return ok(property_view(prop, await properties.get_catalog(context().db, property_id)))


@blueprint.post("/properties/<int:property_id>/room-types")
async def add_room_type(property_id: int) -> Response:
    body = parse_model(RoomTypeIn, await raw_body())
    prop = await _property_or_404(property_id)
    ctx = context()
    room = await properties.add_room_type(ctx.db, property_id, body, ctx.clock.today(ZoneInfo(prop.timezone)))
    ids = await properties.channel_ids(ctx.db, property_id)
    if ctx.channel.sandbox is not None and ids is not None and ids.property_id is not None:
        cm_room = await _created(CreateRoomType(ids.property_id, room.name, room.rooms))
        await properties.map_room_type(ctx.db, room.id, cm_room)
        await _seed_sandbox(property_id, ids.property_id, [(cm_room, room.rooms)],
                            ctx.clock.today(ZoneInfo(prop.timezone)))
    return ok(room_type_view(room), 201)


@blueprint.post("/properties/<int:property_id>/rate-plans")
async def add_rate_plan(property_id: int) -> Response:
    body = parse_model(RatePlanIn, await raw_body())
    await _property_or_404(property_id)
    ctx = context()
    try:
        plan = await properties.add_rate_plan(ctx.db, property_id, body)
    except properties.RoomTypeNotInProperty:
        raise ApiError(
            "VALIDATION", "roomTypeId is not a room type of this property",
            [{"path": "roomTypeId", "message": "not a room type of this property"}],
        ) from None
    except properties.PlanNotSellable as exc:
        raise ApiError("VALIDATION", str(exc), [{"path": "sellMode", "message": str(exc)}]) from None
    ids = await properties.channel_ids(ctx.db, property_id)
    if ctx.channel.sandbox is not None and ids is not None and ids.property_id and plan.room_type_id in ids.room_types:
        cm_plan = await _created(CreateRatePlan(ids.property_id, ids.room_types[plan.room_type_id], plan.name,
                                                _options(plan)))
        await properties.map_rate_plan(ctx.db, plan.id, cm_plan)
    return ok(rate_plan_view(plan), 201)


@blueprint.put("/properties/<int:property_id>/channel-mapping")
async def set_channel_mapping(property_id: int) -> Response:
    body = parse_model(ChannelMappingIn, await raw_body())
    await _property_or_404(property_id)
    rooms = {int(k): v for k, v in body.roomTypes.items()}
    plans = {int(k): v for k, v in body.ratePlans.items()}
    try:
        await properties.set_channel_mapping(context().db, property_id, body.cmPropertyId, rooms, plans)
    except properties.NotInProperty as exc:
        issues = [{"path": f"roomTypes.{i}", "message": "not a room type of this property"} for i in exc.room_types]
        issues += [{"path": f"ratePlans.{i}", "message": "not a rate plan of this property"} for i in exc.rate_plans]
        raise ApiError("VALIDATION", "the mapping names ids of another property", issues) from None
    except properties.MappingTaken as exc:
        raise ApiError("CHANNEL_MAPPING_TAKEN",
                       f"{exc.path} names a channel-manager id mapped to property {exc.property_id} already",
                       {"path": exc.path, "propertyId": exc.property_id}) from None
    return ok({"cmPropertyId": body.cmPropertyId, "roomTypes": body.roomTypes, "ratePlans": body.ratePlans})


@blueprint.post("/properties/<int:property_id>/keys")
async def create_key(property_id: int) -> Response:
    body = parse_model(KeyIn, await raw_body())
    await _property_or_404(property_id)
    key, secret = await key_actions.create_key(property_id, body)
    return ok({**key_view(key), "key": secret}, 201)


@blueprint.get("/properties/<int:property_id>/keys")
async def list_keys(property_id: int) -> Response:
    await _property_or_404(property_id)
    return ok([key_view(k) for k in await key_actions.list_keys(property_id)])


@blueprint.get("/properties/<int:property_id>/allowlist-refusals")
async def list_allowlist_refusals(property_id: int) -> Response:
    await _property_or_404(property_id)
    rows = await key_actions.allowlist_refusals(property_id)
    return ok([{"keyId": r["key_id"], "address": r["address"], "at": r["at"]} for r in rows])


@blueprint.patch("/keys/<int:key_id>")
async def patch_key(key_id: int) -> Response:
    patch = parse_model(KeyPatch, await raw_body())
    return ok(key_view(await key_actions.patch_key(key_id, patch)))


@blueprint.post("/keys/<int:key_id>/rotate")
async def rotate_key(key_id: int) -> Response:
    key, secret = await key_actions.rotate_key(key_id)
    return ok({**key_view(key), "key": secret}, 201)


@blueprint.post("/keys/<int:key_id>/revoke")
async def revoke_key(key_id: int) -> Response:
    return ok(key_view(await key_actions.revoke_key(key_id)))
