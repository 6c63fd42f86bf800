"""The sandbox's control routes, ours (not Channex's), for tests, the bench and operators.
Same key as the API (`user-api-key`), Channex's error shapes, and no budget spent.

GET  /_sandbox/stats                        {"stats": {...}}
GET  /_sandbox/grid?filter[...]             what a property holds: {"data": {"availability", "restrictions"}}
POST /_sandbox/faults                       {"mode", "count"=1, "retryAfter"=null, "calls"="ari"|"reads"|"ack"|"feed"}
POST /_sandbox/call-time                    {"callMs"}: how long each ARI call takes from now on
POST /_sandbox/refusals                     {"property_id", "rate_plan_id"|"room_type_id", "field", "message", "active"}
GET  /_sandbox/refusals                     {"refusals": [...]}
GET  /_sandbox/calls[?property_id=]         {"calls": [{kind, property_ids, task_id, values, warnings, at}]}
POST /_sandbox/ota-bookings                 an OTA sells a stay (the channel manager's ids)
POST /_sandbox/ota-bookings/{code}/modify   the OTA changes it: a `modified` revision
POST /_sandbox/ota-bookings/{code}/cancel   the OTA cancels it: a `cancelled` revision ({"fee"} optional)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import trio
from quart import Response, request
from quart_trio import QuartTrio

from ...engine import Clock
from . import answers
from .bookings import Stay, StayChange
from .revision import GUEST_FIELDS, Guest
from .state import FAULT_CALLS, FAULT_MODES, Refusal, SandboxState

REVISION_FIELDS: Final = ("arrival_hour", "notes")


def add_control_routes(app: QuartTrio, state: SandboxState, clock: Clock, authorised: Callable[[], bool],
                       body: Callable[[], Awaitable[Any]]) -> None:
    async def wanted() -> dict[str, Any]:
        given = await body()
        return given if isinstance(given, dict) else {}

    @app.before_request
    async def control_key() -> Response | None:
        if request.path.startswith("/_sandbox/") and not authorised():
            return answers.unauthorized()
        return None

    @app.get("/_sandbox/stats")
    async def stats() -> Response:
        """The counts so far, and the properties with an ARI call under way now, with how
        long it has been under way in seconds (`pushing`: a test cuts a service off the
        record while its call is in flight)."""
        now = trio.current_time()
        return answers.json_answer({"stats": state.stats.view(), "pushing": {
            pid: round(now - state.push_opened[pid], 3) for pid, count in state.open_pushes.items() if count}})

    @app.get("/_sandbox/grid")
    async def grid() -> Response:
        """A property's availability and restrictions, every field it holds (a per-person
        plan's prices as the restrictions read answers them, RatePlan.night), outside the
        account's read budget: for tests and benches comparing the grid with the record
        while the service spends that budget."""
        args = request.args
        try:
            pid = args["filter[property_id]"]
            first = date.fromisoformat(args["filter[date][gte]"])
            last = date.fromisoformat(args["filter[date][lte]"])
            return answers.json_answer({"data": {"availability": state.read_availability(pid, first, last),
                                                 "restrictions": state.read_restrictions(pid, first, last)}})
        except (KeyError, ValueError):
            return answers.invalid({"filter": ["filter[property_id], filter[date][gte] and [lte] are required"]})

    @app.post("/_sandbox/faults")
    async def faults() -> Response:
        given = await wanted()
        mode, count = given.get("mode"), given.get("count", 1)
        retry_after, calls = given.get("retryAfter"), given.get("calls", "ari")
        problems = {}
        if mode not in FAULT_MODES:
            problems["mode"] = [f"must be one of {'|'.join(FAULT_MODES)}"]
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            problems["count"] = ["must be a whole number >= 0"]
        if retry_after is not None and (isinstance(retry_after, bool) or not isinstance(retry_after, int)
                                        or retry_after < 0):
            problems["retryAfter"] = ["must be a whole number >= 0 or null"]
        if calls not in FAULT_CALLS:
            problems["calls"] = [f"must be one of {'|'.join(FAULT_CALLS)}"]
        if problems:
            return answers.invalid(problems)
        f = state.faults
        f.mode = next(m for m in FAULT_MODES if m == mode)
        f.calls = next(c for c in FAULT_CALLS if c == calls)
        f.remaining, f.retry_after = count, retry_after
        return answers.json_answer({"faults": {"mode": mode, "count": count, "retryAfter": retry_after,
                                               "calls": calls}})

    @app.post("/_sandbox/call-time")
    async def call_time() -> Response:
        """How long each ARI call takes from now on (`--call-ms` at start). A test that
        needs a call in flight while it does something slower than a usual call (cutting a
        host off the network) lengthens the calls while it arranges that, instead of racing
        them."""
        call_ms = (await wanted()).get("callMs")
        if isinstance(call_ms, bool) or not isinstance(call_ms, int) or not 0 <= call_ms <= 60_000:
            return answers.invalid({"callMs": ["must be a whole number from 0 to 60000"]})
        state.call_seconds = call_ms / 1000
        return answers.json_answer({"callMs": call_ms})

    @app.post("/_sandbox/refusals")
    async def refusals() -> Response:
        """While active, every value for the rate plan or room type is refused with
        warning {field: [message]} (a rate plan disabled on the channel, say)."""
        given = await wanted()
        entity = given.get("rate_plan_id", given.get("room_type_id"))
        problems = {}
        prop = state.properties.get(str(given.get("property_id")))
        if prop is None:
            problems["property_id"] = ["not found"]
        elif entity not in prop.rate_plans and entity not in prop.room_types:
            problems["rate_plan_id" if "rate_plan_id" in given else "room_type_id"] = ["not found"]
        for name in ("field", "message"):
            if not isinstance(given.get(name), str) or not given[name]:
                problems[name] = ["can't be blank"]
        if not isinstance(given.get("active", True), bool):
            problems["active"] = ["must be true or false"]
        if problems or prop is None or not isinstance(entity, str):
            return answers.invalid(problems)
        active = given.get("active", True)
        state.refuse(prop.id, entity, Refusal(given["field"], given["message"]) if active else None)
        return answers.json_answer({"refusal": {"property_id": prop.id, "entity_id": entity, "field": given["field"],
                                                "message": given["message"], "active": active}})

    @app.get("/_sandbox/refusals")
    async def refusals_held() -> Response:
        return answers.json_answer({"refusals": [
            {"property_id": pid, "entity_id": entity, "field": r.field, "message": r.message}
            for (pid, entity), r in state.refusals.items()]})

    @app.get("/_sandbox/calls")
    async def calls() -> Response:
        """The ARI writes received, oldest first (the last 10,000)."""
        pid = request.args.get("property_id")
        return answers.json_answer({"calls": [c.view() for c in state.calls if pid is None or pid in c.property_ids]})

    @app.post("/_sandbox/ota-bookings")
    async def ota_booking() -> Response:
        """An OTA sells a stay, in the channel manager's own ids (the standalone sandbox's
        way to make one; the service's admin route does it in the property's ids):
        property_id, room_type_id, rate_plan_id, arrival_date, departure_date, amount
        ("240.00"), and optionally adults (2), children (0), children_ages, customer
        {name, surname, mail, phone, country, ...}, ota_name ("BookingCom"), arrival_hour,
        notes."""
        given = await wanted()
        prop = state.properties.get(str(given.get("property_id")))
        try:
            if prop is None:
                raise KeyError("property_id")
            stay = Stay(prop.id, str(given["room_type_id"]), str(given["rate_plan_id"]),
                        date.fromisoformat(str(given["arrival_date"])),
                        date.fromisoformat(str(given["departure_date"])), _count(given.get("adults", 2), 1),
                        _count(given.get("children", 0), 0), _guest(given.get("customer") or {"name": "Guest"}),
                        _amount(given["amount"]), prop.currency, str(given.get("ota_name", "BookingCom")),
                        arrival_hour=_text(given.get("arrival_hour")), notes=_text(given.get("notes")),
                        children_ages=[_count(a, 0) for a in given.get("children_ages") or []])
            if stay.departure <= stay.arrival:
                raise ValueError("departure_date")
        except (KeyError, ValueError, TypeError, ArithmeticError) as exc:
            return answers.invalid({str(exc.args[0]) if exc.args else "booking": ["is invalid"]})
        revision = state.bookings.new(stay, clock.now())
        return answers.json_answer({"data": {"type": "booking_revision", "id": revision["id"],
                                             "attributes": revision}}, 201)

    @app.post("/_sandbox/ota-bookings/<code>/modify")
    async def ota_modify(code: str) -> Response:
        """The OTA changes a booking it sold (by its reservation code): any of arrival_date,
        departure_date, adults, children, amount, customer, room_type_id, rate_plan_id,
        arrival_hour, notes; a `modified` revision follows."""
        if code not in state.bookings.codes:
            return answers.not_found()
        given = await wanted()
        stay = state.bookings.stays[state.bookings.codes[code]]
        try:
            changes: StayChange = {}
            if "arrival_date" in given:
                changes["arrival"] = date.fromisoformat(str(given["arrival_date"]))
            if "departure_date" in given:
                changes["departure"] = date.fromisoformat(str(given["departure_date"]))
            if "adults" in given:
                changes["adults"] = _count(given["adults"], 1)
            if "children" in given:
                changes["children"] = _count(given["children"], 0)
            if "amount" in given:
                changes["amount"] = _amount(given["amount"])
            if isinstance(given.get("customer"), dict):
                changes["guest"] = _guest(given["customer"])
            for name in ("room_type_id", "rate_plan_id"):
                if name in given:
                    changes[name] = str(given[name])
            for text_name in REVISION_FIELDS:
                if text_name in given:
                    changes[text_name] = _text(given[text_name])
            if changes.get("departure", stay.departure) <= changes.get("arrival", stay.arrival):
                raise ValueError("departure_date")
        except (ValueError, TypeError, ArithmeticError) as exc:
            return answers.invalid({str(exc.args[0]) if exc.args else "booking": ["is invalid"]})
        revision = state.bookings.modify(code, changes, clock.now())
        return answers.json_answer({"data": {"type": "booking_revision", "id": revision["id"],
                                             "attributes": revision}}, 201)

    @app.post("/_sandbox/ota-bookings/<code>/cancel")
    async def ota_cancel(code: str) -> Response:
        """The OTA cancels a booking it sold (by its reservation code): a `cancelled` revision.
        With `fee` ("76.50"), what the guest still owes: the revision's amount, and a
        "Cancellation Fee" service, as Booking.com's cancellation in the docs."""
        if code not in state.bookings.codes:
            return answers.not_found()
        given = await wanted()
        try:
            fee = _amount(given["fee"]) if given.get("fee") is not None else None
        except ValueError:
            return answers.invalid({"fee": ["is invalid"]})
        revision = state.bookings.cancel(code, clock.now(), fee)
        return answers.json_answer({"data": {"type": "booking_revision", "id": revision["id"],
                                             "attributes": revision}}, 201)


def _guest(customer: Any) -> Guest:
    """The guest of a `customer` as sent (an object, or what dict() takes for one). Its
    values are not checked: whatever JSON they are, the revision's `customer` repeats them."""
    given = dict(customer)
    guest: Guest = {}
    for name in GUEST_FIELDS:
        if name in given:
            guest[name] = given[name]
    return guest


def _count(raw: Any, least: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < least:
        raise ValueError("adults" if least else "children")
    return raw


def _amount(raw: Any) -> Decimal:
    try:
        amount = Decimal(str(raw))
    except InvalidOperation:
        raise ValueError("amount") from None
    if not amount.is_finite() or amount < 0:
        raise ValueError("amount")
    return amount


def _text(raw: Any) -> str | None:
    return None if raw is None else str(raw)
