"""The sandbox channel manager over HTTP: a Channex-style API, plus control routes for us.

Channex-style routes (auth: `user-api-key`): POST /api/v1/properties, /room_types,
/rate_plans; POST and GET /api/v1/availability and /api/v1/restrictions; the booking
revision feed (paged: `pagination[page]`, `pagination[limit]`, `meta.total`), one
revision, and its acknowledgement. Control routes (same key): GET /_sandbox/stats,
POST /_sandbox/faults, GET /_sandbox/grid (what a property holds, outside the read budget),
POST /_sandbox/ota-bookings (an OTA sells a stay) and /_sandbox/ota-bookings/{code}/modify
and /cancel.
Order for every Channex-style call: key, armed fault, budget, work.

Faults: `429` and `500` answer so; `timeout` holds the call for an hour; `malformed`
answers 200 with an HTML page (content type text/html); `reset` closes the connection
without an answer. Hypercorn answers 500 itself for an app that ends without starting a
response, so `reset` is done by `sandbox_asgi_app`'s wrapper (see DropConnections).
"""

from __future__ import annotations

import hmac
import json
import uuid
from datetime import date
from decimal import Decimal
from typing import Any

import trio
from hypercorn.typing import (ASGIReceiveCallable, ASGISendCallable, ASGISendEvent, HTTPResponseStartEvent,
                              Scope)
from quart import Response, request
from quart_trio import QuartTrio

from ...engine import Clock
from .bookings import Stay
from .state import FAULT_MODES, SandboxState, Throttle

HANG_SECONDS = 3600.0  # a "timeout" fault holds the call this long (the client gives up first)
# Channex pages its lists: the first 10 unless asked, at most 100 a page (API reference, Pagination).
FEED_DEFAULT_LIMIT = 10
FEED_MAX_LIMIT = 100
# A response carrying this header is never sent: DropConnections closes the connection instead.
DROP_CONNECTION_HEADER = "x-sandbox-drop-connection"
MALFORMED_PAGE = ("<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>"
                  "<body><h1>Bad Gateway</h1><p>The upstream server sent an invalid response.</p></body></html>\n")


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json", headers=headers or {})


def _error(status: int, code: str, title: str, headers: dict[str, str] | None = None) -> Response:
    return _json({"errors": {"code": code, "title": title}}, status, headers)


def _throttled(retry_after: int | None) -> Response:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return _error(429, "http_too_many_requests", "Too many requests", headers)


