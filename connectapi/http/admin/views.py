"""How records are shown in admin answers (the Connect API's own shapes live with its routes, in api/)."""

from __future__ import annotations

from ...domain.sell_modes import API_NAMES
from ...storage.records import ApiKey, Catalog, Property, RatePlan, RoomType
from .answers import KeyView, PropertyView, RatePlanView, RoomTypeView


def room_type_view(r: RoomType) -> RoomTypeView:
    return {"id": r.id, "name": r.name, "maxAdults": r.max_adults, "maxOccupancy": r.max_occupancy, "rooms": r.rooms}


def rate_plan_view(p: RatePlan) -> RatePlanView:
    return {
        "id": p.id, "roomTypeId": p.room_type_id, "name": p.name, "mealPlan": p.meal_plan,
        "minRate": p.min_rate, "maxRate": p.max_rate, "sellMode": API_NAMES[p.sell_mode], "occupancies": p.occupancies,
    }


def property_view(prop: Property, catalog: Catalog) -> PropertyView:
    return {
        "id": prop.id,
        "name": prop.name,
        "timezone": prop.timezone,
        "currency": prop.currency,
        "products": {"channelManager": prop.channel_manager, "pms": prop.pms},
        "pmsEntitled": prop.pms_entitled,
        "status": prop.status,
        "ownerEmail": prop.owner_email,
        "bookingsPerDay": prop.bookings_per_day,
        "guestConfirmation": prop.guest_confirmation,
        "createdAt": prop.created_at,
        "roomTypes": [room_type_view(r) for r in catalog.room_types],
        "ratePlans": [rate_plan_view(p) for p in catalog.rate_plans],
    }


def key_view(key: ApiKey) -> KeyView:
    return {
        "id": key.id,
        "propertyId": key.of_property,
        "mode": key.mode,
        "label": key.label,
        "prefix": key.prefix,
        "scopes": list(key.scopes),
        "allowlist": list(key.allowlist),
        "createdAt": key.created_at,
        "lastUsedAt": key.last_used_at,
        "revokedAt": key.revoked_at,
    }
