"""The e-mails sent to a property's owner (and its guests' confirmations): what, to whom,
whether sent, and the last error of one not sent yet."""

from __future__ import annotations

from quart import Blueprint, Response

from ...storage import notifications
from ..context import context
from .pages import property_page
from .session import login_required, owned_property


@login_required
async def notification_list(property_id: int) -> Response:
    prop = await owned_property(property_id)
    return await property_page("notifications.html", prop, "/notifications",
                               sent=await notifications.for_property(context().db, prop.id))


def register(blueprint: Blueprint) -> None:
    blueprint.add_url_rule("/properties/<int:property_id>/notifications", view_func=notification_list,
                           methods=["GET"])