def create_sandbox_app(state: SandboxState, api_key: str, clock: Clock) -> QuartTrio:
    app = QuartTrio("connectapi-sandbox-cm")
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False

    def authorised() -> bool:
        given = request.headers.get("user-api-key", "")
        return hmac.compare_digest(given.encode(), api_key.encode())

    async def gate(budgets: list[tuple[str, str]], faults: bool = True) -> Response | None:
        """Key, then an armed fault, then the budget; None lets the call through. Faults are
        armed for the ARI calls; the booking feed is left out so that a test arming one for
        a push is never robbed of it by the intake's round."""
        if not authorised():
            return _error(401, "unauthorized", "Unauthorized")
        mode, retry_after = state.faults.take() if faults else ("ok", None)
        if mode == "429":
            state.stats.throttled += 1
            return _throttled(retry_after)
        if mode == "500":
            state.stats.failed += 1
            return _error(500, "internal_server_error", "Internal server error")
        if mode == "timeout":
            state.stats.failed += 1
            await trio.sleep(HANG_SECONDS)
        if mode == "malformed":
            # A 200 that is not the JSON asked for: what a proxy's error page looks like.
            state.stats.failed += 1
            return Response(MALFORMED_PAGE, status=200, content_type="text/html; charset=utf-8")
        if mode == "reset":
            state.stats.failed += 1
            return Response("", status=200, headers={DROP_CONNECTION_HEADER: "1"})
        throttle = state.admit(clock.monotonic(), budgets)
        if isinstance(throttle, Throttle):
            return _throttled(throttle.retry_after)
        return None

    async def body() -> dict[str, Any]:
        try:
            parsed = json.loads(await request.get_data(as_text=True))
        except json.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}

    def created(kind: str, ident: str, attributes: dict[str, Any]) -> Response:
        return _json({"data": {"type": kind, "id": ident, "attributes": attributes}}, 201)

    @app.post("/api/v1/properties")
    async def create_property() -> Response:
        refused = await gate([])
        if refused:
            return refused
        attrs = (await body()).get("property", {})
        try:
            pid = state.create_property(str(attrs["title"]), str(attrs["currency"]))
        except KeyError:
            return _error(422, "validation_error", "title and a known currency are required")
        return created("property", pid, attrs)

    @app.post("/api/v1/room_types")
    async def create_room_type() -> Response:
        refused = await gate([])
        if refused:
            return refused
        attrs = (await body()).get("room_type", {})
        try:
            rid = state.create_room_type(str(attrs["property_id"]), str(attrs["title"]),
                                         int(attrs.get("count_of_rooms", 0)))
        except (KeyError, ValueError):
            return _error(422, "validation_error", "property_id and title are required")
        return created("room_type", rid, attrs)

    @app.post("/api/v1/rate_plans")
    async def create_rate_plan() -> Response:
        refused = await gate([])
        if refused:
            return refused
        attrs = (await body()).get("rate_plan", {})
        try:
            rid = state.create_rate_plan(str(attrs["property_id"]), str(attrs["room_type_id"]), str(attrs["title"]))
        except KeyError:
            return _error(422, "validation_error", "property_id, room_type_id and title are required")
        return created("rate_plan", rid, attrs)

    async def push(kind: str) -> Response:
        values = (await body()).get("values")
        if not isinstance(values, list):
            return _error(422, "validation_error", "values must be a list")
        properties = sorted({str(v.get("property_id")) for v in values if isinstance(v, dict)})
        refused = await gate([(kind, pid) for pid in properties])
        if refused:
            return refused
        if any(state.open_pushes[pid] for pid in properties):
            state.stats.overlapping_calls += 1
        state.open_pushes.update(properties)
        try:
            if state.call_seconds:
                await trio.sleep(state.call_seconds)
        finally:
            state.open_pushes.subtract(properties)
        if kind == "availability":
            state.stats.availability_calls += 1
            warnings = state.apply_availability([v for v in values if isinstance(v, dict)])
        else:
            state.stats.restriction_calls += 1
            warnings = state.apply_restrictions([v for v in values if isinstance(v, dict)])
        return _json({"data": [{"id": str(uuid.uuid4()), "type": "task"}],
                      "meta": {"message": "Success", "warnings": warnings}})

    @app.post("/api/v1/availability")
    async def push_availability() -> Response:
        return await push("availability")

    @app.post("/api/v1/restrictions")
    async def push_restrictions() -> Response:
        return await push("restrictions")

    async def read(kind: str) -> Response:
        refused = await gate([("reads", "account")])
        if refused:
            return refused
        state.stats.read_calls += 1
        args = request.args
        try:
            pid = args["filter[property_id]"]
            first = date.fromisoformat(args["filter[date][gte]"])
            last = date.fromisoformat(args["filter[date][lte]"])
            if kind == "availability":
                return _json({"data": state.read_availability(pid, first, last)})
            return _json({"data": state.read_restrictions(pid, first, last)})
        except (KeyError, ValueError):
            return _error(422, "validation_error", "filter[property_id] and a date range are required")

    @app.get("/api/v1/availability")
    async def read_availability() -> Response:
        return await read("availability")

    @app.get("/api/v1/restrictions")
    async def read_restrictions() -> Response:
        return await read("restrictions")

    @app.get("/api/v1/booking_revisions/feed")
    async def booking_feed() -> Response:
        refused = await gate([], faults=False)
        if refused:
            return refused
        try:
            page = int(request.args.get("pagination[page]", "1"))
            limit = int(request.args.get("pagination[limit]", str(FEED_DEFAULT_LIMIT)))
        except ValueError:
            return _error(422, "validation_error", "pagination[page] and pagination[limit] are whole numbers")
        if page < 1 or limit < 1:
            return _error(422, "validation_error", "pagination counts from 1")
        limit = min(limit, FEED_MAX_LIMIT)
        state.stats.feed_reads += 1
        revisions = state.bookings.feed(request.args.get("filter[property_id]"))
        shown = revisions[(page - 1) * limit:page * limit]
        return _json({"data": [{"type": "booking_revision", "id": r["id"], "attributes": r} for r in shown],
                      "meta": {"page": page, "limit": limit, "total": len(revisions)}})

    @app.get("/api/v1/booking_revisions/<revision_id>")
    async def booking_revision(revision_id: str) -> Response:
        refused = await gate([], faults=False)
        if refused:
            return refused
        found = state.bookings.revisions.get(revision_id)
        if found is None:
            return _error(404, "resource_not_found", "no such booking revision")
        return _json({"data": {"type": "booking_revision", "id": revision_id, "attributes": found}})

    @app.post("/api/v1/booking_revisions/<revision_id>/ack")
    async def ack_booking_revision(revision_id: str) -> Response:
        refused = await gate([], faults=False)
        if refused:
            return refused
        repeated = revision_id in state.bookings.acked
        if not state.bookings.ack(revision_id):
            return _error(404, "resource_not_found", "no such booking revision")
        state.stats.acks += 1
        state.stats.acks_repeated += repeated
        return _json({"meta": {"message": "Success"}})

    @app.get("/_sandbox/stats")
    async def stats() -> Response:
        if not authorised():
            return _error(401, "unauthorized", "Unauthorized")
        return _json({"stats": state.stats.view()})

    @app.get("/_sandbox/grid")
    async def grid() -> Response:
        """A property's availability and restrictions, as the reads answer them but outside the
        account's read budget: for tests and benches comparing the grid with the record
        while the service spends that budget."""
        if not authorised():
            return _error(401, "unauthorized", "Unauthorized")
        args = request.args
        try:
            pid = args["filter[property_id]"]
            first = date.fromisoformat(args["filter[date][gte]"])
            last = date.fromisoformat(args["filter[date][lte]"])
            return _json({"data": {"availability": state.read_availability(pid, first, last),
                                   "restrictions": state.read_restrictions(pid, first, last)}})
        except (KeyError, ValueError):
            return _error(422, "validation_error", "filter[property_id] and a date range are required")

    @app.post("/_sandbox/faults")
    async def faults() -> Response:
        if not authorised():
            return _error(401, "unauthorized", "Unauthorized")
        wanted = await body()
        mode = wanted.get("mode")
        count = wanted.get("count", 1)
        retry_after = wanted.get("retryAfter")
        if mode not in FAULT_MODES or isinstance(count, bool) or not isinstance(count, int) or count < 0 or (
                retry_after is not None and (isinstance(retry_after, bool) or not isinstance(retry_after, int)
                                             or retry_after < 0)):
            return _error(422, "validation_error", f"mode {'|'.join(FAULT_MODES)}, count >= 0, retryAfter >= 0")
        state.faults.mode, state.faults.remaining, state.faults.retry_after = mode, count, retry_after
        return _json({"faults": {"mode": mode, "count": count, "retryAfter": retry_after}})

    @app.post("/_sandbox/ota-bookings")
    async def ota_booking() -> Response:
        """An OTA sells a stay, in the channel manager's own ids (the standalone sandbox's
        way to make one; the service's admin route does it in the property's ids)."""
        if not authorised():
            return _error(401, "unauthorized", "Unauthorized")
        wanted = await body()
        try:
            prop = state.properties[str(wanted["property_id"])]
            stay = Stay(prop.id, str(wanted["room_type_id"]), str(wanted["rate_plan_id"]),
                        date.fromisoformat(str(wanted["arrival_date"])),
                        date.fromisoformat(str(wanted["departure_date"])), int(wanted.get("adults", 2)),
                        int(wanted.get("children", 0)), dict(wanted.get("customer") or {"name": "Guest"}),
                        Decimal(str(wanted["amount"])), prop.currency, str(wanted.get("ota_name", "BookingCom")))
        except (KeyError, ValueError, TypeError, ArithmeticError):
            return _error(422, "validation_error",
                          "property_id, room_type_id, rate_plan_id, arrival_date, departure_date, amount")
        revision = state.bookings.new(stay, clock.now())
        return _json({"data": {"type": "booking_revision", "id": revision["id"], "attributes": revision}}, 201)

    @app.post("/_sandbox/ota-bookings/<code>/modify")
    async def ota_modify(code: str) -> Response:
        """The OTA changes a booking it sold (by its reservation code): any of
        `departure_date`, `adults`, `amount`; a `modified` revision follows."""
        if not authorised():
            return _error(401, "unauthorized", "Unauthorized")
        if code not in state.bookings.codes:
            return _error(404, "resource_not_found", "no such OTA booking")
        wanted = await body()
        stay = state.bookings.stays[state.bookings.codes[code]]
        try:
            changes: dict[str, Any] = {}
            if "departure_date" in wanted:
                changes["departure"] = date.fromisoformat(str(wanted["departure_date"]))
            if "adults" in wanted:
                changes["adults"] = int(wanted["adults"])
            if "amount" in wanted:
                changes["amount"] = Decimal(str(wanted["amount"]))
            if changes.get("departure", stay.departure) <= stay.arrival:
                raise ValueError("departure_date")
        except (ValueError, TypeError, ArithmeticError):
            return _error(422, "validation_error", "departure_date after the arrival, adults, amount")
        revision = state.bookings.modify(code, changes, clock.now())
        return _json({"data": {"type": "booking_revision", "id": revision["id"], "attributes": revision}}, 201)

    @app.post("/_sandbox/ota-bookings/<code>/cancel")
    async def ota_cancel(code: str) -> Response:
        """The OTA cancels a booking it sold (by its reservation code): a `cancelled` revision."""
        if not authorised():
            return _error(401, "unauthorized", "Unauthorized")
        if code not in state.bookings.codes:
            return _error(404, "resource_not_found", "no such OTA booking")
        revision = state.bookings.cancel(code, clock.now())
        return _json({"data": {"type": "booking_revision", "id": revision["id"], "attributes": revision}}, 201)

    return app


