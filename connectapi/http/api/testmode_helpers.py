"""The test helpers (issue 29): test keys only, on their property's test twin. A live key
gets 404, as for a route that is not there. They make the test record meet what the field
would bring: OTA bookings through the test sandbox's feed and the real intake, the front
desk's check-in, the channel manager's faults, and a fresh start."""

from __future__ import annotations

from quart import Blueprint, Response, request

from ...channel.sandbox.state import PropertyFault
from ...domain.admin_models import OtaBookingChangeIn
from ...budgets.rules import RequestKind
from ...domain.errors import ApiError
from ...domain.testmode_helper_models import TestFaultsIn, TestOtaBookingIn
from ...domain.validation import parse_json, parse_payload
from ...storage import properties, twins, webhooks
from ..body import raw_body
from ..context import context
from ..envelope import ok
from ..shared.looking_again import look_until
from ..shared import property_actions, sandbox_bookings
from .answers import TestCheckIn, TestEvents, TestFaults, TestReset
from .gates import Caller, caller, rule

blueprint = Blueprint("connect_test_helpers", __name__)


def _test_caller() -> Caller:
    who = caller()
    if who.property.mode != "test":
        raise ApiError("NOT_FOUND", "the test helpers answer test keys only")
    return who


async def _body() -> object:
    raw = await raw_body()
    return parse_json(raw) if raw.strip() else {}


@blueprint.post("/test-helpers/ota-bookings")
@rule(scope="ari:write", product="channelManager", kind=RequestKind.WRITE)
async def ota_booking() -> Response:
    who = _test_caller()
    body = parse_payload(TestOtaBookingIn, parse_json(await raw_body()))
    made = await sandbox_bookings.new_booking(context().channel.test_sandbox, who.property.id, body.as_ota_booking())
    return ok(made, 201, "Created")


@blueprint.post("/test-helpers/ota-bookings/<reference>/modify")
@rule(scope="ari:write", product="channelManager", kind=RequestKind.WRITE)
async def ota_modify(reference: str) -> Response:
    who = _test_caller()
    body = parse_payload(OtaBookingChangeIn, parse_json(await raw_body()))
    return ok(await sandbox_bookings.modify_booking(context().channel.test_sandbox, who.property.id, reference, body))


@blueprint.post("/test-helpers/ota-bookings/<reference>/cancel")
@rule(scope="ari:write", product="channelManager", kind=RequestKind.WRITE)
async def ota_cancel(reference: str) -> Response:
    who = _test_caller()
    return ok(await sandbox_bookings.cancel_booking(context().channel.test_sandbox, who.property.id, reference))


@blueprint.post("/test-helpers/bookings/<int:booking_id>/check-in")
@rule(scope="bookings:write", product="pms", kind=RequestKind.BOOKING_OTHER)
async def check_in(booking_id: int) -> Response:
    who = _test_caller()
    await property_actions.check_in(booking_id, who.property.id)
    checked_in: TestCheckIn = {"bookingId": booking_id, "status": "CHECKED_IN"}
    return ok(checked_in)


@blueprint.post("/test-helpers/channel-manager/faults")
@rule(scope="ari:write", product="channelManager", kind=RequestKind.WRITE)
async def faults() -> Response:
    who = _test_caller()
    body = parse_payload(TestFaultsIn, await _body())
    ids = await properties.channel_ids(context().db, who.property.id)
    if ids is None or ids.property_id is None:
        raise ApiError("VALIDATION", "the property is not mapped to the channel manager",
                       [{"path": "$", "message": "its operator maps it first"}])
    armed = context().channel.test_sandbox.property_faults
    if body.mode == "ok":
        armed.pop(ids.property_id, None)
    else:
        armed[ids.property_id] = PropertyFault(body.mode, body.count)
    set_up: TestFaults = {"mode": body.mode, "count": 0 if body.mode == "ok" else body.count}
    return ok(set_up)


@blueprint.post("/test-helpers/reset")
@rule(scope="ari:write", kind=RequestKind.WRITE)
async def reset() -> Response:
    who = _test_caller()
    ctx = context()
    await twins.reset(ctx.db, who.property.id, ctx.clock.now().date())
    ids = await properties.channel_ids(ctx.db, who.property.id)
    if ids is not None and ids.property_id is not None:
        # What this process's test sandbox holds of the twin goes too: it adopts it again.
        ctx.channel.test_sandbox.properties.pop(ids.property_id, None)
        ctx.channel.test_sandbox.property_faults.pop(ids.property_id, None)
        ctx.channel.test_sandbox.bookings.forget_property(ids.property_id)
    done: TestReset = {"propertyId": who.property.live_id, "mode": "test", "reset": True}
    return ok(done)


MAX_EVENTS_WAIT = 30
# An event recorded by another process is seen by looking again this often (this
# process's writer says so at once: Wakeups.next_time("revision")).
LOOK_AGAIN = 0.5


@blueprint.get("/test-helpers/events")
@rule()
async def events() -> Response:
    """The test record's events after `after` (the `after` of the previous answer), as its
    webhooks carry them, each body exactly as signed and sent: what `connectapi listen`
    forwards to an integrator's machine. Without `after`: none, and where to start from
    (now). With `wait` (seconds, up to 30): answered as soon as there is one, or then."""
    who = _test_caller()
    after, wait = _cursor("after"), _cursor("wait")
    if wait is not None and wait > MAX_EVENTS_WAIT:
        raise ApiError("VALIDATION", "query does not match the schema",
                       [{"path": "wait", "message": f"must be whole seconds from 0 to {MAX_EVENTS_WAIT}"}])
    found, cursor = await look_until("revision", who.property.id, wait or 0, LOOK_AGAIN,
                                     lambda: webhooks.events_after(context().db, who.property.id, after),
                                     lambda got: bool(got[0]) or after is None)
    answer: TestEvents = {"events": [{"id": e.id, "type": e.type, "body": e.body} for e in found],
                          "after": str(cursor)}
    return ok(answer)


def _cursor(name: str) -> int | None:
    text = request.args.get(name)
    if text is None:
        return None
    if not (text.isascii() and text.isdigit() and len(text) <= 18):
        raise ApiError("VALIDATION", "query does not match the schema",
                       [{"path": name, "message": "must be a whole number"}])
    return int(text)

