"""The console's pages for an owner's properties."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from quart import Blueprint, Response, redirect
from typing_extensions import TypedDict

from ...domain.sync_state import PushState, pending_next_attempt, push_state
from ...storage import pushes, twins
from ...storage.records import Property
from ..context import context
from .session import PREFIX, console_mode, login_required, owned_property, owned_record, owner, page


@login_required
async def home() -> Response:
    return redirect(f"{PREFIX}/properties")  # type: ignore[return-value]


class SyncFacts(TypedDict):
    """What the properties page and a property's overview show of its push state (the
    templates' sync_facts): cells waiting and, of them, refused, per resource."""

    state: PushState
    dirty: dict[str, int]
    refused: dict[str, int]
    last_push_at: datetime | None
    last_error: str | None
    next_attempt_at: datetime | None  # only while it is still ahead


class ListedProperty(SyncFacts):
    """A property on the properties page, with its push state."""

    property: Property


async def sync_of(prop: Property) -> SyncFacts:
    ctx = context()
    now = ctx.clock.now()
    view = await pushes.sync_view(ctx.db, prop.id)
    dirty, refused = view.dirty, view.refused
    return {
        "state": push_state(view.failures, view.next_attempt_at, view.last_outcome, dirty["availability"],
                            now, sum(refused.values())),
        "dirty": dirty,
        "refused": refused,
        "last_push_at": view.last_push_at,
        "last_error": view.last_error,
        "next_attempt_at": pending_next_attempt(view.next_attempt_at, now),
    }


@login_required
async def property_list() -> Response:
    shown: list[ListedProperty] = []
    for property_id in owner().property_ids:
        prop = await owned_property(property_id)
        shown.append({"property": prop, **await sync_of(prop)})
    return await page("properties.html", properties=shown)


@login_required
async def overview(property_id: int) -> Response:
    prop, record = await owned_record(property_id)
    return await property_page("overview.html", prop, "", sync=await sync_of(record))


async def property_page(template: str, prop: Property, tab: str, status: int = 200, **values: Any) -> Response:
    """A page of one property (templates extending property.html): `tab` is its path
    after /console/properties/<id> ("" for the overview, "/keys", ...). On live data, when
    only test keys have written yet (the README's tour), it says where their data is."""
    if console_mode() != "test" and "test_only" not in values:
        values["test_only"] = await twins.only_test_keys_wrote(context().db, prop.id)
    return await page(template, status, prop=prop, tab=tab, **values)


async def bare() -> Response:
    """/console without its slash: to /console/ by a relative redirect of ours (werkzeug's
    own would carry none of the console's headers, and an absolute URL from the Host header)."""
    return redirect(f"{PREFIX}/")  # type: ignore[return-value]


def register(blueprint: Blueprint) -> None:
    blueprint.add_url_rule("", view_func=bare, methods=["GET"], strict_slashes=True)
    blueprint.add_url_rule("/", view_func=home, methods=["GET"])
    blueprint.add_url_rule("/properties", view_func=property_list, methods=["GET"])
    blueprint.add_url_rule("/properties/<int:property_id>", view_func=overview, methods=["GET"])