class DropConnections:
    """An ASGI wrapper: a response marked with DROP_CONNECTION_HEADER is never sent, and the
    connection is closed without an answer.

    Hypercorn (0.18) answers 500 on its own when an app ends without starting a response,
    and writes a response's status line as soon as the app starts it; the one way an app
    can end an exchange with no final answer is to start an interim one (1xx) and stop:
    hypercorn writes the `100 Continue`, which HTTP clients read past while waiting for
    the answer (RFC 9110, 15.2), and, the response left unfinished, closes the
    connection. A client sees the server hang up without an answer (httpx:
    RemoteProtocolError "Server disconnected without sending a response.").
    """

    def __init__(self, app: QuartTrio) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        dropping = False

        async def send_or_drop(message: ASGISendEvent) -> None:
            nonlocal dropping
            if message["type"] == "http.response.start" and any(
                    name.lower() == DROP_CONNECTION_HEADER.encode() for name, _ in message.get("headers", ())):
                dropping = True
                interim: HTTPResponseStartEvent = {"type": "http.response.start", "status": 100, "headers": [],
                                                   "trailers": False}
                await send(interim)
            elif not dropping:
                await send(message)

        await self.app(scope, receive, send_or_drop)


def sandbox_asgi_app(state: SandboxState, api_key: str, clock: Clock) -> DropConnections:
    """The sandbox as hypercorn serves it: the app, able to drop a connection (fault `reset`)."""
    return DropConnections(create_sandbox_app(state, api_key, clock))
