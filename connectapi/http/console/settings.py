"""What the owner may change of a property: raise `bookingsPerDay` (the operator lowers it)
and switch the guests' confirmation e-mail on or off. Through the admin API's PATCH: the
same model, the same bounds, the same write."""

from __future__ import annotations

import re
from quart import Blueprint, Response, redirect, request
from typing_extensions import TypedDict

from ...domain.admin_models import PropertyPatch
from ...domain.errors import ApiError
from ...domain.validation import parse_payload
from ...storage.records import Property
from ..context import context
from ..shared import property_actions
from . import form as posted_form
from .pages import property_page
from .session import PREFIX, login_required, owned_property

WHOLE_NUMBER = re.compile(r"[0-9]{1,12}")
BUDGET = "property-bookings-day"


class SentSettings(TypedDict, total=False):
    """The form as the owner sent it, to show it again (none sent: the property's own)."""

    bookingsPerDay: str  # as typed, cut to 20 characters
    guestConfirmation: bool


class SettingsChanges(TypedDict, total=False):
    """The PATCH body the admin API would get (PropertyPatch): only what changed."""

    bookingsPerDay: int
    guestConfirmation: bool


def floor_of(prop: Property) -> int:
    """Bookings a day the property may take now: its own figure, never below the default
    budget's (the budget counts the larger)."""
    default = context().budgets.sizes.get(BUDGET).limit
    return max(default, prop.bookings_per_day or 0)


async def _form(prop: Property, status: int = 200, error: str | None = None, notice: str | None = None,
                sent: SentSettings | None = None) -> Response:
    return await property_page("settings.html", prop, "/settings", status, error=error, notice=notice,
                               floor=floor_of(prop), default=context().budgets.sizes.get(BUDGET).limit,
                               sent=sent or {})


@login_required
async def settings_form(property_id: int) -> Response:
    prop = await owned_property(property_id)
    notice = "Saved." if request.args.get("done") == "saved" else None
    return await _form(prop, notice=notice)


@login_required
async def save_settings(property_id: int) -> Response:
    prop = await owned_property(property_id)
    form = posted_form.posted()
    text = form.get("bookingsPerDay", "").strip()
    guest_confirmation = form.get("guestConfirmation") == "on"
    sent: SentSettings = {"bookingsPerDay": text[:20], "guestConfirmation": guest_confirmation}
    changes: SettingsChanges = {}
    if text:
        if not WHOLE_NUMBER.fullmatch(text):
            return await _form(prop, 400, "Bookings per day must be a whole number.", sent=sent)
        wanted = int(text)
        floor = floor_of(prop)
        if wanted < floor:
            return await _form(prop, 400, f"Bookings per day can only be raised: at least {floor}. Ask your "
                                          "operator to lower it.", sent=sent)
        if wanted != prop.bookings_per_day:
            changes["bookingsPerDay"] = wanted
    if guest_confirmation != prop.guest_confirmation:
        changes["guestConfirmation"] = guest_confirmation
    try:
        patch = parse_payload(PropertyPatch, changes)
    except ApiError as err:
        problems = "; ".join(f"{d['path']}: {d['message']}" for d in err.details or [] if isinstance(d, dict))
        return await _form(prop, 400, f"Not saved: {problems or err.message}.", sent=sent)
    if changes:
        await property_actions.patch_property(prop.id, patch)
    return redirect(f"{PREFIX}/properties/{prop.id}/settings?done=saved", 303)  # type: ignore[return-value]


def register(blueprint: Blueprint) -> None:
    blueprint.add_url_rule("/properties/<int:property_id>/settings", view_func=settings_form, methods=["GET"])
    blueprint.add_url_rule("/properties/<int:property_id>/settings", view_func=save_settings, methods=["POST"],
                           endpoint="settings_post")
