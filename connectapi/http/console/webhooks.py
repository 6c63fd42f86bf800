"""The webhooks screen of a property: its endpoints and their state, registering one (the
signing secret shown once), pause, resume, a test ping, rotating the secret (the new one
shown once); one endpoint's deliveries, redelivering one event, recovering everything
since an instant.

What is done is webhook_endpoints', as for the admin routes. Unlike those (the operator's
token reaches every endpoint), every endpoint here is looked up under an owned property:
another property's endpoint is a 404, exactly like a missing one. Actions that only change
something answer with a redirect to the page (reloading it sends nothing again); those
with something to show once (a secret, what a recover queued) answer with the page."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from quart import Blueprint, Response, redirect, request

from ...domain.admin_models import RecoverIn, RedeliverIn, WebhookEndpointIn
from ...domain.errors import ApiError
from ...domain.retention import events_kept_since
from ...domain.validation import parse_payload
from ...storage import webhooks
from ...storage.records import Property
from ...storage.webhooks import Endpoint
from ..context import context
from ..shared import webhook_endpoints
from . import form as posted_form
from .pages import property_page
from .session import PREFIX, console_mode, login_required, not_found, owned_property, utc_second

TAB = "/webhooks"
FIELD_LABELS = {"url": "URL", "description": "Description", "eventId": "Event id", "since": "Since"}
MOST_FIELD = 4096  # longer than any field may be: cut before parsing, refused by the model's own bounds
# What a redirect after an action says on the page it lands on (`?done=`): fixed texts, so
# nothing of the query string is shown.
DONE = {
    "paused": "Paused: events wait for the endpoint until you resume it.",
    "resumed": "Resumed: what waited is being sent now.",
    "test": "A test ping is queued for the endpoint (while it is paused, it waits).",
    "redelivered": "The event is queued for the endpoint again, with its own id (webhook-id), so the receiver "
                   "can tell a repeat.",
}
BACK_TO_ENDPOINT = "endpoint"  # a form's `back` field: land on the endpoint's page, not the list


def as_local_input(moment: datetime) -> str:
    """An instant as a datetime-local input holds it (read as UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def form_problems(err: ApiError) -> str:
    """A VALIDATION refusal as one line for the form: each field's label and what is wrong."""
    found = err.details if isinstance(err.details, list) else []
    said = []
    for issue in found:
        path, message = str(issue.get("path", "")), str(issue.get("message", ""))
        if message.startswith("String should match pattern"):
            message = "must be one line of plain text"
        label = FIELD_LABELS.get(path)
        said.append(f"{label}: {message}" if label else message)
    return "; ".join(said) or err.message


async def field(name: str) -> str:
    form = posted_form.posted()
    return str(form.get(name, ""))[:MOST_FIELD].strip()


async def owned_endpoint(prop: Property, endpoint_id: int) -> Endpoint:
    """An endpoint of this (owned) property, or 404: another property's is not there."""
    found = await webhooks.endpoint(context().db, endpoint_id)
    # In the mode shown only: a live endpoint is not acted on under the test banner.
    if found is None or found.of_property != prop.id or found.mode != console_mode():
        raise not_found()
    return found


def list_path(prop: Property) -> str:
    return f"{PREFIX}/properties/{prop.id}/webhooks"


def endpoint_path(prop: Property, endpoint: Endpoint) -> str:
    return f"{list_path(prop)}/{endpoint.id}"


async def list_page(prop: Property, status: int = 200, **values: Any) -> Response:
    # The endpoints of the mode shown: a test endpoint receives the test record's events.
    endpoints = [e for e in await webhooks.endpoints_of(context().db, prop.id) if e.mode == console_mode()]
    values.setdefault("form", {"url": "", "description": ""})
    if "notice" not in values:
        done = DONE.get(request.args.get("done", ""))
        about = request.args.get("endpoint", "")
        named = next((e for e in endpoints if str(e.id) == about), None)
        values["notice"] = f"{named.url}: {done}" if done and named else done
    return await property_page("webhooks.html", prop, TAB, status, endpoints=endpoints, **values)


async def endpoint_page(prop: Property, endpoint: Endpoint, status: int = 200, **values: Any) -> Response:
    ctx = context()
    fresh = await webhooks.endpoint(ctx.db, endpoint.id) or endpoint
    if "notice" not in values:
        values["notice"] = DONE.get(request.args.get("done", ""))
    values.setdefault("since", "")
    values.setdefault("event_id", "")
    return await property_page(
        "webhook.html", prop, TAB, status, endpoint=fresh,
        deliveries=await webhooks.deliveries_of(ctx.db, endpoint.id),
        kept_since=events_kept_since(ctx.operation.retention, ctx.clock.now()), kept_days=ctx.operation.retention.deliveries, **values)


async def done(prop: Property, endpoint: Endpoint, what: str, to_endpoint: bool = False) -> Response:
    """After an action: back to the page its form was on (Post/Redirect/Get), saying what
    was done."""
    if to_endpoint or await field("back") == BACK_TO_ENDPOINT:
        target = f"{endpoint_path(prop, endpoint)}?done={what}"
    else:
        target = f"{list_path(prop)}?done={what}&endpoint={endpoint.id}"
    if console_mode() == "test":
        target += "&mode=test"
    return redirect(target, 303)  # type: ignore[return-value]


@login_required
async def endpoints(property_id: int) -> Response:
    return await list_page(await owned_property(property_id))


@login_required
async def register_endpoint(property_id: int) -> Response:
    prop = await owned_property(property_id)
    url, description = await field("url"), await field("description")
    form = {"url": url, "description": description}
    try:
        body = parse_payload(WebhookEndpointIn, {"url": url, "description": description or None})
        made = await webhook_endpoints.register(prop.id, body.url, body.description, console_mode())
    except ApiError as err:
        if err.code != "VALIDATION":
            raise
        return await list_page(prop, 400, form=form, register_error=form_problems(err))
    return await list_page(prop, secret={"endpoint": made.endpoint, "value": made.secret, "rotated": False},
                           notice=f"Registered {made.endpoint.url}: a ping is on its way to it.")


@login_required
async def endpoint(property_id: int, endpoint_id: int) -> Response:
    prop = await owned_property(property_id)
    return await endpoint_page(prop, await owned_endpoint(prop, endpoint_id))


@login_required
async def pause(property_id: int, endpoint_id: int) -> Response:
    prop = await owned_property(property_id)
    found = await owned_endpoint(prop, endpoint_id)
    await webhook_endpoints.pause(found)
    return await done(prop, found, "paused")


@login_required
async def resume(property_id: int, endpoint_id: int) -> Response:
    prop = await owned_property(property_id)
    found = await owned_endpoint(prop, endpoint_id)
    await webhook_endpoints.resume(found)
    return await done(prop, found, "resumed")


@login_required
async def test(property_id: int, endpoint_id: int) -> Response:
    prop = await owned_property(property_id)
    found = await owned_endpoint(prop, endpoint_id)
    await webhook_endpoints.send_ping(found, "test")
    return await done(prop, found, "test")


@login_required
async def rotate_secret(property_id: int, endpoint_id: int) -> Response:
    prop = await owned_property(property_id)
    found = await owned_endpoint(prop, endpoint_id)
    secret = await webhook_endpoints.rotate_secret(found)
    return await list_page(prop, secret={"endpoint": found, "value": secret, "rotated": True},
                           notice=f"{found.url}: the secret is rotated.")


@login_required
async def redeliver(property_id: int, endpoint_id: int) -> Response:
    prop = await owned_property(property_id)
    found = await owned_endpoint(prop, endpoint_id)
    event_id = await field("eventId")
    try:
        body = parse_payload(RedeliverIn, {"eventId": event_id})
    except ApiError as err:
        return await endpoint_page(prop, found, 400, event_id=event_id, redeliver_error=form_problems(err))
    if not await webhook_endpoints.redeliver(found, body.eventId):
        return await endpoint_page(prop, found, 404, event_id=event_id,
                                   redeliver_error=f"This property has no event {body.eventId} (any more: events "
                                                   "are kept for a while only).")
    return await done(prop, found, "redelivered", to_endpoint=True)


def instant_in_utc(text: str) -> str:
    """A datetime-local input's value ("2026-11-22T10:30", seconds optional) read as UTC, as
    an ISO 8601 instant for RecoverIn; an explicit offset is taken as written. ValueError
    when it is not a date and time."""
    if "T" not in text:
        raise ValueError(text)
    moment = datetime.fromisoformat(text)
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).isoformat()


