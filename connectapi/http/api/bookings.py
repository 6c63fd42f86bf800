"""The PMS booking routes: create, list, read, change and cancel the bookings the API made."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from quart import Blueprint, Response, request

from ...actors.messages.property_writer import (BookingDone, BookingOutcome, CancelBooking, CreateBooking,
                                                IdempotencyClaim, ModifyBooking, Refused)
from ...domain import idempotency as idem
from ...domain.booking_models import BookingIn, BookingPatchIn, CancelIn
from ...budgets.rules import RequestKind
from ...domain.errors import ApiError
from ...domain.ids import MAX_ID, bounded_int
from ...domain.validation import parse_json, parse_payload
from ...engine import ActorUnavailable, AskTimeout
from ...storage import bookings, idempotency
from ..body import raw_body
from ..context import context
from ..envelope import ok
from .booking_body import booking_body
from .answers import Booking, BookingList
from .gates import caller, rule
from .idempotent import idempotent_write

blueprint = Blueprint("connect_bookings", __name__)

CREATE_ROUTE = "POST /bookings"
IF_MATCH = "If-Match"
# An entity tag of ours: a booking's revision, quoted (strong, so If-Match can compare it).
_OUR_TAG = re.compile(r'"([0-9]{1,9})"')
LIST_DEFAULT_DAYS = 7
LIST_DEFAULT_LIMIT = 50
LIST_MAX_LIMIT = 100


@blueprint.post("/bookings")
@rule(scope="bookings:write", product="pms", kind=RequestKind.BOOKING_CREATE)
async def create_booking() -> Response:
    ctx, who = context(), caller()
    pid = who.property.id
    key = idem.checked_key(request.headers.get(idem.HEADER))
    payload = parse_json(await raw_body())
    body = parse_payload(BookingIn, payload)

    async def run(claim: IdempotencyClaim | None) -> BookingOutcome:
        earlier = await bookings.api_booking_by_reference(ctx.db, pid, body.externalReference)
        if earlier is not None:
            # A repeat: the booking as it stands, nothing charged, nothing written but the
            # outcome under the key (idempotent_write: every outcome is recorded by then).
            repeat = BookingDone(earlier, made=False, replay=True)
            if claim is not None:
                await idempotency.finish_now(ctx.db, pid, claim.route, claim.key, repeat.stored())
            return repeat
        if not who.property.pms_entitled:
            raise ApiError("MODULE_NOT_ENTITLED", "the property's plan does not include the PMS", {"module": "PMS"})
        try:
            await ctx.budgets.keeper.charge_booking(who.key.id, pid, who.property.bookings_per_day)
        except AskTimeout:
            # Nothing was written yet: not a fate unknown, so the claim is released.
            raise ActorUnavailable(f"property[{pid}] did not answer in time") from None
        done = await ctx.properties.writers.ask(
            pid, CreateBooking(who.key.id, who.key.scopes, body, ctx.clock.now(), claim), ctx.properties.ask_timeout)
        return done

    return await idempotent_write(pid, CREATE_ROUTE, key, payload, run, _created)


def _created(done: BookingOutcome) -> Response:
    if isinstance(done, Refused):
        raise done.error
    if done.made:
        return _booking_answer(_body(done), 201, "Created")
    return _booking_answer(_body(done))


def _body(done: BookingDone) -> Booking:
    return booking_body(done.booking, replay=done.replay)


def _booking_answer(view: Booking, status: int = 200, message: str | None = None) -> Response:
    """One booking, with its entity tag: what a later PATCH names in If-Match."""
    response = ok(view, status, message)
    response.headers["ETag"] = f'"{view["revision"]}"'
    return response


def _if_match(value: str | None) -> frozenset[int] | None:
    """The revisions an If-Match header names; None when any will do (no header, or `*`).
    A tag that is not one of ours (a weak one included: If-Match compares strongly) names
    none, so the change is refused as stale."""
    if value is None:
        return None
    tags = [tag.strip() for tag in value.split(",")]
    if "*" in tags:
        return None
    return frozenset(int(found.group(1)) for tag in tags if (found := _OUR_TAG.fullmatch(tag)) is not None)


@blueprint.get("/bookings")
@rule(scope="bookings:read", product="pms")
async def list_bookings() -> Response:
    ctx = context()
    issues = []
    since = ctx.clock.now() - timedelta(days=LIST_DEFAULT_DAYS)
    text = request.args.get("since")
    if text is not None:
        try:
            since = datetime.fromisoformat(text)
            if since.tzinfo is None:
                since = since.replace(tzinfo=UTC)  # an instant without an offset is read as UTC
            # In UTC it must still be a datetime: 0001-01-01T00:00+01:00 is not, and the
            # driver's conversion would fail with an OverflowError.
            since.astimezone(UTC)
        except (ValueError, OverflowError):
            issues.append({"path": "since", "message": "must be an ISO 8601 date-time"})
    limit = LIST_DEFAULT_LIMIT
    text = request.args.get("limit")
    if text is not None:
        asked = bounded_int(text, LIST_MAX_LIMIT)
        if asked is None or asked < 1:
            issues.append({"path": "limit", "message": f"must be an integer from 1 to {LIST_MAX_LIMIT}"})
        else:
            limit = asked
    reference = request.args.get("externalReference")
    if reference is not None and (not 1 <= len(reference) <= 64 or not reference.isprintable()):
        # Control characters, NUL above all, cannot be a reference (and PostgreSQL text refuses NUL).
        issues.append({"path": "externalReference", "message": "must be 1 to 64 printable characters"})
    before = None
    text = request.args.get("before")
    if text is not None:
        before = bounded_int(text, MAX_ID)
        if before is None or before < 1:
            issues.append({"path": "before", "message": "must be the bookingId of a listed booking"})
    if issues:
        raise ApiError("VALIDATION", "query does not match the schema", issues)
    found = await bookings.list_api_bookings(ctx.db, caller().property.id, since, reference, limit, before)
    if found is None:
        raise ApiError("VALIDATION", "query does not match the schema",
                       [{"path": "before", "message": "must be the bookingId of a listed booking"}])
    # A full page may have more after it: `nextBefore` is what to send as `before` for it.
    next_before = found[-1].id if len(found) == limit else None
    page: BookingList = {"since": since.isoformat(), "limit": limit, "count": len(found), "nextBefore": next_before,
                         "bookings": [booking_body(b, replay=False) for b in found]}
    return ok(page)


def _booking_id(text: str) -> int:
    wanted = bounded_int(text, MAX_ID)
    if wanted is None or wanted < 1:
        raise ApiError("BOOKING_NOT_FOUND", f"no booking {text[:40]!r} on this property")
    return wanted


@blueprint.get("/bookings/<booking_id>")
@rule(scope="bookings:read", product="pms")
async def read_booking(booking_id: str) -> Response:
    wanted = _booking_id(booking_id)
    found = await bookings.api_booking(context().db, caller().property.id, wanted)
    if found is None:
        raise ApiError("BOOKING_NOT_FOUND", f"no booking {wanted} on this property")
    return _booking_answer(booking_body(found, replay=False))


@blueprint.patch("/bookings/<booking_id>")
@rule(scope="bookings:write", product="pms", kind=RequestKind.BOOKING_OTHER)
async def modify_booking(booking_id: str) -> Response:
    """A JSON merge patch of the booking, in creation's order: strict body, the module, the
    booking budgets of a change, then one transaction under the property's lock."""
    ctx, who = context(), caller()
    pid = who.property.id
    wanted = _booking_id(booking_id)
    key = idem.checked_key(request.headers.get(idem.HEADER))
    condition = request.headers.get(IF_MATCH)
    payload = parse_json(await raw_body())
    patch = parse_payload(BookingPatchIn, payload)

    async def run(claim: IdempotencyClaim | None) -> BookingOutcome:
        if not who.property.pms_entitled:
            raise ApiError("MODULE_NOT_ENTITLED", "the property's plan does not include the PMS", {"module": "PMS"})
        try:
            await ctx.budgets.keeper.charge_booking_change(who.key.id, pid)
        except AskTimeout:
            raise ActorUnavailable(f"property[{pid}] did not answer in time") from None
        done = await ctx.properties.writers.ask(
            pid, ModifyBooking(who.key.id, wanted, patch, _if_match(condition), ctx.clock.now(), claim),
            ctx.properties.ask_timeout)
        return done

    # The key's request is the body under its condition: another If-Match is another request.
    return await idempotent_write(pid, f"PATCH /bookings/{wanted}", key, {"body": payload, IF_MATCH: condition},
                                  run, _changed)


def _changed(done: BookingOutcome) -> Response:
    if isinstance(done, Refused):
        raise done.error
    return _booking_answer(_body(done))


@blueprint.post("/bookings/<booking_id>/cancel")
@rule(scope="bookings:write", product="pms", kind=RequestKind.BOOKING_OTHER)
async def cancel_booking(booking_id: str) -> Response:
    ctx, who = context(), caller()
    wanted = _booking_id(booking_id)
    raw = await raw_body()
    body = parse_payload(CancelIn, parse_json(raw)) if raw.strip() else CancelIn()
    done = await ctx.properties.writers.ask(
        who.property.id, CancelBooking(who.key.id, wanted, body.reason, ctx.clock.now()), ctx.properties.ask_timeout)
    if isinstance(done, Refused):
        raise done.error
    return _booking_answer(_body(done))
