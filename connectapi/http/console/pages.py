"""The console's pages for an owner's properties."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response, redirect

from ...domain.sync_state import pending_next_attempt, push_state
from ...storage import pushes
from ..gates import context
from .session import PREFIX, login_required, owned_property, owner, page


@login_required
async def home() -> Response:
    return redirect(f"{PREFIX}/properties")  # type: ignore[return-value]


@login_required
async def property_list() -> Response:
    ctx = context()
    now = ctx.clock.now()
    shown: list[dict[str, Any]] = []
    for property_id in owner().property_ids:
        prop = await owned_property(property_id)
        view = await pushes.sync_view(ctx.db, prop.id)
        dirty = view["dirty"]
        shown.append({
            "property": prop,
            "state": push_state(view["failures"], view["next_attempt_at"], view["last_outcome"],
                                dirty["availability"], now),
            "dirty": dirty,
            "last_push_at": view["last_push_at"],
            "last_error": view["last_error"],
            "next_attempt_at": pending_next_attempt(view["next_attempt_at"], now),
        })
    return await page("properties.html", properties=shown)


def register(blueprint: Blueprint) -> None:
    blueprint.add_url_rule("/", view_func=home, methods=["GET"])
    blueprint.add_url_rule("/properties", view_func=property_list, methods=["GET"])
