"""GET /property and GET /catalog: any valid key."""

from __future__ import annotations

from quart import Blueprint, Response

from ...domain.sell_modes import API_NAMES

from ...storage.properties import get_catalog
from ..context import context
from ..envelope import ok
from .answers import CatalogAnswer, PropertyAnswer
from .gates import caller, rule

blueprint = Blueprint("connect_property", __name__)


@blueprint.get("/property")
@rule()
async def read_property() -> Response:
    who = caller()
    prop = who.property
    answer: PropertyAnswer = {
        # A test key's property is the live one's test twin: the integrator sees the live id.
        "id": prop.live_id,
        "mode": "test" if prop.mode == "test" else "live",
        "name": prop.name,
        "timezone": prop.timezone,
        "currency": prop.currency,
        "scopes": list(who.key.scopes),
        "products": {"channelManager": prop.channel_manager, "pms": prop.pms},
        # What one key may POST to /bookings in a minute: the key's own bookings budget.
        "bookingsPerMinute": context().budgets.sizes.get("bookings").limit,
    }
    return ok(answer)


@blueprint.get("/catalog")
@rule()
async def read_catalog() -> Response:
    catalog = await get_catalog(context().db, caller().property.id)
    answer: CatalogAnswer = {
        # The contract's shapes, written here: the admin API's views (admin/views.py) may grow.
        "roomTypes": [
            {"id": r.id, "name": r.name, "maxAdults": r.max_adults, "maxOccupancy": r.max_occupancy, "rooms": r.rooms}
            for r in catalog.room_types
        ],
        "ratePlans": [
            {"id": p.id, "roomTypeId": p.room_type_id, "name": p.name, "mealPlan": p.meal_plan,
             "sellMode": API_NAMES[p.sell_mode], "occupancies": p.occupancies}
            for p in catalog.rate_plans
        ],
    }
    return ok(answer)