@login_required
async def recover(property_id: int, endpoint_id: int) -> Response:
    prop = await owned_property(property_id)
    found = await owned_endpoint(prop, endpoint_id)
    since = await field("since")
    try:
        body = parse_payload(RecoverIn, {"since": instant_in_utc(since)})
    except ValueError:
        return await endpoint_page(prop, found, 400, since=since,
                                   recover_error="Since: enter a date and a time in UTC, as 2026-11-22T10:30.")
    except ApiError as err:
        return await endpoint_page(prop, found, 400, since=since, recover_error=form_problems(err))
    made = await webhook_endpoints.recover(found, body.since)
    reached = max(body.since, made.kept_since)
    events = "1 event" if made.events == 1 else f"{made.events} events"
    return await endpoint_page(
        prop, found, since=since,
        notice=f"{events} since {utc_second(reached)} queued for the endpoint again. Events are kept since "
               f"{utc_second(made.kept_since)}: recover reaches no further back.")


def register(blueprint: Blueprint) -> None:
    base = "/properties/<int:property_id>/webhooks"
    blueprint.add_url_rule(base, view_func=endpoints, methods=["GET"], endpoint="webhooks")
    blueprint.add_url_rule(base, view_func=register_endpoint, methods=["POST"], endpoint="webhooks_register")
    blueprint.add_url_rule(f"{base}/<int:endpoint_id>", view_func=endpoint, methods=["GET"], endpoint="webhook")
    for action, view in (("pause", pause), ("resume", resume), ("test", test), ("rotate-secret", rotate_secret),
                         ("redeliver", redeliver), ("recover", recover)):
        blueprint.add_url_rule(f"{base}/<int:endpoint_id>/{action}", view_func=view, methods=["POST"],
                               endpoint=f"webhook_{view.__name__}")
